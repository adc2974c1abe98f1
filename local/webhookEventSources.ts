import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { wireEvents } from '../lambdas/events/handler.js';
import type { Log } from '../lambdas/ports/Log.js';
import { wireWebhookDelivery } from '../lambdas/webhooks/handler.js';
import {
  EVENTS_STREAM,
  EVENTS_STREAM_FILTER,
  WEBHOOK_DELIVERY,
  WEBHOOK_QUEUE,
} from '../lib/webhookLayout.js';
import { type SqsRunner, startSqsRunner } from './runners/sqsRunner.js';
import { type StreamRunner, startStreamRunner } from './runners/streamRunner.js';

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
  readonly startingPosition: 'TRIM_HORIZON' | 'LATEST';
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
    maxAttempts: EVENTS_STREAM.retryAttempts,
    bisectOnError: true,
    filter: EVENTS_STREAM_FILTER,
    startingPosition: options.startingPosition,
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
  return {
    events,
    delivery,
    started: [
      { name: 'the events stream runner', stop: () => events.stop() },
      { name: 'the webhook queue runner', stop: () => delivery.stop() },
    ],
    idle: async () => {
      await Promise.all([events.idle(), delivery.idle()]);
    },
  };
}
