import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import { createNodeWebhookHttp } from '../lambdas/adapters/nodeWebhookHttp.js';
import { SqsWebhookQueue } from '../lambdas/adapters/SqsWebhookQueue.js';
import { loadResourceNames } from '../lambdas/core/config.js';
import { MESSAGE_STATUS } from '../lambdas/core/messageStatus.js';
import { encodeWebhookCopy, webhookDeliveryId, webhookEndpointId } from '../lambdas/core/webhooks.js';
import { wireEvents } from '../lambdas/events/handler.js';
import type { Log } from '../lambdas/ports/Log.js';
import { messagePk } from '../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY } from '../lambdas/store/tableLayout.js';
import { signedHeaders } from '../lambdas/webhooks/deliverCopy.js';
import { wireWebhookDelivery } from '../lambdas/webhooks/handler.js';
import { EVENTS_STREAM } from '../lib/eventSourceLayout.js';
import {
  EVENT_FAILURE_QUEUE,
  EVENTS_STREAM_FILTER,
  WEBHOOK_DELIVERY,
  WEBHOOK_QUEUE,
} from '../lib/webhookLayout.js';
import { type SqsRunner, startSqsRunner } from './runners/sqsRunner.js';
import { type StreamDiscard, type StreamRunner, startStreamRunner } from './runners/streamRunner.js';
import { requeuePendingDeliveries } from './webhookRecovery.js';

/**
 * Events and webhooks on the local stack (DESIGN §11): the event producer behind the table's stream
 * (a second stream runner beside the relay's, with its own filter) and the delivery function behind
 * the webhook queue. Both run in this process, wired from the stack's function environment; the
 * local stack has no EventBridge bus (local/EMULATORS.md).
 */

/**
 * Creates the webhook queue and its DLQ as the construct does (lib/webhookLayout.ts), and the event
 * producer's failure queue (`eventFailureUrl`).
 */
export async function createWebhookQueue(
  sqs: SQSClient,
  prefix: string,
): Promise<{ url: string; arn: string; eventFailureUrl: string }> {
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
  const eventFailures = await create(EVENT_FAILURE_QUEUE.logicalName, {
    MessageRetentionPeriod: days(EVENT_FAILURE_QUEUE.retentionDays),
  });
  const queue = await create(WEBHOOK_QUEUE.logicalName, {
    VisibilityTimeout: String(WEBHOOK_QUEUE.visibilityTimeoutSeconds),
    MessageRetentionPeriod: days(WEBHOOK_QUEUE.retentionDays),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: dlq.arn,
      maxReceiveCount: WEBHOOK_QUEUE.maxReceiveCount,
    }),
  });
  return { ...queue, eventFailureUrl: eventFailures.url };
}

export interface WebhookEventSources {
  readonly events: StreamRunner;
  readonly delivery: SqsRunner;
  readonly started: readonly { readonly name: string; stop(): Promise<void> }[];
  /**
   * Resolves once both functions have been invoked once with a batch that only reads, and the
   * webhook POST has run once against a listener of this process: the stack says ready after it
   * (DESIGN §7). A warm-up that fails is logged; the stack runs on with that function cold.
   */
  readonly warmed: Promise<void>;
  /** Per function, the real batches that were its first invocation (0 once warmed). */
  coldInvocations(): { readonly events: number; readonly webhooks: number };
  idle(): Promise<void>;
}

