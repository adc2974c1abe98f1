import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
} from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { createNodeWebhookHttp } from '../../lambdas/adapters/nodeWebhookHttp.js';
import { SqsCopyVisibility } from '../../lambdas/adapters/SqsCopyVisibility.js';
import { SqsWebhookQueue } from '../../lambdas/adapters/SqsWebhookQueue.js';
import {
  checkNewWebhookUrl,
  type ResolveHost,
  type WebhookUrlPolicy,
} from '../../lambdas/adapters/webhookAddressPolicy.js';
import { createApiHandler } from '../../lambdas/api/createApiHandler.js';
import { createEventsHandler } from '../../lambdas/events/createEventsHandler.js';
import type { Log } from '../../lambdas/ports/Log.js';
import type {
  QueuedWebhookCopy,
  WebhookHttp,
  WebhookQueue,
  WebhookStore,
} from '../../lambdas/ports/Webhooks.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { DynamoTemplateStore } from '../../lambdas/store/templateStore.js';
import { DynamoWebhookStore } from '../../lambdas/store/webhookStore.js';
import { createWebhookDeliveryHandler } from '../../lambdas/webhooks/createWebhookDeliveryHandler.js';
import { documentedHandler } from '../api/apiHarness.js';
import { apiEvent, type RequestOptions } from '../api/events.js';
import { documentClient, freshTable, sqsClient, uniqueName } from '../support/awsLocal.js';

/** What a receiver saw: one POST. */
export interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The body's bytes as they came off the wire (what a receiver verifies). */
  readonly raw: Buffer;
}

/** How the receiver answers the n-th request (from 0): a status, one with headers, or `stall` (never answers). */
export type Answer =
  | number
  | { readonly status: number; readonly headers: Readonly<Record<string, string>> }
  | 'stall';

