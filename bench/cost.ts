import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { encodedAttachmentBytes } from '../lambdas/core/attachments.js';
import { BUS_EVENTS_DEFAULT, type BusEvents, putsOnBus } from '../lambdas/core/busEvents.js';
import { loadConfig } from '../lambdas/core/config.js';
import { CONFIG_SETTINGS } from '../lambdas/core/configSpec.js';
import { SENDER_METRIC, SWEEPER_METRIC, WEBHOOK_METRIC } from '../lambdas/core/metricNames.js';
import { EVENT_LANES } from '../lambdas/events/produceEvents.js';
import { RELAY_LANES } from '../lambdas/relay/relayRecords.js';
import { SENDER_LANES } from '../lambdas/sender/createSenderHandler.js';
import { ACCESS_LOG_FORMAT } from '../lib/constructs/Api.js';
import { EVENTS_STREAM, SENDER_QUEUE } from '../lib/eventSourceLayout.js';
import { WEBHOOK_DELIVERY, WEBHOOK_QUEUE } from '../lib/webhookLayout.js';
import { type CountedRequest, installAwsRequestCounter, type SeenStreamRecord } from './awsRequestCounter.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { ratioRow } from './benchResult.js';
import {
  enqueue,
  enqueueBody,
  SHORT_LEASE_ENV,
  startBenchStack,
  waitForDelivery,
  waitOutShortLease,
} from './benchStack.js';
import {
  ACCESS_LOG_SAMPLE,
  DURATION_MODEL_MS,
  FUNCTION_MEMORY_MB,
  PLATFORM_LOG_BYTES_PER_INVOCATION,
  PRICES,
  PRICES_CHECKED_ON,
  PRICES_REGION,
  type Price,
} from './prices.js';
import { round, sleep } from './stats.js';
import { startWebhookLatencyProbe, type WebhookLatencyProbe } from './webhookLatency.js';

/**
 * Cost per million messages on AWS. The real handlers run on the local stack while every AWS request
 * they make is counted (awsRequestCounter.ts), with DynamoDB's own ConsumedCapacity for the units.
 * The deferred path is compressed: POSTDATE_DIRECT_DELAY_MAX_SECONDS=2 and a 1 s schedule lead send a
 * message due in 5 s through the Scheduler, exactly as one due in a week would go.
 */

const SES_PER_MILLION = PRICES.sesOutboundMessage.usd * 1e6;
const DIRECT_DELAY_MAX_SECONDS = 2;
const SCHEDULE_LEAD_SECONDS = 1;
const DEFERRED_DELAY_SECONDS = 5;
/** A deadline, not a measure: on a loaded shared machine a copy may wait out a lease (34 s) once. */
const DELIVERY_DEADLINE_MS = 120_000;

interface Scenario {
  readonly name: string;
  readonly bodyBytes: number;
  readonly deferred: boolean;
  /** A webhook endpoint subscribed to every event type (DESIGN §11): each event is also a delivery. */
  readonly webhook: boolean;
  /**
   * Issue 32's goals, $ per million, everything counted: judged on the rows without a webhook (a
   * subscription is the user's choice and bills its own deliveries; docs/decisions/0099).
   */
  readonly goals?: { readonly alone?: number; readonly busy?: number };
  /** One attachment (DESIGN §13): inline base64 in the enqueue, or uploaded first through POST /v1/attachments. */
  readonly attachment?: { readonly bytes: number; readonly uploaded: boolean };
}

const PLAIN: readonly Omit<Scenario, 'webhook'>[] = [
  { name: 'immediate 1 KB', bodyBytes: 1024, deferred: false, goals: { alone: 11, busy: 8 } },
  { name: 'immediate 20 KB', bodyBytes: 20 * 1024, deferred: false, goals: { busy: 11 } },
  { name: 'deferred 1 KB', bodyBytes: 1024, deferred: true },
  { name: 'deferred 20 KB', bodyBytes: 20 * 1024, deferred: true },
];

const SCENARIOS: readonly Scenario[] = [
  ...PLAIN.map((scenario) => ({ ...scenario, webhook: false })),
  {
    name: 'immediate 1 KB + 100 KB attachment (inline)',
    bodyBytes: 1024,
    deferred: false,
    webhook: false,
    attachment: { bytes: 100 * 1024, uploaded: false },
  },
  {
    name: 'immediate 1 KB + 5 MB attachment (uploaded)',
    bodyBytes: 1024,
    deferred: false,
    webhook: false,
    attachment: { bytes: 5 * 1024 * 1024, uploaded: true },
  },
  // Last: once subscribed, the endpoint stays.
  ...PLAIN.map(({ goals: _goals, ...scenario }) => ({
    ...scenario,
    name: `${scenario.name}, webhook subscribed`,
    webhook: true,
  })),
];

/** POSTDATE_RETENTION_DAYS's default: how long an ended message's attachments are kept. */
const RETENTION_DAYS = 30;

/** What one message's attachment adds to the bill besides the requests counted. */
export interface AttachmentLoad {
  readonly bytes: number;
  /** Uploaded through POST /v1/attachments (a client PUT, a day in uploads/), not inline. */
  readonly uploaded: boolean;
  readonly retentionDays: number;
}

/** One line of the per-message bill. */
export interface CostLine {
  readonly item: string;
  /** Per message. */
  readonly quantity: number;
  readonly unit: string;
  readonly usdPerMillion: number;
  readonly how: 'counted' | 'derived' | 'modelled';
}

type FunctionName = keyof typeof FUNCTION_MEMORY_MB;

