import { randomInt } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import { awsClientOptions } from '../adapters/awsClients.js';
import { configTargetOf, loadConfig, loadResourceNames } from '../core/config.js';
import { DynamoApiStore } from '../store/apiStore.js';
import { type ApiEvent, type ApiResult, createApiHandler } from './createApiHandler.js';

const logger = new Logger({ serviceName: 'postdate-api' });

let api: ((event: ApiEvent) => Promise<ApiResult>) | undefined;

/** Wires the real clients once per cold start; a bad configuration fails here, naming the variable. */
function wire(): (event: ApiEvent) => Promise<ApiResult> {
  const env = process.env;
  const config = loadConfig(env, configTargetOf(env));
  const names = loadResourceNames(env);
  // The endpoint comes from AWS_ENDPOINT_URL_DYNAMODB when set (the local stack).
  const documents = DynamoDBDocumentClient.from(new DynamoDBClient(awsClientOptions()), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return createApiHandler({
    store: new DynamoApiStore(documents, names.tableName),
    config,
    now: () => new Date(),
    // Message ids take their random part from here: a CSPRNG, not Math.random.
    random: () => randomInt(2 ** 47) / 2 ** 47,
    logger,
  });
}

/** The api Lambda: API Gateway HTTP API (payload 2.0) behind the Lambda authorizer. */
export const handler = middy<ApiEvent, ApiResult>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    api ??= wire();
    return api(event);
  });
