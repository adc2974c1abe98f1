/**
 * What the api handler receives and answers: API Gateway HTTP API payload 2.0 behind the Lambda
 * authorizer, and a structured result. The tenant comes only from the authorizer's context.
 */
import type {
  APIGatewayProxyEventV2WithLambdaAuthorizer,
  APIGatewayProxyStructuredResultV2,
} from 'aws-lambda';
import type { AuthorizerContext } from '../core/authorizerContext.js';
import { TENANT_PATTERN } from '../core/identifiers.js';

export type { AuthorizerContext } from '../core/authorizerContext.js';

/** The request, with what the Lambda authorizer put in `requestContext.authorizer.lambda`. */
export type ApiEvent = APIGatewayProxyEventV2WithLambdaAuthorizer<AuthorizerContext>;
export type ApiResult = APIGatewayProxyStructuredResultV2;

/** The tenant from the authorizer's context, or null when absent or malformed. */
export function tenantOf(event: ApiEvent): string | null {
  const context: Partial<AuthorizerContext> | undefined = event.requestContext?.authorizer?.lambda;
  const tenant = context?.tenant;
  return typeof tenant === 'string' && TENANT_PATTERN.test(tenant) ? tenant : null;
}