/**
 * How full the batches are. `alone`: every message travels by itself (batches of one, the
 * authorizer invoked for every request) — the low-traffic worst case, and the goal's verdict.
 * `busy`: a steady stream — the relay gets full batches of 100 stream records, the sender and its
 * event source 10 copies per invocation, receive and delete, the relay's SendMessageBatch 10
 * entries, and API Gateway answers from its authorizer cache (30 s per key by default); Lambda's
 * START/END/REPORT lines then come once per batch. Same counted requests and units either way, but
 * the authorizer's: busy, it is not invoked and reads nothing (decision 0250).
 */
export type Traffic = 'alone' | 'busy';

const BUSY_BATCH = { relayRecords: 100, senderCopies: 10, sqsEntries: 10 } as const;

/** What one invocation of each batch function gets when busy: stream records or queue copies. */
const BUSY_ITEMS_PER_INVOCATION = {
  relay: BUSY_BATCH.relayRecords,
  events: EVENTS_STREAM.batchSize,
  sender: SENDER_QUEUE.batchSize,
  webhooks: WEBHOOK_DELIVERY.batchSize,
} as const;

/**
 * How many items of a batch each batch function works on at once, read from the code: the sender's
 * lanes (one per pooled SMTP session), the relay's messages, the producer's events; the webhook
 * delivery function starts every copy of its batch at once (createWebhookDeliveryHandler.ts).
 * Lambda bills an invocation's wall time, so a busy invocation lasts about ceil(batch / lanes)
 * items' chains of calls, not the sum of them all.
 */
const LANES = {
  relay: RELAY_LANES,
  events: EVENT_LANES,
  sender: SENDER_LANES,
  webhooks: WEBHOOK_DELIVERY.batchSize,
} as const satisfies Record<keyof typeof BUSY_ITEMS_PER_INVOCATION, number>;

/**
 * Requests a batch function makes once per batch (or per ten entries), not once per item: the
 * relay's and the producer's one SendMessageBatch for the batch's copies, the producer's endpoint
 * read per tenant and its PutEvents. Every other request is one item's (the api's own copy, the
 * sender's re-delayed early copy: one entry each).
 */
const BATCH_REQUESTS: Partial<Record<FunctionName, readonly PricedRequest[]>> = {
  relay: ['SQS.SendMessageBatch'],
  events: ['SQS.SendMessageBatch', 'DynamoDB.Query', 'EventBridge.PutEvents'],
};

const isBatchRequest = (request: CountedRequest): boolean =>
  isFunction(request.origin) &&
  (BATCH_REQUESTS[request.origin] ?? []).includes(`${request.service}.${request.command}` as PricedRequest);

