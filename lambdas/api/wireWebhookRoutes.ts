import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SqsWebhookQueue } from '../adapters/SqsWebhookQueue.js';
import { checkWebhookUrl } from '../adapters/webhookAddressPolicy.js';
import type { Config, ResourceNames } from '../core/config.js';
import { DynamoWebhookStore } from '../store/webhookStore.js';
import type { WebhookRouteDependencies } from './routes/webhooks.js';

/**
 * The webhook routes' real store and queue, when the stack has a webhook queue
 * (`POSTDATE_WEBHOOK_QUEUE_URL`); without one the routes answer 404.
 */
export function wireWebhookRoutes(wiring: {
  readonly config: Config;
  readonly names: ResourceNames;
  readonly documents: DynamoDBDocumentClient;
  /** The api's one SQS client (it also carries the api's immediate copies). */
  readonly sqs: SQSClient;
  readonly random: () => number;
}): WebhookRouteDependencies | undefined {
  const queueUrl = wiring.names.webhookQueueUrl;
  if (queueUrl === undefined) return undefined;
  const policy = wiring.config.webhookAllowPrivateUrls ? 'local' : 'public-https';
  return {
    store: new DynamoWebhookStore(wiring.documents, wiring.names.tableName),
    queue: new SqsWebhookQueue(wiring.sqs, queueUrl),
    checkUrl: (url) => checkWebhookUrl(url, policy),
    retryHours: wiring.config.webhookRetryHours,
    retentionDays: wiring.config.retentionDays,
    now: () => new Date(),
    random: wiring.random,
  };
}
