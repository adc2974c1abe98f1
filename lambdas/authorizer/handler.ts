import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import type { APIGatewayRequestAuthorizerEventV2 } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import { loadResourceNames } from '../core/config.js';
import { lookupApiKey } from '../keys/apiKeys.js';
import { type AuthorizerResult, createAuthorizerHandler } from './createAuthorizerHandler.js';

const logger = new Logger({ serviceName: 'postdate-authorizer' });

let authorize: ((event: APIGatewayRequestAuthorizerEventV2) => Promise<AuthorizerResult>) | undefined;

/** Wires the DynamoDB client once per cold start (the endpoint from AWS_ENDPOINT_URL_DYNAMODB locally). */
function wire(): (event: APIGatewayRequestAuthorizerEventV2) => Promise<AuthorizerResult> {
  const { tableName } = loadResourceNames(process.env);
  const documents = DynamoDBDocumentClient.from(new DynamoDBClient(awsClientOptions()));
  return createAuthorizerHandler({
    lookup: (secret) => lookupApiKey(documents, tableName, secret),
    now: () => new Date(),
    logger,
  });
}

/** The Lambda authorizer: payload format 2.0, simple responses, context `{ tenant, key_id }`. */
export const handler = middy<APIGatewayRequestAuthorizerEventV2, AuthorizerResult>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    authorize ??= wire();
    return authorize(event);
  });
