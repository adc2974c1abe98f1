import { randomInt } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import { awsClientEnvironment, type Environment } from '../adapters/explicitEnvironment.js';
import { lambdaEntry } from '../adapters/lambdaEntry.js';
import { createNodeWebhookHttp } from '../adapters/nodeWebhookHttp.js';
import { SqsCopyVisibility } from '../adapters/SqsCopyVisibility.js';
import { SqsWebhookQueue } from '../adapters/SqsWebhookQueue.js';
import { configTargetOf, loadConfig, loadResourceNames, requireResource } from '../core/config.js';
import type { WebhookMetric } from '../core/metricNames.js';
import type { Log } from '../ports/Log.js';
import { DynamoWebhookStore } from '../store/webhookStore.js';
import { createWebhookDeliveryHandler } from './createWebhookDeliveryHandler.js';

export type WebhookBatchHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;

/**
 * Wires the delivery function from `env` (once per cold start); a bad configuration fails here,
 * naming the variable. `count` publishes a metric (EMF in AWS; the local stack logs nothing).
 * `retryBaseMs`: the local stack's test-only compression of the retry backoff (Lambda passes none).
 */
export function wireWebhookDelivery(
  env: Environment,
  log: Log,
  count?: (metric: WebhookMetric) => void,
  retryBaseMs?: number,
): WebhookBatchHandler {
  const config = loadConfig(env, configTargetOf(env));
  const names = loadResourceNames(env);
  const documents = DynamoDBDocumentClient.from(
    new DynamoDBClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'DYNAMODB') }),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  const sqs = new SQSClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'SQS') });
  const queueUrl = requireResource(names, 'webhookQueueUrl', 'POSTDATE_WEBHOOK_QUEUE_URL');
  const queue = new SqsWebhookQueue(sqs, queueUrl);
  return createWebhookDeliveryHandler({
    store: new DynamoWebhookStore(documents, names.tableName),
    queue,
    http: createNodeWebhookHttp({ policy: config.webhookAllowPrivateUrls ? 'local' : 'public-https' }),
    now: () => new Date(),
    random: () => randomInt(2 ** 47) / 2 ** 47,
    retryHours: config.webhookRetryHours,
    ...(retryBaseMs === undefined ? {} : { retryBaseMs }),
    visibility: new SqsCopyVisibility(sqs, queueUrl),
    log,
    ...(count ? { count } : {}),
  });
}

/** The webhook delivery Lambda: SQS event source with ReportBatchItemFailures; EMF metrics per invocation. */
export const handler = lambdaEntry({
  name: 'webhooks',
  metrics: true,
  wire: (env, { logger, count }) => wireWebhookDelivery(env, logger, (metric) => count(metric, 1)),
})(process.env);
