import type { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayRequestAuthorizerEventV2 } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import { awsClientEnvironment, type Environment } from '../adapters/explicitEnvironment.js';
import { type LambdaEntry, lambdaEntry } from '../adapters/lambdaEntry.js';
import { loadResourceNames } from '../core/config.js';
import { lookupApiKey } from '../keys/apiKeys.js';
import { type AuthorizerResult, createAuthorizerHandler } from './createAuthorizerHandler.js';

/** The authorizer once wired: one request authorizer event in, one simple response out. */
export type AuthorizerHandler = (event: APIGatewayRequestAuthorizerEventV2) => Promise<AuthorizerResult>;

/** The authorizer's Lambda entry (lambdas/adapters/lambdaEntry.ts). */
export type AuthorizerEntry = LambdaEntry<APIGatewayRequestAuthorizerEventV2, AuthorizerResult>;

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

/** The authorizer Lambda for one environment; the local stack runs one per stack with the stack's own. */
export const authorizerEntry: (env: Environment) => AuthorizerEntry = lambdaEntry({
  name: 'authorizer',
  wire: (env, { logger }) => wireAuthorizer(env, logger),
});

/** The Lambda authorizer: payload format 2.0, simple responses, context `{ tenant, key_id }`. */
export const handler = authorizerEntry(process.env);
