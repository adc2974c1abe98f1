import {
  type AttributeDefinition,
  CreateTableCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { INDEX, KEY, KEY_ATTRIBUTES, TTL_ATTRIBUTE } from '../lambdas/store/tableLayout.js';
import {
  QUEUE,
  SENDER_TIMEOUT_SECONDS,
  sendQueueRedrivePolicy,
  sendQueueVisibilitySeconds,
} from '../lib/queueLayout.js';

/** The CreateTable input for the outbox table, built from the shared layout. */
export function outboxTableInput(tableName: string): CreateTableCommandInput {
  const attributes: AttributeDefinition[] = [...new Set(KEY_ATTRIBUTES)].map((name) => ({
    AttributeName: name,
    AttributeType: 'S',
  }));
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: attributes,
    KeySchema: [
      { AttributeName: KEY.partition, KeyType: 'HASH' },
      { AttributeName: KEY.sort, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: Object.values(INDEX).map((index) => ({
      IndexName: index.indexName,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: 'HASH' },
        { AttributeName: index.sortKey, KeyType: 'RANGE' },
      ],
      Projection:
        index.projection.type === 'INCLUDE'
          ? { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.projection.attributes] }
          : { ProjectionType: 'KEYS_ONLY' },
    })),
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
  };
}

/** Creates the outbox table (with its stream and TTL) and returns its stream ARN. */
export async function createOutboxTable(dynamodb: DynamoDBClient, tableName: string): Promise<string> {
  const created = await dynamodb.send(new CreateTableCommand(outboxTableInput(tableName)));
  await dynamodb.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
    }),
  );
  const streamArn = created.TableDescription?.LatestStreamArn;
  if (!streamArn) throw new Error(`table ${tableName} was created without a stream`);
  return streamArn;
}

export interface QueueUrls {
  readonly send: string;
  readonly sendDeadLetter: string;
  readonly relayFailures: string;
  readonly scheduleDeadLetter: string;
}

export interface QueueArns {
  readonly send: string;
  readonly sendDeadLetter: string;
  readonly relayFailures: string;
  readonly scheduleDeadLetter: string;
}

/** Creates the send queue, its DLQ (the backstop redrive of lib/queueLayout.ts) and the two failure queues. */
export async function createQueues(
  sqs: SQSClient,
  options: { prefix: string; maxAttempts: number; senderTimeoutSeconds?: number },
): Promise<{ urls: QueueUrls; arns: QueueArns }> {
  const create = async (logicalName: string, attributes: Record<string, string>) => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: `${options.prefix}-${logicalName}`, Attributes: attributes }),
    );
    if (!QueueUrl) throw new Error(`queue ${logicalName} has no URL`);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    const arn = Attributes?.QueueArn;
    if (!arn) throw new Error(`queue ${logicalName} has no ARN`);
    return { url: QueueUrl, arn };
  };
  const days = (n: number) => String(n * 24 * 3600);
  const dlq = await create(QUEUE.sendDeadLetter.logicalName, {
    MessageRetentionPeriod: days(QUEUE.sendDeadLetter.retentionDays),
  });
  const send = await create(QUEUE.send.logicalName, {
    VisibilityTimeout: String(
      sendQueueVisibilitySeconds(options.senderTimeoutSeconds ?? SENDER_TIMEOUT_SECONDS),
    ),
    MessageRetentionPeriod: days(QUEUE.send.retentionDays),
    RedrivePolicy: sendQueueRedrivePolicy(dlq.arn, options.maxAttempts),
  });
  const relayFailures = await create(QUEUE.relayFailures.logicalName, {
    MessageRetentionPeriod: days(QUEUE.relayFailures.retentionDays),
  });
  const scheduleDeadLetter = await create(QUEUE.scheduleDeadLetter.logicalName, {
    MessageRetentionPeriod: days(QUEUE.scheduleDeadLetter.retentionDays),
  });
  return {
    urls: {
      send: send.url,
      sendDeadLetter: dlq.url,
      relayFailures: relayFailures.url,
      scheduleDeadLetter: scheduleDeadLetter.url,
    },
    arns: {
      send: send.arn,
      sendDeadLetter: dlq.arn,
      relayFailures: relayFailures.arn,
      scheduleDeadLetter: scheduleDeadLetter.arn,
    },
  };
}