/** A real HTTP receiver on 127.0.0.1 that records every POST and answers as told. */
export async function startReceiver(
  answer: (index: number, request: Received) => Answer = () => 200,
  /** Where a 3xx answer points. */
  redirectTo = 'http://169.254.169.254/latest/meta-data/',
) {
  const received: Received[] = [];
  let connections = 0;
  const stalled: ServerResponse[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const request = { path: req.url ?? '/', headers: req.headers, body: raw.toString('utf8'), raw };
      const index = received.length;
      received.push(request);
      const reply = answer(index, request);
      if (reply === 'stall') {
        stalled.push(res);
        return;
      }
      const status = typeof reply === 'number' ? reply : reply.status;
      if (typeof reply === 'object')
        for (const [name, value] of Object.entries(reply.headers)) res.setHeader(name, value);
      if (status >= 300 && status < 400) res.setHeader('location', redirectTo);
      res.statusCode = status;
      res.end('ok');
    });
  });
  server.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    received,
    connections: () => connections,
    close: async () => {
      for (const res of stalled) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A clock the test moves by hand. */
export function manualClock(start = Date.now()) {
  // It starts at the real time: receivers verify `webhook-timestamp` against their own clock (±5 min).
  let current = start;
  return {
    now: () => new Date(current),
    advance: (ms: number) => {
      current += ms;
    },
  };
}

/**
 * The real SQS queue, except that a copy's delay is played on the test's clock: the copy is visible
 * at once and the clock jumps to its time, so a retry schedule of hours runs in milliseconds and
 * nothing sleeps. The delays asked for are recorded. With `holds`, a copy with a delay is held aside
 * instead until `releaseDue()` moves the clock to the earliest held copy's time and sends every copy
 * due by then: each copy comes at its own time, not when another's delay moved the clock.
 */
function clockDelayedQueue(
  queue: WebhookQueue,
  clock: ReturnType<typeof manualClock>,
  jumps = true,
  holds = false,
) {
  const delays: number[] = [];
  const held: { entry: QueuedWebhookCopy; dueMs: number }[] = [];
  const wrapped: WebhookQueue = {
    send: async (copies) => {
      delays.push(...copies.map((entry) => entry.delaySeconds));
      if (holds) {
        const at = clock.now().getTime();
        for (const entry of copies)
          if (entry.delaySeconds > 0) held.push({ entry, dueMs: at + entry.delaySeconds * 1000 });
        const due = copies.filter((entry) => entry.delaySeconds === 0);
        return due.length > 0 ? queue.send(due) : { failed: [] };
      }
      const longest = Math.max(0, ...copies.map((entry) => entry.delaySeconds));
      if (jumps) clock.advance(longest * 1000);
      return queue.send(copies.map((entry) => ({ ...entry, delaySeconds: 0 })));
    },
  };
  /**
   * False when no copy is held; otherwise the clock moves to the earliest held copy's time (plus
   * `withinMs`, which takes the copies due that much later along in one go) and the copies due by
   * then are sent.
   */
  const releaseDue = async (withinMs = 0): Promise<boolean> => {
    if (held.length === 0) return false;
    const earliest = Math.min(...held.map((copy) => copy.dueMs)) + withinMs;
    clock.advance(Math.max(0, earliest - clock.now().getTime()));
    const dueNow = held.filter((copy) => copy.dueMs <= clock.now().getTime());
    held.splice(0, held.length, ...held.filter((copy) => !dueNow.includes(copy)));
    const { failed } = await queue.send(dueNow.map(({ entry }) => ({ ...entry, delaySeconds: 0 })));
    if (failed.length > 0) throw new Error(`${failed.length} held webhook copies could not be sent`);
    return true;
  };
  return { queue: wrapped, delays, releaseDue };
}

const silent: Log = { info: () => {}, warn: () => {}, error: () => {} };

/** The API's webhook routes and the delivery function on a fresh table and queue. */
export async function webhookHarness(
  options: {
    readonly policy?: WebhookUrlPolicy;
    readonly http?: WebhookHttp;
    /** The resolver the API's URL check asks when an endpoint is created. @default the system's */
    readonly resolve?: ResolveHost;
    readonly retryHours?: number;
    readonly timeoutMs?: number;
    readonly random?: () => number;
    /** The retry backoff's base (DeliveryDeps.retryBaseMs). @default WEBHOOK_BACKOFF.baseMs */
    readonly retryBaseMs?: number;
    /** Wraps the queue the API's routes send to (a refusing queue, say); the delivery function's is untouched. */
    readonly apiQueue?: (queue: WebhookQueue) => WebhookQueue;
    /** Wraps the store the API's routes write to (a write that never lands, say). */
    readonly apiStore?: (store: WebhookStore) => WebhookStore;
    /** The DynamoDB client of the API's webhook store (one that counts its reads, say). */
    readonly apiDocuments?: DynamoDBDocumentClient;
    /** Wraps the store the delivery function reads and writes (counting its reads, say). */
    readonly deliveryStore?: (store: WebhookStore) => WebhookStore;
    /** The queue's visibility timeout (SQS's default 30 s; the stack's is 360 s). */
    readonly queueVisibilitySeconds?: number;
    /**
     * false: a copy's delay does not move the clock (the copy is still visible at once), so time
     * stands still until the test moves it. @default true
     */
    readonly clockFollowsDelays?: boolean;
    /**
     * true: a copy with a delay is held aside until `releaseDue()` moves the clock to its time
     * (clockFollowsDelays does not apply). @default false
     */
    readonly holdDelayedCopies?: boolean;
  } = {},
) {
  const { tableName, streamArn } = await freshTable('webhooks');
  const sqs = sqsClient();
  const created = await sqs.send(
    new CreateQueueCommand({
      QueueName: uniqueName('webhooks'),
      ...(options.queueVisibilitySeconds
        ? { Attributes: { VisibilityTimeout: String(options.queueVisibilitySeconds) } }
        : {}),
    }),
  );
  const queueUrl = created.QueueUrl ?? '';
  const store = new DynamoWebhookStore(documentClient(), tableName);
  const apiWebhookStore = options.apiDocuments
    ? new DynamoWebhookStore(options.apiDocuments, tableName)
    : store;
  const clock = manualClock();
  const { queue, delays, releaseDue } = clockDelayedQueue(
    new SqsWebhookQueue(sqs, queueUrl),
    clock,
    options.clockFollowsDelays ?? true,
    options.holdDelayedCopies,
  );
  const policy = options.policy ?? 'local';
  const retryHours = options.retryHours ?? 24;
  const random = options.random ?? (() => 0.5);
  const metrics: string[] = [];
  // Every answer is checked against the OpenAPI document, as in test/api/apiHarness.ts.
  const api = documentedHandler(
    createApiHandler({
      store: new DynamoApiStore(documentClient(), tableName),
      templates: new DynamoTemplateStore(documentClient(), tableName),
      config: {
        allowedFrom: ['*'],
        defaultFrom: 'p@example.com',
        maxHorizonDays: 400,
        retentionDays: 30,
        maxAttempts: 8,
      },
      now: clock.now,
      random: Math.random,
      logger: silent,
      webhooks: {
        store: options.apiStore ? options.apiStore(apiWebhookStore) : apiWebhookStore,
        queue: options.apiQueue ? options.apiQueue(queue) : queue,
        checkUrl: (url) => checkNewWebhookUrl(url, policy, options.resolve),
        retryHours,
        retentionDays: 30,
        now: clock.now,
        random: Math.random,
      },
    }),
  );
  const deliver = createWebhookDeliveryHandler({
    store: options.deliveryStore ? options.deliveryStore(store) : store,
    queue,
    http: options.http ?? createNodeWebhookHttp({ policy }),
    now: clock.now,
    random,
    retryHours,
    ...(options.retryBaseMs === undefined ? {} : { retryBaseMs: options.retryBaseMs }),
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    count: (metric) => metrics.push(metric),
    visibility: new SqsCopyVisibility(sqs, queueUrl),
  });

  /** The copies visible now, as the SQS event source hands them over (receipt handle, receive count). */
  const receive = async (): Promise<SQSRecord[]> => {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );
    return Messages.map(
      (message) =>
        ({
          messageId: message.MessageId ?? '',
          body: message.Body ?? '',
          receiptHandle: message.ReceiptHandle ?? '',
          attributes: { ApproximateReceiveCount: message.Attributes?.ApproximateReceiveCount ?? '1' },
        }) as unknown as SQSRecord,
    );
  };

  const call = async (request: RequestOptions) => {
    const result = await api(apiEvent(request));
    // biome-ignore lint/suspicious/noExplicitAny: a test reads the JSON answers by their documented shape
    return { status: result.statusCode ?? 0, json: JSON.parse(result.body ?? '{}') as Record<string, any> };
  };

  /**
   * Runs the delivery function over the queue until it is empty (or `rounds` batches ran, or
   * `until` holds), as the SQS event source would: a failed copy becomes visible again at once, or,
   * with `failedStayHidden`, when the visibility the function gave it (or the queue's) is over.
   */
  const pump = async (
    limits: { rounds?: number; until?: () => boolean; failedStayHidden?: boolean } = {},
  ) => {
    let rounds = 0;
    for (; rounds < (limits.rounds ?? 200); rounds++) {
      if (limits.until?.()) break;
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
      );
      if (Messages.length === 0) break;
      const event: SQSEvent = {
        Records: Messages.map(
          (message) =>
            ({
              messageId: message.MessageId ?? '',
              body: message.Body ?? '',
              receiptHandle: message.ReceiptHandle,
            }) as SQSRecord,
        ),
      };
      const { batchItemFailures } = await deliver(event);
      const failed = new Set(batchItemFailures.map((failure) => failure.itemIdentifier));
      for (const message of Messages) {
        if (failed.has(message.MessageId ?? '')) {
          if (limits.failedStayHidden) continue;
          await sqs.send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: queueUrl,
              ReceiptHandle: message.ReceiptHandle,
              VisibilityTimeout: 0,
            }),
          );
        } else {
          await sqs.send(
            new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }),
          );
        }
      }
    }
    return rounds;
  };

  /**
   * The event producer on this harness's table, queue and clock, as the stack wires it (retries for a
   * day, a 30-day retention); `overrides` give it a bus, a log, another queue or the attachments.
   */
  const producer = (overrides: Partial<Parameters<typeof createEventsHandler>[0]> = {}) =>
    createEventsHandler({ store, queue, now: clock.now, retryHours: 24, retentionDays: 30, ...overrides });

  return {
    tableName,
    streamArn,
    store,
    queue,
    queueUrl,
    clock,
    delays,
    releaseDue,
    metrics,
    call,
    pump,
    deliver,
    receive,
    producer,
  };
}

