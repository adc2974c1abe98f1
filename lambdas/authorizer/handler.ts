import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayRequestAuthorizerEventV2, Context } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import {
  awsClientEnvironment,
  type Environment,
  loggerEnvironment,
} from '../adapters/explicitEnvironment.js';
import { lambdaMiddy } from '../adapters/lambdaMiddy.js';
import { loadResourceNames } from '../core/config.js';
import { lookupApiKey } from '../keys/apiKeys.js';
import { type AuthorizerResult, createAuthorizerHandler } from './createAuthorizerHandler.js';

/** The authorizer once wired: one request authorizer event in, one simple response out. */
export type AuthorizerHandler = (event: APIGatewayRequestAuthorizerEventV2) => Promise<AuthorizerResult>;

/** The authorizer's Lambda entry: the middy handler with its Powertools middlewares. */
export type AuthorizerEntry = (
  event: APIGatewayRequestAuthorizerEventV2,
  context: Context,
) => Promise<AuthorizerResult>;

/** Wires the DynamoDB client from `env` (what the entry does once per cold start). */
export function wireAuthorizer(env: Environment, logger: Logger): AuthorizerHandler {
  const { tableName } = loadResourceNames(env);
  // The endpoint comes from AWS_ENDPOINT_URL_DYNAMODB when set (the local stack).
  const client = new DynamoDBClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'DYNAMODB') });
  const documents = DynamoDBDocumentClient.from(client);
  return createAuthorizerHandler({
    lookup: (secret) => lookupApiKey(documents, tableName, secret),
    now: () => new Date(),
    logger,
  });
}

/**
 * The authorizer Lambda for one environment: its logger and middlewares, wired from `env` on the
 * first invocation and then reused. The deployed `handler` is this for `process.env`; the local
 * stack runs one per stack with the stack's own environment.
 */
export function authorizerEntry(env: Environment): AuthorizerEntry {
  const logger = new Logger({ serviceName: 'postdate-authorizer', ...loggerEnvironment(env) });
  let authorize: AuthorizerHandler | undefined;
  return lambdaMiddy<APIGatewayRequestAuthorizerEventV2, AuthorizerResult>()
    .use(injectLambdaContext(logger))
    .handler(async (event) => {
      authorize ??= wireAuthorizer(env, logger);
      return authorize(event);
    });
}

/** The Lambda authorizer: payload format 2.0, simple responses, context `{ tenant, key_id }`. */
export const handler = authorizerEntry(process.env);