export async function cost(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const perScenario = options.quick ? 3 : 10;
  const counter = installAwsRequestCounter();
  const logBytes = captureLogBytes();
  // EMF metrics are off by default in the local stack; here they are on, as in AWS, so their log
  // bytes are measured.
  const previousMetrics = process.env.POWERTOOLS_METRICS_DISABLED;
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  // POSTDATE_BUS_EVENTS from the benchmark's environment goes to the stack, as the construct's
  // busEvents would (decision 0178); the bill prices the events it puts on the bus.
  const busVariable = CONFIG_SETTINGS.busEvents.variable;
  const busSetting: Record<string, string> = process.env[busVariable]?.trim()
    ? { [busVariable]: process.env[busVariable] ?? '' }
    : {};
  const { busEvents } = loadConfig(busSetting, 'local');
  const stack = await startBenchStack(
    {
      ...busSetting,
      POSTDATE_DIRECT_DELAY_MAX_SECONDS: String(DIRECT_DELAY_MAX_SECONDS),
      POSTDATE_SCHEDULE_LEAD_SECONDS: String(SCHEDULE_LEAD_SECONDS),
      // The relay's second copy of an immediate message is counted: its lease is waited out.
      ...SHORT_LEASE_ENV,
    },
    // The authorizer invoked at every request, as alone (API Gateway's cache off) bills it: its key
    // read counted once per enqueue, not once per 30 s of the run (decision 0250).
    { quiet: false, countSandboxRequests: true, authorizerCacheTtlMs: 0 },
  );
  const rows: BenchRow[] = [];
  const scenarios: ScenarioBill[] = [];
  const details: Record<string, unknown> = {
    pricesCheckedOn: PRICES_CHECKED_ON,
    region: PRICES_REGION,
    messagesPerScenario: perScenario,
    busEvents,
    compression: { DIRECT_DELAY_MAX_SECONDS, SCHEDULE_LEAD_SECONDS, DEFERRED_DELAY_SECONDS },
    scenarios: {} as Record<string, unknown>,
  };
  try {
    // Warm every function once so cold-start reads (API key lookups are per request: no cache) do not
    // land in the first scenario, then let the pipeline go quiet.
    const warm = await enqueue(stack, { bodyBytes: 10, key: `cost-warm-${Date.now()}` });
    await waitForDelivery(stack, [warm.id], 30_000);
    await waitOutShortLease();
    await settle(stack);
    counter.take();
    logBytes.take();
    logBytes.takeSources();

    let webhook: WebhookLatencyProbe | undefined;
    for (const scenario of SCENARIOS) {
      if (scenario.webhook && !webhook) {
        webhook = await startWebhookLatencyProbe(stack);
        await settle(stack);
        counter.take();
        logBytes.take();
        logBytes.takeSources();
      }
      const ids: string[] = [];
      for (let i = 0; i < perScenario; i += 1) {
        const key = `cost-${scenario.name}-${i}-${Date.now()}`;
        const enqueued = scenario.attachment
          ? await enqueueWithAttachment(stack, { bodyBytes: scenario.bodyBytes, key }, scenario.attachment)
          : await enqueue(stack, {
              bodyBytes: scenario.bodyBytes,
              key,
              ...(scenario.deferred ? { delaySeconds: DEFERRED_DELAY_SECONDS } : {}),
            });
        ids.push(enqueued.id);
      }
      await waitForDelivery(stack, ids, DELIVERY_DEADLINE_MS);
      if (!scenario.deferred) await waitOutShortLease();
      await settle(stack);
      const requests = counter.take();
      const bytes = logBytes.take();
      const logSources = logBytes.takeSources();
      const load = scenario.attachment && { ...scenario.attachment, retentionDays: RETENTION_DAYS };
      // SES bills the attachments it sends per GB, beside its per-message price (as it counts them: encoded).
      const sesPerMillion =
        SES_PER_MILLION +
        (scenario.attachment
          ? (encodedAttachmentBytes(scenario.attachment.bytes) / 1024 ** 3) * PRICES.sesAttachmentGb.usd * 1e6
          : 0);
      const bills = {} as Record<Traffic, { usdPerMillion: number; bill: CostLine[] }>;
      for (const traffic of ['alone', 'busy'] as const) {
        const bill = billOf(requests, bytes, perScenario, traffic, load, busEvents);
        const perMillion = bill.reduce((sum, line) => sum + line.usdPerMillion, 0);
        bills[traffic] = { usdPerMillion: round(perMillion, 4), bill };
        const goal = scenario.goals?.[traffic];
        rows.push({
          ...ratioRow({
            metric: `${scenario.name}: $ per million, ${traffic === 'busy' ? 'busy (full batches)' : 'alone'}`,
            value: round(perMillion, 3),
            unit: '$/M',
            baselineLabel: 'SES $/M',
            baseline: round(sesPerMillion, 3),
            ...(scenario.attachment
              ? { note: `S3 storage for the ${RETENTION_DAYS}-day retention included` }
              : {}),
          }),
          ...(goal === undefined ? {} : { goal: `≤ $${goal}/M (issue 32)`, pass: perMillion <= goal }),
        });
      }
      options.log(
        `  ${scenario.name}: $${round(bills.alone.usdPerMillion, 3)} per million alone, $${round(bills.busy.usdPerMillion, 3)} busy (SES $${round(sesPerMillion, 3)})`,
      );
      for (const line of bills.alone.bill) {
        options.log(
          `    ${line.item.padEnd(58)} ${String(round(line.quantity, 3)).padStart(8)} ${line.unit.padEnd(10)} $${round(line.usdPerMillion, 3)}/M  (${line.how})`,
        );
      }
      scenarios.push({ name: scenario.name, sesPerMillion, ...bills });
      (details.scenarios as Record<string, unknown>)[scenario.name] = {
        usdPerMillion: bills.alone.usdPerMillion,
        bill: bills.alone.bill,
        busy: bills.busy,
        requests: summarize(requests, perScenario),
        logBytesPerMessage: Object.fromEntries(
          Object.entries(logSources).map(([key, value]) => [key, round(value / perScenario, 0)]),
        ),
      };
    }
    await webhook?.close();
    const file = writeLineItems(scenarios, perScenario);
    options.log(`  line items written to ${file}`);
  } finally {
    await stack.stop();
    counter.uninstall();
    logBytes.restore();
    if (previousMetrics === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
    else process.env.POWERTOOLS_METRICS_DISABLED = previousMetrics;
  }
  return {
    name: 'cost',
    title: `Cost per million messages on AWS (${PRICES_REGION} list prices of ${PRICES_CHECKED_ON}) vs SES`,
    rows,
    details,
    seconds: (Date.now() - started) / 1000,
  };
}

/** Waits until the event sources have nothing left and the last stream records were handed over. */
export async function settle(stack: { idle(): Promise<void> }): Promise<void> {
  await stack.idle();
  await sleep(1500);
  await stack.idle();
}

const isFunction = (origin: string): origin is FunctionName => origin in FUNCTION_MEMORY_MB;

/** How AWS prices one kind of request (bench/prices.ts). */
type RequestPrice = 'dynamodb units' | 'sqs' | 'free' | 's3 put' | 's3 get' | 'secret' | 'event';

/** Every `Service.Command` the model can price, and how. */
const REQUEST_PRICES = {
  'DynamoDB.GetItem': 'dynamodb units',
  'DynamoDB.PutItem': 'dynamodb units',
  'DynamoDB.UpdateItem': 'dynamodb units',
  'DynamoDB.DeleteItem': 'dynamodb units',
  'DynamoDB.Query': 'dynamodb units',
  'DynamoDB.BatchGetItem': 'dynamodb units',
  'DynamoDB.BatchWriteItem': 'dynamodb units',
  'DynamoDB.TransactWriteItems': 'dynamodb units',
  'DynamoDB.TransactGetItems': 'dynamodb units',
  'SQS.SendMessage': 'sqs',
  'SQS.SendMessageBatch': 'sqs',
  'SQS.DeleteMessage': 'sqs',
  'SQS.DeleteMessageBatch': 'sqs',
  'SQS.ChangeMessageVisibility': 'sqs',
  'SQS.ChangeMessageVisibilityBatch': 'sqs',
  'SQS.GetQueueAttributes': 'sqs',
  'SQS.ReceiveMessage': 'sqs',
  // Creating and deleting schedules is not billed; the invocation is (below).
  'Scheduler.CreateSchedule': 'free',
  'Scheduler.DeleteSchedule': 'free',
  'S3.PutObject': 's3 put',
  'S3.CopyObject': 's3 put',
  'S3.PutObjectTagging': 's3 put',
  'S3.GetObject': 's3 get',
  'S3.HeadObject': 's3 get',
  'SecretsManager.GetSecretValue': 'secret',
  'EventBridge.PutEvents': 'event',
} as const satisfies Record<string, RequestPrice>;

export type PricedRequest = keyof typeof REQUEST_PRICES;

/**
 * The cost model's expected list (issue 32): every request each function may make on a message's
 * path — enqueue (with an inline or uploaded attachment), relay, send, the relay's dropped copy, the
 * events and their webhook deliveries. A counted request that is not on its function's list stops
 * the bill (UnbilledRequestError): a new request on the path cannot go unbilled.
 * test/bench/billedRequests.test.ts compares it with the requests recorded on the wire.
 */
export const BILLED_REQUESTS: Readonly<Record<FunctionName, readonly PricedRequest[]>> = {
  api: [
    'DynamoDB.GetItem',
    'DynamoDB.PutItem',
    'DynamoDB.Query',
    'DynamoDB.TransactWriteItems',
    'DynamoDB.UpdateItem',
    // The api's own copy of an immediate message (POSTDATE_API_IMMEDIATE_COPY).
    'SQS.SendMessageBatch',
    'S3.PutObject',
    'S3.CopyObject',
    'S3.GetObject',
    'S3.HeadObject',
  ],
  authorizer: ['DynamoDB.GetItem', 'DynamoDB.UpdateItem'],
  relay: [
    'DynamoDB.GetItem',
    'DynamoDB.UpdateItem',
    'SQS.SendMessageBatch',
    'Scheduler.CreateSchedule',
    'Scheduler.DeleteSchedule',
  ],
  sender: [
    'DynamoDB.GetItem',
    'DynamoDB.BatchGetItem',
    'DynamoDB.PutItem',
    'DynamoDB.UpdateItem',
    'DynamoDB.Query',
    'DynamoDB.TransactWriteItems',
    // The early copy of a deferred message, put back with the exact remaining delay.
    'SQS.SendMessageBatch',
    'SQS.ChangeMessageVisibility',
    'SQS.ChangeMessageVisibilityBatch',
    // Each attachment asked for before MAIL FROM, then read after 354 (decision 0171).
    'S3.HeadObject',
    'S3.GetObject',
    'SecretsManager.GetSecretValue',
  ],
  events: [
    'DynamoDB.Query',
    'DynamoDB.PutItem',
    // A message with attachments: its record read before and after tagging them (decision 0144).
    'DynamoDB.GetItem',
    'SQS.SendMessageBatch',
    'EventBridge.PutEvents',
    'S3.PutObjectTagging',
    // At the end: each attachment's written time; one written on an earlier day is copied onto
    // itself, so the lifecycle counts the retention from the end (decision 0191).
    'S3.HeadObject',
    'S3.CopyObject',
  ],
  webhooks: ['DynamoDB.GetItem', 'DynamoDB.UpdateItem', 'SQS.SendMessage'],
  // Per period, not per message: its requests are listed so a sweep that lands in a run is priced.
  // The DLQ's count every run; the walk (and its SendMessageBatch of renewed copies) only when the
  // count or a copy's age asks for it (decisions 0141, 0148).
  sweeper: [
    'DynamoDB.Query',
    'DynamoDB.GetItem',
    'DynamoDB.UpdateItem',
    'SQS.SendMessageBatch',
    'SQS.GetQueueAttributes',
    'SQS.ReceiveMessage',
    'DynamoDB.BatchGetItem',
    'SQS.DeleteMessageBatch',
    'SQS.ChangeMessageVisibilityBatch',
  ],
  // Only when SES reports a bounce or complaint: not on a delivered message's path.
  bounces: [],
};

/** A counted request its function's list in BILLED_REQUESTS does not have: the bill would miss it. */
export class UnbilledRequestError extends Error {
  override readonly name = 'UnbilledRequestError';
  constructor(readonly unbilled: readonly string[]) {
    super(
      `requests the cost model does not bill (add them to BILLED_REQUESTS with a price): ${unbilled.join(', ')}`,
    );
  }
}

/** SQS bills every 64 KB chunk of a request's payload as one request. */
const sqsRequests = (request: CountedRequest): number => Math.max(1, Math.ceil(request.inputBytes / 65_536));
/** EventBridge bills every 64 KB chunk of an entry as one event. */
const eventChunks = (entryBytes: number): number => Math.max(1, Math.ceil(entryBytes / 65_536));

/** The bytes of one access log line: the deployed format (lib/constructs/Api.ts) with typical values. */
export const ACCESS_LOG_LINE_BYTES = Buffer.byteLength(
  Object.entries(ACCESS_LOG_SAMPLE).reduce(
    (line, [variable, value]) => line.replaceAll(variable, value),
    ACCESS_LOG_FORMAT,
  ),
);

const isWebhookQueue = (queue: string) => queue.endsWith(`-${WEBHOOK_QUEUE.logicalName}`);

/**
 * How a function may give the log bytes it measured: all per message (a number, as the templates
 * benchmark does), or split into what each message writes and what each invocation of a function
 * writes once (captureLogBytes).
 */
export interface LogBytes {
  readonly perItem: number;
  readonly perInvocation: Readonly<Partial<Record<FunctionName, number>>>;
}

/** The share of a batch function's per-item time a full batch's wall time takes: ceil(batch / lanes) of batch. */
function laneShare(fn: FunctionName): number {
  if (!(fn in LANES)) return 1;
  const batch = BUSY_ITEMS_PER_INVOCATION[fn as keyof typeof LANES];
  return Math.ceil(batch / LANES[fn as keyof typeof LANES]) / batch;
}

export function billOf(
  countedRequests: readonly CountedRequest[],
  logBytes: number | LogBytes,
  messages: number,
  traffic: Traffic = 'alone',
  attachment?: AttachmentLoad,
  /** The types the stack puts on the bus (POSTDATE_BUS_EVENTS): the events billed when no bus answers. */
  busEvents: BusEvents = BUS_EVENTS_DEFAULT,
): CostLine[] {
  const busy = traffic === 'busy';
  // Busy, API Gateway answers from its authorizer cache: the authorizer is not invoked, so it reads
  // nothing. Alone (the cache off) it reads the key at every request: it caches no allowance (0249).
  const requests = busy ? countedRequests.filter((r) => r.origin !== 'authorizer') : countedRequests;
  /** Requests that carry a batch: one per message alone, one per full batch when busy. */
  const batched = (entries: number, perBatch: number) => (busy ? entries / perBatch : entries);
  const lines: CostLine[] = [];
  const per = (value: number) => value / messages;
  const add = (item: string, total: number, unit: string, usdEach: number, how: CostLine['how']) => {
    if (total === 0) return;
    lines.push({ item, quantity: per(total), unit, usdPerMillion: per(total) * usdEach * 1e6, how });
  };

  // The front door: one HTTP API request per enqueue, and its access log line.
  add('API Gateway HTTP API request', messages, 'requests', PRICES.httpApiRequest.usd, 'derived');
  add(
    'API Gateway access log (CloudWatch Logs ingest, one line per request)',
    (messages * ACCESS_LOG_LINE_BYTES) / 1e3,
    'KB',
    PRICES.cloudwatchLogsIngestGb.usd / 1e6,
    'derived',
  );

  // Requests the functions made, by function and call; each must be on its function's list.
  const groups = new Map<string, CountedRequest[]>();
  const unbilled = new Set<string>();
  for (const request of requests) {
    // `other`: the benchmark's own requests, and pre-signing an upload URL (the client's middleware
    // runs, nothing is sent; the PUT it signs is the client's, billed below). `platform`: below.
    if (request.origin === 'other' || request.origin === 'platform') continue;
    const call = `${request.service}.${request.command}`;
    const listed =
      isFunction(request.origin) && (BILLED_REQUESTS[request.origin] as readonly string[]).includes(call);
    if (!listed) {
      unbilled.add(`${request.origin} ${call}`);
      continue;
    }
    const key = `${request.origin} ${call}`;
    groups.set(key, [...(groups.get(key) ?? []), request]);
  }
  if (unbilled.size > 0) throw new UnbilledRequestError([...unbilled].sort());
  for (const [key, group] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    const first = group[0];
    if (!first) continue;
    const price = REQUEST_PRICES[`${first.service}.${first.command}` as PricedRequest];
    const calls = `${key} (${round(per(group.length), 2)} calls)`;
    if (price === 'dynamodb units') {
      const write = group.reduce((sum, r) => sum + r.writeUnits, 0);
      const read = group.reduce((sum, r) => sum + r.readUnits, 0);
      add(`${calls} WRU`, write, 'WRU', PRICES.dynamodbWriteRequestUnit.usd, 'counted');
      add(`${calls} RRU`, read, 'RRU', PRICES.dynamodbReadRequestUnit.usd, 'counted');
    } else if (price === 'sqs') {
      const entries = group.reduce((sum, r) => sum + (r.command === 'SendMessageBatch' ? r.items : 0), 0);
      // Only a batch function's SendMessageBatch fills up when busy; the api's copy and the sender's
      // re-delayed one are one entry per request whatever the traffic.
      const filled = busy && entries > 0 && isBatchRequest(first);
      add(
        key,
        filled ? batched(entries, BUSY_BATCH.sqsEntries) : group.reduce((sum, r) => sum + sqsRequests(r), 0),
        'requests',
        PRICES.sqsRequest.usd,
        filled ? 'derived' : 'counted',
      );
    } else if (price === 'event') {
      const events = group.reduce(
        (sum, r) => sum + r.eventEntryBytes.reduce((n, bytes) => n + eventChunks(bytes), 0),
        0,
      );
      add(`EventBridge PutEvents: ${key}`, events, 'events', PRICES.eventbridgePutEvent.usd, 'counted');
    } else {
      const usd = {
        free: 0,
        's3 put': PRICES.s3PutRequest.usd,
        's3 get': PRICES.s3GetRequest.usd,
        secret: PRICES.secretsManagerApiCall.usd,
      }[price];
      add(key, group.length, 'requests', usd, 'counted');
    }
  }

  if (attachment) {
    // The client's PUT to the pre-signed URL is billed to the bucket's owner; it is no SDK call here.
    if (attachment.uploaded)
      add(
        'S3 PUT by the client (the pre-signed upload)',
        messages,
        'requests',
        PRICES.s3PutRequest.usd,
        'derived',
      );
    // messages/ keeps the bytes for the retention after the (immediate) end; uploads/ a day more.
    const days = attachment.retentionDays + (attachment.uploaded ? 1 : 0);
    add(
      `S3 storage (${days} days, S3 Standard)`,
      messages * (attachment.bytes / 1024 ** 3) * (days / 30),
      'GB-month',
      PRICES.s3StorageGbMonth.usd,
      'modelled',
    );
  }

  // What the platform does for us, seen through the local event sources and the scheduler emulator.
  const platform = requests.filter((r) => r.origin === 'platform');
  const sqsOf = (command: string, webhook: boolean) =>
    platform.filter(
      (r) =>
        r.service === 'SQS' &&
        r.command.startsWith(command) &&
        isWebhookQueue(r.queue) === webhook &&
        (command !== 'ReceiveMessage' || r.items > 0),
    );
  const copiesOf = (webhook: boolean) =>
    sqsOf('ReceiveMessage', webhook).reduce((sum, r) => sum + r.items, 0);
  const senderCopies = copiesOf(false);
  const webhookCopies = copiesOf(true);
  for (const [source, webhook, copies, perBatch] of [
    ['sender', false, senderCopies, SENDER_QUEUE.batchSize],
    ['webhook', true, webhookCopies, WEBHOOK_DELIVERY.batchSize],
  ] as const) {
    add(
      `${source} event source: ReceiveMessage that returned copies`,
      busy ? batched(copies, perBatch) : sqsOf('ReceiveMessage', webhook).length,
      'requests',
      PRICES.sqsRequest.usd,
      busy ? 'derived' : 'counted',
    );
    add(
      `${source} event source: DeleteMessageBatch`,
      busy ? batched(copies, perBatch) : sqsOf('DeleteMessage', webhook).length,
      'requests',
      PRICES.sqsRequest.usd,
      busy ? 'derived' : 'counted',
    );
  }
  const deliveries = platform.filter((r) => r.service === 'SQS' && r.command === 'SendMessage');
  add(
    'Scheduler target delivery: SQS SendMessage',
    deliveries.length,
    'requests',
    PRICES.sqsRequest.usd,
    'counted',
  );
  add(
    'EventBridge Scheduler invocation',
    deliveries.length,
    'invocations',
    PRICES.schedulerInvocation.usd,
    'counted',
  );
  const reads = platform.filter((r) => r.command === 'GetRecords' && r.items > 0);
  add('stream event sources: GetRecords (free for Lambda triggers)', reads.length, 'requests', 0, 'counted');

  // The stream's records, each once (both local runners read every record).
  const records = new Map<string, SeenStreamRecord>();
  for (const read of reads)
    for (const record of read.streamRecords) records.set(record.sequenceNumber, record);
  const seen = [...records.values()];
  const relayRecords = seen.filter((r) => r.relay).length;
  const producerRecords = seen.filter((r) => r.producer).length;
  // The events on the bus: counted when a bus answered PutEvents, else each event the producer makes
  // of a record and puts on the bus (the local stack has no bus: local/EMULATORS.md).
  const derivedEvents = seen.reduce(
    (sum, r) =>
      r.eventEntryBytes === undefined || r.eventType === undefined || !putsOnBus(r.eventType, busEvents)
        ? sum
        : sum + eventChunks(r.eventEntryBytes),
    0,
  );
  if (!groups.has('events EventBridge.PutEvents')) {
    add(
      `EventBridge PutEvents: events derived from the stream records (no bus locally; bus events: ${String(busEvents)})`,
      derivedEvents,
      'events',
      PRICES.eventbridgePutEvent.usd,
      'derived',
    );
  }

  // Invocations: api and authorizer once per enqueue (authorizer caching off: the worst case); the
  // relay and the event producer once per stream record that passes their event filters; the sender
  // and the webhook delivery once per copy. Batches of one alone; when busy, API Gateway answers from
  // its authorizer cache and the batches are full.
  const invocationsWhen = (full: boolean): Record<FunctionName, number> => {
    const of = (items: number, fn: keyof typeof BUSY_ITEMS_PER_INVOCATION) =>
      full ? items / BUSY_ITEMS_PER_INVOCATION[fn] : items;
    return {
      api: messages,
      authorizer: full ? 0 : messages,
      relay: of(relayRecords, 'relay'),
      events: of(producerRecords, 'events'),
      sender: of(senderCopies, 'sender'),
      webhooks: of(webhookCopies, 'webhooks'),
      sweeper: 0,
      bounces: 0,
    };
  };
  const invocations = invocationsWhen(busy);
  const aloneInvocations = invocationsWhen(false);
  /** A function's invocations now per invocation alone: what its once-per-invocation work scales by. */
  const invocationShare = (fn: FunctionName) =>
    aloneInvocations[fn] > 0 ? invocations[fn] / aloneInvocations[fn] : 1;
  const totalInvocations = Object.values(invocations).reduce((sum, n) => sum + n, 0);
  add(
    busy
      ? 'Lambda invocations (api; relay, events, sender, webhooks in full batches; authorizer cached)'
      : 'Lambda invocations (api, authorizer, relay, events, sender, webhooks)',
    totalInvocations,
    'invocations',
    PRICES.lambdaRequest.usd,
    'derived',
  );

  // Lambda bills wall time. Alone, an invocation's calls run one after another. Busy, a batch
  // function's items run in its lanes (LANES): the invocation lasts about ceil(batch / lanes) items'
  // chains, and its once-per-batch requests are shared by the whole batch.
  const callMs = (r: CountedRequest) =>
    r.service === 'DynamoDB' ? DURATION_MODEL_MS.perDynamodbCall : DURATION_MODEL_MS.perSqsOrSchedulerCall;
  let gbSeconds = 0;
  for (const fn of Object.keys(invocations) as FunctionName[]) {
    const mine = requests.filter((r) => r.origin === fn);
    const itemMs =
      mine.filter((r) => !isBatchRequest(r)).reduce((sum, r) => sum + callMs(r), 0) +
      (fn === 'sender' ? messages * DURATION_MODEL_MS.perSmtpSend : 0) +
      (fn === 'webhooks' ? webhookCopies * DURATION_MODEL_MS.perWebhookPost : 0) +
      movedMb(fn, attachment) * messages * DURATION_MODEL_MS.perAttachmentMb;
    const batchCallMs = (r: CountedRequest) =>
      callMs(r) *
      (busy && r.command === 'SendMessageBatch' ? r.items / BUSY_BATCH.sqsEntries : invocationShare(fn));
    const sumMs = (calls: readonly CountedRequest[]) => calls.reduce((sum, r) => sum + batchCallMs(r), 0);
    const batchCalls = mine.filter(isBatchRequest);
    const isPutEvents = (r: CountedRequest) => r.service === 'EventBridge' && r.command === 'PutEvents';
    let batchMs = sumMs(batchCalls.filter((r) => !isPutEvents(r)));
    if (fn === 'events') {
      // The producer puts its events on the bus beside its webhook copies' SendMessageBatch (decision
      // 0115): the bus adds only what it outlasts them. Locally no bus answers: one PutEvents an
      // invocation, modelled, unless the stack puts none of the events on the bus.
      const bus = groups.has('events EventBridge.PutEvents')
        ? sumMs(batchCalls.filter(isPutEvents))
        : derivedEvents > 0
          ? invocations.events * DURATION_MODEL_MS.perSqsOrSchedulerCall
          : 0;
      const copies = sumMs(batchCalls.filter((r) => r.command === 'SendMessageBatch'));
      batchMs += Math.max(0, bus - copies);
    }
    const ms =
      invocations[fn] * DURATION_MODEL_MS.handlerOverhead + batchMs + itemMs * (busy ? laneShare(fn) : 1);
    gbSeconds += (FUNCTION_MEMORY_MB[fn] / 1024) * (ms / 1000);
  }
  add(
    busy
      ? 'Lambda compute, arm64 (duration modelled: prices.ts; a full batch in its lanes)'
      : 'Lambda compute, arm64 (duration modelled: prices.ts)',
    gbSeconds,
    'GB-s',
    PRICES.lambdaArmGbSecond.usd,
    'modelled',
  );

  // Lines written once per invocation (a batch's summary, an EMF document's frame) come once per
  // batch when busy; the lines about one message, and each EMF datapoint, stay per message.
  const logs = typeof logBytes === 'number' ? { perItem: logBytes, perInvocation: {} } : logBytes;
  const functionLines = (Object.entries(logs.perInvocation) as [FunctionName, number][]).reduce(
    (sum, [fn, bytes]) => sum + bytes * invocationShare(fn),
    logs.perItem,
  );
  const ingested = functionLines + totalInvocations * PLATFORM_LOG_BYTES_PER_INVOCATION;
  add(
    'CloudWatch Logs ingest (function logs + EMF measured, platform lines modelled)',
    ingested / 1e3,
    'KB',
    PRICES.cloudwatchLogsIngestGb.usd / 1e6,
    'derived',
  );
  return lines;
}

interface ScenarioBill {
  readonly name: string;
  readonly sesPerMillion: number;
  readonly alone: { readonly usdPerMillion: number; readonly bill: readonly CostLine[] };
  readonly busy: { readonly usdPerMillion: number; readonly bill: readonly CostLine[] };
}

const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

/**
 * bench/results/cost-line-items.md: every scenario's bill, line by line (quantity per message, unit,
 * $ per million, how it was got), then every price with its source, so that a reader can check each
 * line against AWS's price list.
 */
function writeLineItems(scenarios: readonly ScenarioBill[], messages: number): string {
  const money = (usd: number) => `$${round(usd, 4)}`;
  const out: string[] = [
    `# Cost line items per message (${PRICES_REGION} list prices of ${PRICES_CHECKED_ON})`,
    '',
    `${messages} messages per scenario. Quantities are per message; $/M is dollars per million messages.`,
    '"counted": requests and units recorded on the local stack; "derived": from counted requests and',
    'the deployed settings (batch sizes, the access log format); "modelled": Lambda duration (bench/prices.ts).',
    '',
  ];
  for (const scenario of scenarios) {
    for (const traffic of ['alone', 'busy'] as const) {
      const { usdPerMillion, bill } = scenario[traffic];
      out.push(
        `## ${scenario.name}, ${traffic}: ${money(usdPerMillion)}/M (SES ${money(scenario.sesPerMillion)}/M)`,
        '',
      );
      out.push('| item | per message | unit | $/M | how |', '|---|---:|---|---:|---|');
      for (const line of bill) {
        out.push(
          `| ${line.item.replaceAll('|', '\\|')} | ${round(line.quantity, 4)} | ${line.unit} | ${money(line.usdPerMillion)} | ${line.how} |`,
        );
      }
      out.push(`| **subtotal** | | | **${money(usdPerMillion)}** | |`, '');
    }
  }
  out.push('## Prices', '', '| price | $ | per | source |', '|---|---:|---|---|');
  for (const [name, price] of Object.entries(PRICES) as [string, Price][]) {
    out.push(`| ${name} | ${price.usd} | ${price.per} | ${price.source} |`);
  }
  out.push(
    '',
    `API Gateway access log line: ${ACCESS_LOG_LINE_BYTES} bytes (lib/constructs/Api.ts's format, values in prices.ts).`,
    `Duration model (ms): ${JSON.stringify(DURATION_MODEL_MS)}; memory (MB): ${JSON.stringify(FUNCTION_MEMORY_MB)}.`,
    '',
  );
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = `${RESULTS_DIR}cost-line-items.md`;
  writeFileSync(file, out.join('\n'));
  return file;
}

/** The MB of one message's attachment a function moves: the sender always, the api an inline file. */
function movedMb(fn: FunctionName, attachment: AttachmentLoad | undefined): number {
  if (!attachment) return 0;
  const mb = attachment.bytes / (1024 * 1024);
  if (fn === 'sender') return mb;
  return fn === 'api' && !attachment.uploaded ? mb : 0;
}

/** An enqueue with one attachment: inline base64, or uploaded first through POST /v1/attachments. */
async function enqueueWithAttachment(
  stack: Awaited<ReturnType<typeof startBenchStack>>,
  input: { readonly bodyBytes: number; readonly key: string },
  attachment: { readonly bytes: number; readonly uploaded: boolean },
): Promise<{ id: string }> {
  const headers = { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' };
  const bytes = randomBytes(attachment.bytes);
  let reference: Record<string, string>;
  if (attachment.uploaded) {
    const reserved = await fetch(`${stack.apiUrl}/v1/attachments`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        filename: 'bench.bin',
        content_type: 'application/octet-stream',
        size: bytes.length,
      }),
    });
    if (reserved.status !== 201) throw new Error(`POST /v1/attachments answered ${reserved.status}`);
    const { id, upload_url } = (await reserved.json()) as { id: string; upload_url: string };
    const put = await fetch(upload_url, {
      method: 'PUT',
      body: bytes,
      headers: { 'content-type': 'application/octet-stream' },
    });
    if (!put.ok) throw new Error(`the upload answered ${put.status}`);
    reference = { attachment_id: id };
  } else {
    reference = { filename: 'bench.bin', content: bytes.toString('base64') };
  }
  const body = { ...JSON.parse(enqueueBody(input)), attachments: [reference] };
  const response = await fetch(`${stack.apiUrl}/v1/messages`, {
    method: 'POST',
    headers: { ...headers, 'idempotency-key': input.key },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 202) throw new Error(`enqueue answered ${response.status}: ${text.slice(0, 300)}`);
  return { id: (JSON.parse(text) as { id: string }).id };
}