export function startWebhookEventSources(options: {
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly streamArn: string;
  readonly queue: { readonly url: string; readonly arn: string };
  /**
   * The event failure queue: where the producer's runner describes each batch it gave up on, as the
   * deployed mapping's on-failure destination (`postdate event-failures redrive` replays it).
   */
  readonly eventFailureQueueUrl: string;
  /** The stack's function environment (it names the table and the webhook queue). */
  readonly environment: Readonly<Record<string, string>>;
  /** LocalStackOptions.webhookRetryBaseMs. */
  readonly retryBaseMs?: number | undefined;
  /**
   * A table found again in the data dir: the deliveries still pending are queued again (the SQS
   * emulator lost their copies: local/webhookRecovery.ts).
   */
  readonly reusedTable: boolean;
  /**
   * Where the producer's runner keeps its checkpoints (in the data dir): a restarted stack goes on
   * after the last record the last one handled. Without it (or before the first one is written) it
   * reads the stream from its oldest record; the replay makes the same event ids and finds the
   * deliveries already written.
   */
  readonly checkpointFile?: string | undefined;
  /** Each batch the producer's runner gave up on (also on the event failure queue). */
  readonly onDiscard?: (discard: StreamDiscard) => void;
  readonly log: (message: string, error?: unknown) => void;
}): WebhookEventSources {
  const functionLog = (prefix: string): Log => ({
    info: () => {},
    warn: (message, attributes) => options.log(`${prefix}: ${message} ${JSON.stringify(attributes)}`),
    error: (message, attributes) => options.log(`${prefix}: ${message} ${JSON.stringify(attributes)}`),
  });
  const produce = inProcessFunction(wireEvents(options.environment, functionLog('events')));
  const deliver = inProcessFunction(
    wireWebhookDelivery(options.environment, functionLog('webhooks'), undefined, options.retryBaseMs),
  );
  const warmed = warmUp(produce, deliver, options.queue.arn, options.log);
  const events = startStreamRunner({
    dynamodbEndpoint: options.dynamodbEndpoint,
    streamArn: options.streamArn,
    handler: produce.invoke,
    batchSize: EVENTS_STREAM.batchSize,
    batchingWindowMs: EVENTS_STREAM.batchingWindowSeconds * 1000,
    maxAttempts: EVENTS_STREAM.retryAttempts,
    bisectOnError: true,
    onFailure: { sqsEndpoint: options.sqsEndpoint, queueUrl: options.eventFailureQueueUrl },
    filter: EVENTS_STREAM_FILTER,
    startingPosition: 'TRIM_HORIZON',
    ...(options.checkpointFile ? { checkpointFile: options.checkpointFile } : {}),
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
    handler: deliver.invoke,
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
    warmed,
    coldInvocations: () => ({ events: produce.coldInvocations(), webhooks: deliver.coldInvocations() }),
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

type BatchResult = { readonly batchItemFailures: readonly unknown[] };

/**
 * A function run in this process as Lambda runs an instance: its first invocation makes its clients'
 * first requests (connections, the SDK's per-client set-up) and runs its code the first time.
 * `warm` is that first invocation, made by the stack; it counts once its batch succeeded.
 * `coldInvocations` counts a real batch that came first instead (0 or 1).
 */
interface InProcessFunction<Event> {
  readonly invoke: (event: Event) => Promise<BatchResult>;
  readonly warm: (event: Event) => Promise<BatchResult>;
  coldInvocations(): number;
}

function inProcessFunction<Event, Result extends BatchResult>(
  handler: (event: Event) => Promise<Result>,
): InProcessFunction<Event> & { readonly invoke: (event: Event) => Promise<Result> } {
  let warmed = false;
  let cold = 0;
  return {
    invoke: (event) => {
      if (!warmed) cold += 1;
      warmed = true;
      return handler(event);
    },
    warm: async (event) => {
      const result = await handler(event);
      if (result.batchItemFailures.length === 0) warmed = true;
      return result;
    },
    coldInvocations: () => cold,
  };
}

/** No API key names this tenant, so it has no endpoints: an event of it is delivered nowhere. */
const WARM_UP_TENANT = 'postdate-local-warm-up';

/**
 * Each function's first invocation, with a batch that only reads: the producer is handed a new
 * message of {@link WARM_UP_TENANT} (one Query of its endpoints, none; no bus locally), the delivery
 * function a copy of a delivery that does not exist (one GetItem; stale, dropped). Then one signed
 * POST to a listener of this process warms the HTTP client and the signing, which the delivery
 * function's stale copy does not reach. Nothing is written, queued, sent or delivered.
 */
async function warmUp(
  produce: InProcessFunction<{ Records: DynamoDBRecord[] }>,
  deliver: InProcessFunction<{ Records: SQSRecord[] }>,
  queueArn: string,
  log: (message: string, error?: unknown) => void,
): Promise<void> {
  const at = new Date();
  const warm = async (name: string, run: () => Promise<BatchResult>) => {
    try {
      const { batchItemFailures } = await run();
      if (batchItemFailures.length > 0) log(`${name} warm-up: its batch failed`);
    } catch (error) {
      log(`${name} warm-up failed; the first real batch is cold`, error);
    }
  };
  await Promise.all([
    warm('events', () => produce.warm({ Records: [newMessageRecord(at)] })),
    warm('webhooks', () => deliver.warm({ Records: [staleCopyRecord(at, queueArn)] })),
    postToSelf(at).catch((error: unknown) => log('webhook POST warm-up failed', error)),
  ]);
}

function newMessageRecord(at: Date): DynamoDBRecord {
  const id = 'msg_warm-up';
  const state = {
    pk: messagePk(id),
    sk: ITEM_SORT_KEY.messageState,
    id,
    tenant: WARM_UP_TENANT,
    status: MESSAGE_STATUS.scheduled,
    rev: 1,
    send_at: at.toISOString(),
    created_at: at.toISOString(),
    updated_at: at.toISOString(),
  };
  return {
    eventName: 'INSERT',
    dynamodb: {
      SequenceNumber: '0',
      Keys: { pk: { S: state.pk }, sk: { S: state.sk } },
      NewImage: marshall(state) as never,
    },
  };
}

function staleCopyRecord(at: Date, queueArn: string): SQSRecord {
  const time = String(at.getTime());
  const endpoint = webhookEndpointId('0'.repeat(26));
  return {
    messageId: 'warm-up',
    receiptHandle: 'warm-up',
    // A copy as the producer queues it (no `issued_at`: queued after its write), for a delivery that
    // was never written: the delivery function reads it, finds nothing, and drops the copy as stale.
    body: encodeWebhookCopy({
      v: 1,
      endpoint,
      delivery: webhookDeliveryId(endpoint, 'evt_warm-up', at.getTime()),
      rev: 1,
      seq: 0,
    }),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: time,
      SenderId: 'warm-up',
      ApproximateFirstReceiveTimestamp: time,
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: 'us-east-1',
  };
}

/** One signed POST, as the delivery function makes it, to a listener of this process (then closed). */
async function postToSelf(at: Date): Promise<void> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const body = '{}';
    const secret = `whsec_${Buffer.alloc(24).toString('base64')}`;
    await createNodeWebhookHttp({ policy: 'local' }).post({
      url: `http://127.0.0.1:${port}/warm-up`,
      headers: signedHeaders([secret], 'evt_warm-up', at, body),
      body,
      timeoutMs: 5_000,
    });
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