/** Creates an endpoint through the API; its id and the secret shown once. */
export async function subscribe(
  harness: Awaited<ReturnType<typeof webhookHarness>>,
  url: string,
  tenant = 'acme',
  events?: string[],
) {
  const created = await harness.call({
    method: 'POST',
    path: '/v1/webhooks',
    tenant,
    body: { url, ...(events ? { events } : {}) },
  });
  if (created.status !== 201) throw new Error(`subscribe: ${created.status} ${JSON.stringify(created.json)}`);
  return { id: created.json.id as string, secret: created.json.secret as string };
}

/**
 * A message's state record as the stream's image carries it (what the events function reads): the
 * fields the tests vary, and the rest as an enqueued one-recipient message has them.
 */
export function stateImage(fields: {
  readonly id: string;
  readonly tenant: string;
  readonly status: string;
  readonly updatedAt: string;
  readonly rev?: number;
  readonly attempts?: number;
  readonly tags?: Record<string, string>;
}) {
  return {
    pk: `MSG#${fields.id}`,
    sk: 'STATE',
    id: fields.id,
    tenant: fields.tenant,
    status: fields.status,
    rev: fields.rev ?? 1,
    send_at: '2026-12-01T09:00:00.000Z',
    not_after: null,
    created_at: '2026-12-01T08:00:00.000Z',
    updated_at: fields.updatedAt,
    attempts: fields.attempts ?? 0,
    last_error: null,
    history: [],
    group: null,
    on_ambiguous: 'retry',
    tags: fields.tags ?? {},
    metadata: {},
    rcpt_total: 1,
    lst_pk: 'x',
    lst_sk: 'y',
    tnt_pk: 'x',
    tnt_sk: 'y',
  };
}