function summarize(requests: readonly CountedRequest[], messages: number) {
  const table = new Map<string, { calls: number; wru: number; rru: number; failed: number }>();
  for (const r of requests) {
    const key = `${r.origin} ${r.service}.${r.command} (${r.caller})`;
    const entry = table.get(key) ?? { calls: 0, wru: 0, rru: 0, failed: 0 };
    entry.calls += 1;
    entry.wru += r.writeUnits;
    entry.rru += r.readUnits;
    if (!r.ok) entry.failed += 1;
    table.set(key, entry);
  }
  return Object.fromEntries(
    [...table].map(([key, v]) => [
      key,
      {
        callsPerMessage: round(v.calls / messages, 3),
        wruPerMessage: round(v.wru / messages, 3),
        rruPerMessage: round(v.rru / messages, 3),
        failed: v.failed,
      },
    ]),
  );
}

/** Which function writes an EMF document, from the metrics in it (core/metricNames.ts). */
const METRIC_FUNCTION = new Map<string, FunctionName>([
  ...[
    ...Object.values(SWEEPER_METRIC.waiting),
    SWEEPER_METRIC.redispatched,
    SWEEPER_METRIC.staleDeadLettersRemoved,
  ].map((name) => [name, 'sweeper'] as const),
  ...Object.values(SENDER_METRIC).map((name) => [name, 'sender'] as const),
  ...Object.values(WEBHOOK_METRIC).map(
    (name) => [name, name === WEBHOOK_METRIC.eventsPublished ? 'events' : 'webhooks'] as const,
  ),
]);

