import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import { EventBridgeBus } from '../adapters/EventBridgeBus.js';
import { awsClientEnvironment, type Environment } from '../adapters/explicitEnvironment.js';
import { lazyS3AttachmentStore } from '../adapters/LazyS3AttachmentStore.js';
import { lambdaEntry } from '../adapters/lambdaEntry.js';
import { SqsWebhookQueue } from '../adapters/SqsWebhookQueue.js';
import { configTargetOf, loadConfig, loadResourceNames, requireResource } from '../core/config.js';
import type { WebhookMetric } from '../core/metricNames.js';
import type { Log } from '../ports/Log.js';
import { readStateRecord } from '../store/stateReads.js';
import { DynamoWebhookStore } from '../store/webhookStore.js';
import { createEventsHandler } from './createEventsHandler.js';

export type EventsBatchHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

/**
 * Wires the event producer from `env`: the bus when `POSTDATE_EVENT_BUS_NAME` is set (AWS), taking
 * the types `POSTDATE_BUS_EVENTS` says; the webhook store and queue always.
 */
export function wireEvents(
  env: Environment,
  log: Log,
  count?: (metric: WebhookMetric, value: number) => void,
): EventsBatchHandler {
  const config = loadConfig(env, configTargetOf(env));
  const names = loadResourceNames(env);
  const documents = DynamoDBDocumentClient.from(
    new DynamoDBClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'DYNAMODB') }),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  const busName = names.eventBusName;
  return createEventsHandler({
    bus:
      busName === undefined
        ? undefined
        : new EventBridgeBus(
            new EventBridgeClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'EVENTBRIDGE') }),
            busName,
          ),
    busEvents: config.busEvents,
    store: new DynamoWebhookStore(documents, names.tableName),
    queue: new SqsWebhookQueue(
      new SQSClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'SQS') }),
      requireResource(names, 'webhookQueueUrl', 'POSTDATE_WEBHOOK_QUEUE_URL'),
    ),
    now: () => new Date(),
    retryHours: config.webhookRetryHours,
    retentionDays: config.retentionDays,
    // The attachments' bucket, to tag a message's attachments with its lifetime (DESIGN §13), read
    // off its current record; the S3 client loads with the first message that has any (decision 0114).
    ...(names.attachmentBucket === undefined
      ? {}
      : {
          attachments: {
            store: lazyS3AttachmentStore({
              bucket: names.attachmentBucket,
              endpoint: names.attachmentEndpoint,
              config: awsClientEnvironment(env, 'S3'),
            }),
            currentState: (id: string) => readStateRecord(documents, names.tableName, id),
          },
        }),
    log,
    ...(count ? { count } : {}),
  });
}

/** The event producer Lambda: DynamoDB Streams event source (state records), ReportBatchItemFailures. */
export const handler = lambdaEntry({
  name: 'events',
  metrics: true,
  wire: (env, { logger, count }) => wireEvents(env, logger, count),
})(process.env);
