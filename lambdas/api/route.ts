/**
 * One route of the HTTP API, in and out: what the api handler receives (API Gateway HTTP API payload
 * 2.0 behind the Lambda authorizer; the tenant comes only from the authorizer's context), what a
 * route is (a factory over the dependencies it needs, answering one matched request), and what it
 * answers (the HTTP response and the safe attributes for the request's log line). Every error is
 * `application/problem+json` (core/problem.ts); every answer is `cache-control: no-store`. The
 * router (createApiHandler.ts) resolves the route, checks the tenant, logs the answer and turns a
 * thrown error into a problem.
 */
import type {
  APIGatewayProxyEventV2WithLambdaAuthorizer,
  APIGatewayProxyStructuredResultV2,
} from 'aws-lambda';
import type { AuthorizerContext } from '../core/authorizerContext.js';
import type { Config } from '../core/config.js';
import { TENANT_PATTERN } from '../core/identifiers.js';
import { PROBLEM_CONTENT_TYPE, type ProblemDetails, problem } from '../core/problem.js';
import type { TemplateRenderer } from '../core/templateRenderer.js';
import type { ApiStore, TransitionResult } from '../ports/ApiStore.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { TemplateStore } from '../ports/TemplateStore.js';
import { messageView } from '../store/messageView.js';
import type { WebhookRouteDependencies } from './routes/webhooks.js';

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

/** The settings the routes read. */
export type ApiConfig = Pick<Config, 'allowedFrom' | 'defaultFrom' | 'maxHorizonDays' | 'retentionDays'>;

export interface RouteDependencies {
  readonly store: ApiStore;
  /** Stored templates (DESIGN §10), and their renderer with its compiled-version cache. */
  readonly templates: TemplateStore;
  readonly renderer: TemplateRenderer;
  readonly config: ApiConfig;
  readonly now: () => Date;
  readonly random: () => number;
  /** Waits between enqueue attempts after a contended transaction. */
  readonly sleep: (milliseconds: number) => Promise<void>;
  readonly webhooks?: WebhookRouteDependencies | undefined;
  /** The send queue, for the api's own copy of an immediate message (api/immediateCopy.ts). */
  readonly immediateCopies?: DispatchQueue | undefined;
}

export interface RouteRequest {
  /** The authorizer's tenant ('' on a public route). */
  readonly tenant: string;
  /** The path parameters of the matched route, decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly event: ApiEvent;
}

export type RouteHandler = (request: RouteRequest) => Promise<Outcome>;

export interface Outcome {
  readonly statusCode: number;
  readonly response: ApiResult;
  /** Safe attributes for the request's log line. */
  readonly log: Readonly<Record<string, unknown>>;
}

const COMMON_HEADERS = { 'cache-control': 'no-store' } as const;

export function rawJsonResult(statusCode: number, body: string): Outcome {
  return {
    statusCode,
    response: { statusCode, headers: { ...COMMON_HEADERS, 'content-type': 'application/json' }, body },
    log: {},
  };
}

export function jsonResult(
  statusCode: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
  log: Readonly<Record<string, unknown>> = {},
): Outcome {
  return {
    statusCode,
    response: {
      statusCode,
      headers: { ...COMMON_HEADERS, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    },
    log,
  };
}

export function problemResult(
  details: ProblemDetails,
  headers: Readonly<Record<string, string>> = {},
  log: Readonly<Record<string, unknown>> = {},
): Outcome {
  return {
    statusCode: details.status,
    response: {
      statusCode: details.status,
      headers: { ...COMMON_HEADERS, 'content-type': PROBLEM_CONTENT_TYPE, ...headers },
      body: JSON.stringify(details),
    },
    // Problem types and field names are safe to log; details and messages never echo values either.
    log: { ...log, problem: details.type, fields: details.errors?.map((error) => error.field) },
  };
}

export function notFound(): Outcome {
  return problemResult(
    problem('notFound', 'No message with this id.', { errors: [{ field: 'id', message: 'not found' }] }),
  );
}

export function transitionResult(result: TransitionResult, okStatus: number, verb: string): Outcome {
  switch (result.kind) {
    case 'updated':
      return jsonResult(
        okStatus,
        messageView(result.state, { withHistory: false }),
        {},
        {
          message_id: result.state.id,
          message_status: result.state.status,
        },
      );
    case 'not-found':
      return notFound();
    case 'conflict':
    case 'past-deadline':
      return problemResult(
        problem('conflict', `The message is ${result.current.status}; it cannot be ${verb} now.`, {
          extensions: { current_status: result.current.status },
        }),
        {},
        { message_id: result.current.id, message_status: result.current.status },
      );
  }
}