interface ParsedLine {
  readonly service?: string;
  readonly message?: string;
  readonly level?: string;
  readonly id?: unknown;
  readonly _aws?: {
    readonly CloudWatchMetrics?: readonly { readonly Metrics?: readonly { Name: string }[] }[];
  };
  readonly [key: string]: unknown;
}

function parseLine(line: string): ParsedLine | undefined {
  try {
    return JSON.parse(line) as ParsedLine;
  } catch {
    return undefined;
  }
}

function logSource(parsed: ParsedLine | undefined): string {
  if (!parsed) return 'other';
  if (parsed._aws) return `EMF metrics (${parsed.service ?? 'unknown'})`;
  return `${parsed.service ?? 'unknown'} ${parsed.level ?? ''} "${parsed.message ?? ''}"`;
}

/**
 * Whose bytes a line is: an EMF document's datapoints are the message's, its frame (directives,
 * dimensions, timestamp) the invocation's that flushed it (one per invocation, whatever the batch);
 * a function's line about one message (it names the message's `id`) is the message's, any other
 * line of a function (a batch's summary) its invocation's.
 */
function shareOf(parsed: ParsedLine | undefined, bytes: number): { fn?: FunctionName; perItem: number } {
  if (!parsed) return { perItem: bytes };
  if (parsed._aws) {
    const names = (parsed._aws.CloudWatchMetrics ?? []).flatMap((d) => (d.Metrics ?? []).map((m) => m.Name));
    const fn = names.map((name) => METRIC_FUNCTION.get(name)).find((found) => found !== undefined);
    const values = names.reduce(
      (sum, name) => sum + Buffer.byteLength(JSON.stringify(parsed[name] ?? '')),
      0,
    );
    return fn === undefined ? { perItem: bytes } : { fn, perItem: values };
  }
  const fn = parsed.service?.replace(/^postdate-/, '');
  if (fn === undefined || !isFunction(fn) || parsed.id !== undefined) return { perItem: bytes };
  return { fn, perItem: 0 };
}

