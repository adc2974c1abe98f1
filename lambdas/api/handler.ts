import { randomInt } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsClientOptions } from '../adapters/awsClients.js';
import { awsClientEnvironment, type Environment } from '../adapters/explicitEnvironment.js';
import { lazyS3AttachmentStore } from '../adapters/LazyS3AttachmentStore.js';
import { type LambdaEntry, lambdaEntry } from '../adapters/lambdaEntry.js';
import { SqsDispatchQueue } from '../adapters/SqsDispatchQueue.js';
import { configTargetOf, loadConfig, loadResourceNames, requireResource } from '../core/config.js';
import { DynamoApiStore } from '../store/apiStore.js';
import { DynamoTemplateStore } from '../store/templateStore.js';
import { type ApiEvent, type ApiResult, createApiHandler } from './createApiHandler.js';
import { wireWebhookRoutes } from './routes/webhooks.js';

/** The api function once wired: one API Gateway event in, one response out. */
export type ApiHandler = (event: ApiEvent) => Promise<ApiResult>;

/** The api's Lambda entry (lambdas/adapters/lambdaEntry.ts). */
export type ApiEntry = LambdaEntry<ApiEvent, ApiResult>;

/**
 * Wires the real clients from `env` (what the entry does once per cold start); a bad configuration
 * fails here, naming the variable.
 */
export function wireApi(env: Environment, logger: Logger): ApiHandler {
  const config = loadConfig(env, configTargetOf(env));
  const names = loadResourceNames(env);
  // The endpoint comes from AWS_ENDPOINT_URL_DYNAMODB when set (the local stack).
  const client = new DynamoDBClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'DYNAMODB') });
  const documents = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
  });
  // Message ids take their random part from here: a CSPRNG, not Math.random.
  const random = () => randomInt(2 ** 47) / 2 ** 47;
  // One SQS client for the webhook routes and the immediate copies; its endpoint comes from
  // AWS_ENDPOINT_URL_SQS when set (the local stack). Constructing it makes no request.
  const sqs = new SQSClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'SQS') });
  const webhooks = wireWebhookRoutes({ config, names, documents, sqs, random });
  const immediateCopies = config.apiImmediateCopy
    ? new SqsDispatchQueue(sqs, requireResource(names, 'sendQueueUrl', 'POSTDATE_SEND_QUEUE_URL'))
    : undefined;
  // The attachments' bucket (DESIGN §13); path-style against the local emulator (POSTDATE_S3_ENDPOINT).
  // The S3 client loads with the first attachment (decision 0114).
  const attachments =
    names.attachmentBucket === undefined
      ? undefined
      : lazyS3AttachmentStore({
          bucket: names.attachmentBucket,
          endpoint: names.attachmentEndpoint,
          config: awsClientEnvironment(env, 'S3'),
        });
  return createApiHandler({
    store: new DynamoApiStore(documents, names.tableName, {
      groupHeadReplicas: config.groupHeadReplicas,
      random,
    }),
    templates: new DynamoTemplateStore(documents, names.tableName),
    config,
    now: () => new Date(),
    random,
    logger,
    ...(webhooks ? { webhooks } : {}),
    ...(immediateCopies ? { immediateCopies } : {}),
    ...(attachments ? { attachments } : {}),
  });
}

/** The api Lambda for one environment; the local stack runs one per stack with the stack's own. */
export const apiEntry: (env: Environment) => ApiEntry = lambdaEntry({
  name: 'api',
  wire: (env, { logger }) => wireApi(env, logger),
});

/** The api Lambda: API Gateway HTTP API (payload 2.0) behind the Lambda authorizer. */
export const handler = apiEntry(process.env);
