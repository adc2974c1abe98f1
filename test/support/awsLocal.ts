import { randomBytes } from 'node:crypto';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  type _Record,
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { createApiKey } from '../../lambdas/keys/apiKeys.js';
import {
  createOutboxTable,
  createQueues,
  type QueueArns,
  type QueueUrls,
} from '../../local/createResources.js';
import { LOCAL_RESOURCES } from '../../local/localResources.js';
import type { LocalStack } from '../../local/localStack.js';

/** Static credentials: the emulators accept any, and no test may reach real AWS. */
export const LOCAL_AWS = {
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
} as const;

/**
 * The emulators of this test run as a process or a function sees AWS: region, credentials and
 * endpoints in its environment (the CLI, a wired handler).
 */
export function emulatorEnv(): Record<string, string> {
  return {
    AWS_REGION: LOCAL_AWS.region,
    AWS_ACCESS_KEY_ID: LOCAL_AWS.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_AWS.credentials.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
  };
}

export function dynamodbClient(): DynamoDBClient {
  return new DynamoDBClient({ ...LOCAL_AWS, endpoint: inject('dynamodbEndpoint') });
}

export function documentClient(client = dynamodbClient()): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}

export function streamsClient(): DynamoDBStreamsClient {
  return new DynamoDBStreamsClient({ ...LOCAL_AWS, endpoint: inject('dynamodbEndpoint') });
}

/** Every record of every shard of a table's stream, from the start. */
export async function streamRecords(streamArn: string): Promise<_Record[]> {
  const streams = streamsClient();
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
  const records: _Record[] = [];
  for (const shard of StreamDescription?.Shards ?? []) {
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shard.ShardId,
        ShardIteratorType: 'TRIM_HORIZON',
      }),
    );
    let iterator = ShardIterator;
    for (let page = 0; iterator && page < 10; page++) {
      const result = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      records.push(...(result.Records ?? []));
      if ((result.Records ?? []).length === 0) break;
      iterator = result.NextShardIterator;
    }
  }
  return records;
}

export function sqsClient(): SQSClient {
  return new SQSClient({ ...LOCAL_AWS, endpoint: inject('sqsEndpoint') });
}

/** A queue's counts as SQS reports them: visible now, in flight (received, not deleted), delayed. */
export async function queueDepth(
  sqs: SQSClient,
  queueUrl: string,
): Promise<{ visible: number; inFlight: number; delayed: number }> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  return {
    visible: Number(Attributes?.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}

let named = 0;

/**
 * A name no other test uses: `{prefix}-{pid}-{n}-{random}`. Distinct by construction within a
 * process (its count) and between the processes alive at once (their pids); 40 random bits alone met
 * in a run that names N things of one prefix with chance N²/2⁴¹ (2,000 names: about 2e-6).
 */
export function uniqueName(prefix: string): string {
  named += 1;
  return `${prefix}-${process.pid.toString(36)}-${named.toString(36)}-${randomBytes(4).toString('hex')}`;
}

/**
 * The tables this process made during the test file under way, deleted when that file ends
 * (test/support/dropTables.ts). DynamoDB Local reads and parses every table's schema a few times a
 * second (its TTL and index jobs) on the one SQLite thread all requests wait for: left in place,
 * the run's hundreds of tables cost its one engine CPU and every request time (decision 0303).
 */
const made = new Set<string>();
const DROP_TABLES = Symbol.for('postdate.test.dropTables');
(globalThis as { [DROP_TABLES]?: () => Promise<void> })[DROP_TABLES] = async () => {
  const names = [...made];
  made.clear();
  if (names.length === 0) return;
  const client = dynamodbClient();
  // Best effort: a table a test deleted itself is gone already.
  await Promise.allSettled(names.map((TableName) => client.send(new DeleteTableCommand({ TableName }))));
  client.destroy();
};

/** Creates a fresh outbox table (stream on) for one test file or test, deleted after the file. */
export async function freshTable(prefix = 'outbox'): Promise<{ tableName: string; streamArn: string }> {
  const tableName = uniqueName(prefix);
  made.add(tableName);
  const streamArn = await createOutboxTable(dynamodbClient(), tableName);
  return { tableName, streamArn };
}

/** Creates a fresh set of queues (send + DLQ with redrive, relay failures, schedule DLQ). */
export async function freshQueues(maxAttempts = 8): Promise<{ urls: QueueUrls; arns: QueueArns }> {
  return createQueues(sqsClient(), { prefix: uniqueName('q'), maxAttempts });
}

/** Stores a test-mode key (DESIGN §15) for the local stack's own tenant, in the stack's own table. */
export async function createLocalStackTestKey(
  stack: Pick<LocalStack, 'dynamodbEndpoint' | 'tableName'>,
  secret: string,
): Promise<void> {
  const documents = documentClient(new DynamoDBClient({ ...LOCAL_AWS, endpoint: stack.dynamodbEndpoint }));
  try {
    await createApiKey(documents, stack.tableName, {
      tenant: LOCAL_RESOURCES.tenant,
      secret,
      test: true,
      now: new Date(),
    });
  } finally {
    documents.destroy();
  }
}

/** POST /v1/messages on a local stack with a key and an idempotency key: the raw response. */
export function postLocalMessage(
  stack: Pick<LocalStack, 'apiUrl'>,
  request: { readonly secret: string; readonly key: string; readonly body: Record<string, unknown> },
): Promise<Response> {
  return fetch(`${stack.apiUrl}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${request.secret}`,
      'content-type': 'application/json',
      'idempotency-key': request.key,
    },
    body: JSON.stringify(request.body),
  });
}