/**
 * Counts the bytes of JSON lines (Powertools logs and EMF blobs) written to stdout/stderr, which is
 * what CloudWatch Logs would ingest, and keeps them off the terminal.
 */
export function captureLogBytes() {
  let perItem = 0;
  let perInvocation: Partial<Record<FunctionName, number>> = {};
  let bySource = new Map<string, number>();
  const streams = [process.stdout, process.stderr] as const;
  // The functions themselves, not bound copies: restore() gives each stream back the very one it had.
  const originals = streams.map((stream) => stream.write);
  streams.forEach((stream, index) => {
    const original = originals[index];
    if (!original) return;
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      if (text.startsWith('{')) {
        // A sandbox's output may arrive as several lines in one chunk.
        for (const line of text.split('\n')) {
          if (line.trim() === '') continue;
          const size = Buffer.byteLength(line) + 1;
          const parsed = parseLine(line);
          const key = logSource(parsed);
          bySource.set(key, (bySource.get(key) ?? 0) + size);
          const share = shareOf(parsed, size);
          perItem += share.perItem;
          if (share.fn !== undefined) {
            perInvocation[share.fn] = (perInvocation[share.fn] ?? 0) + size - share.perItem;
          }
        }
        const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
        callback?.();
        return true;
      }
      return (original as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
    }) as typeof stream.write;
  });
  return {
    /** The bytes since the last call, per message and per invocation of each function, emptied. */
    take(): LogBytes {
      const taken = { perItem, perInvocation };
      perItem = 0;
      perInvocation = {};
      return taken;
    },
    /** Bytes by function and line kind since the last call, emptied. */
    takeSources(): Record<string, number> {
      const taken = Object.fromEntries(bySource);
      bySource = new Map();
      return taken;
    },
    restore() {
      streams.forEach((stream, index) => {
        const original = originals[index];
        if (original) stream.write = original as typeof stream.write;
      });
    },
  };
}
