import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SqsWebhookQueue } from '../lambdas/adapters/SqsWebhookQueue.js';
import { loadResourceNames } from '../lambdas/core/config.js';
import { wireEvents } from '../lambdas/events/handler.js';
import type { Log } from '../lambdas/ports/Log.js';
import { wireWebhookDelivery } from '../lambdas/webhooks/handler.js';
import { EVENTS_STREAM } from '../lib/eventSourceLayout.js';
import { EVENTS_STREAM_FILTER, WEBHOOK_DELIVERY, WEBHOOK_QUEUE } from '../lib/webhookLayout.js';
import { type SqsRunner, startSqsRunner } from './runners/sqsRunner.js';
import { type StreamDiscard, type StreamRunner, startStreamRunner } from './runners/streamRunner.js';
import { requeuePendingDeliveries } from './webhookRecovery.js';

/**
 * Events and webhooks on the local stack (DESIGN §11): the event producer behind the table's stream
 * (a second stream runner beside the relay's, with its own filter) and the delivery function behind
 * the webhook queue. Both run in this process, wired from the stack's function environment; the
 * local stack has no EventBridge bus (local/EMULATORS.md).
 */

/** Creates the webhook queue and its DLQ as the construct does (lib/webhookLayout.ts). */
export async function createWebhookQueue(
  sqs: SQSClient,
  prefix: string,
): Promise<{ url: string; arn: string }> {
  const create = async (name: string, attributes: Record<string, string>) => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: `${prefix}-${name}`, Attributes: attributes }),
    );
    if (!QueueUrl) throw new Error(`queue ${name} has no URL`);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    if (!Attributes?.QueueArn) throw new Error(`queue ${name} has no ARN`);
    return { url: QueueUrl, arn: Attributes.QueueArn };
  };
  const days = (n: number) => String(n * 86_400);
  const dlq = await create(WEBHOOK_QUEUE.deadLetter.logicalName, {
    MessageRetentionPeriod: days(WEBHOOK_QUEUE.deadLetter.retentionDays),
  });
  return create(WEBHOOK_QUEUE.logicalName, {
    VisibilityTimeout: String(WEBHOOK_QUEUE.visibilityTimeoutSeconds),
    MessageRetentionPeriod: days(WEBHOOK_QUEUE.retentionDays),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: dlq.arn,
      maxReceiveCount: WEBHOOK_QUEUE.maxReceiveCount,
    }),
  });
}

export interface WebhookEventSources {
  readonly events: StreamRunner;
  readonly delivery: SqsRunner;
  readonly started: readonly { readonly name: string; stop(): Promise<void> }[];
  idle(): Promise<void>;
}

export function startWebhookEventSources(options: {
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly streamArn: string;
  readonly queue: { readonly url: string; readonly arn: string };
  /** The stack's function environment (it names the table and the webhook queue). */
  readonly environment: Readonly<Record<string, string>>;
  /**
   * A table found again in the data dir: the producer replays the stream from its oldest record
   * (its runner's checkpoint died with the last process; the replay makes the same event ids and
   * finds the deliveries already written), and the deliveries still pending are queued again (the
   * SQS emulator lost their copies: local/webhookRecovery.ts).
   */
  readonly reusedTable: boolean;
  /** Each batch the producer's runner gave up on (there is no on-failure queue locally). */
  readonly onDiscard?: (discard: StreamDiscard) => void;
  readonly log: (message: string, error?: unknown) => void;
}): WebhookEventSources {
  const functionLog = (prefix: string): Log => ({
    info: () => {},
    warn: (message, attributes) => options.log(`${prefix}: ${message} ${JSON.stringify(attributes)}`),
    error: (message, attributes) => options.log(`${prefix}: ${message} ${JSON.stringify(attributes)}`),
  });
  const produce = wireEvents(options.environment, functionLog('events'));
  const deliver = wireWebhookDelivery(options.environment, functionLog('webhooks'));
  const events = startStreamRunner({
    dynamodbEndpoint: options.dynamodbEndpoint,
    streamArn: options.streamArn,
    handler: produce,
    batchSize: EVENTS_STREAM.batchSize,
    batchingWindowMs: EVENTS_STREAM.batchingWindowSeconds * 1000,
    maxAttempts: EVENTS_STREAM.retryAttempts,
    bisectOnError: true,
    filter: EVENTS_STREAM_FILTER,
    startingPosition: 'TRIM_HORIZON',
    ...(options.onDiscard ? { onDiscard: options.onDiscard } : {}),
    log: (message, error) =>
      options.log(`events event source: ${message}${error ? `: ${String(error)}` : ''}`),
  });
  const delivery = startSqsRunner({
    sqsEndpoint: options.sqsEndpoint,
    queueUrl: options.queue.url,
    queueArn: options.queue.arn,
    batchSize: WEBHOOK_DELIVERY.batchSize,
    maxConcurrency: WEBHOOK_DELIVERY.maxConcurrency,
    waitTimeSeconds: 1,
    handler: deliver,
    log: (message, error) =>
      options.log(`webhook event source: ${message}${error ? `: ${String(error)}` : ''}`),
  });
  const recovery = options.reusedTable ? requeue(options) : Promise.resolve();
  return {
    events,
    delivery,
    started: [
      { name: 'the events stream runner', stop: () => events.stop() },
      { name: 'the webhook queue runner', stop: () => delivery.stop() },
    ],
    idle: async () => {
      await recovery;
      await Promise.all([events.idle(), delivery.idle()]);
    },
  };
}

async function requeue(options: {
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly queue: { readonly url: string };
  readonly environment: Readonly<Record<string, string>>;
  readonly log: (message: string, error?: unknown) => void;
}): Promise<void> {
  const common = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const dynamodb = new DynamoDBClient({ ...common, endpoint: options.dynamodbEndpoint });
  const sqs = new SQSClient({ ...common, endpoint: options.sqsEndpoint });
  try {
    const queued = await requeuePendingDeliveries(
      DynamoDBDocumentClient.from(dynamodb),
      loadResourceNames(options.environment).tableName,
      new SqsWebhookQueue(sqs, options.queue.url),
    );
    if (queued > 0) options.log(`webhook recovery: ${queued} pending deliveries queued again`);
  } catch (error) {
    options.log('webhook recovery: the pending deliveries could not be queued again', error);
  } finally {
    dynamodb.destroy();
    sqs.destroy();
  }
}
