/**
 * The capacity model behind docs/capacity.md (DESIGN §4, "No hot partitions"): the requests one
 * message makes on each path, as data read from the code, and what they load at a given rate —
 * every quota and every partition key on the way, and the rate at which each one binds.
 *
 * Pure arithmetic: no AWS SDK, no clock, no unseeded randomness (the one simulation, of a batch of
 * early copies in the sender's lanes, draws from a fixed seed). The numbers the code defines are imported from where they
 * are defined (shard counts, batch sizes, event source concurrency, prop defaults); the few the code
 * keeps inline are copied below with the file that holds them (test/bench/capacityModel.test.ts
 * checks those files still say so). Quotas are AWS's defaults, each with its page in
 * docs/capacity.md. `npm run capacity` prints the tables the page carries; the test fails when the
 * page and the model disagree.
 */
import { pathToFileURL } from 'node:url';
import { SQS_MAX_BATCH } from '../lambdas/core/queueLimits.js';
import { LIMITS as REQUEST_LIMITS } from '../lambdas/core/requestLimits.js';
import { SENDER_LANES } from '../lambdas/sender/createSenderHandler.js';
import { GATE_READ_REUSE_MS } from '../lambdas/sender/relayGate.js';
import { SUPPRESSION_MAX_AGE_MS } from '../lambdas/store/suppressionList.js';
import { INDEX_SHARDS, SUPPRESSION_SHARDS, WEBHOOK_DELIVERY_SHARDS } from '../lambdas/store/tableLayout.js';
import { TEMPLATE_HEAD_MAX_AGE_MS } from '../lambdas/store/templateStore.js';
import { SWEEP_PACE, SWEEP_RESERVED_MS } from '../lambdas/sweeper/sweep.js';
import { WEBHOOK_ENDPOINT_MAX_AGE_MS } from '../lambdas/webhooks/deliverCopy.js';
import { EVENTS_STREAM, RELAY_STREAM, SENDER_QUEUE } from '../lib/eventSourceLayout.js';
import { POSTDATE_DEFAULTS, SQS_POLLER_INVOCATIONS, SWEEPER_TIMEOUT_SECONDS } from '../lib/postdateProps.js';
import { WEBHOOK_DELIVERY } from '../lib/webhookLayout.js';

/** What the model assumes about the traffic and the time things take (docs/capacity.md §1). */
export const ASSUMPTIONS = {
  /** Messages per second, all of one tenant (the worst case for its partition keys). */
  rate: 10_000,
  /** The body item in write units as stored: a 4 KB HTML mail, compressed (docs/data-model.md). */
  bodyUnits: 2,
  recipients: 1,
  /** Subscribed webhook endpoints of the tenant, each subscribed to every event type. */
  endpoints: 1,
  /** A delivery item (the event's JSON and its bookkeeping) in write units. */
  deliveryUnits: 2,
  apiSeconds: 0.04,
  smtpSeconds: 0.25,
  /** The sender's DynamoDB round trips around one send: state read, claim with body read, outcome. */
  tableSecondsPerSend: 0.03,
  /** A copy that is read and dropped, or read and put back with its remaining delay. */
  quickCopySeconds: 0.01,
  /** Early copies of one batch: how many batches the simulation of their lanes averages over. */
  earlyBatchesSimulated: 20_000,
  streamBatchSeconds: 0.1,
  endpointSeconds: 0.3,
} as const;

/** Inline in the code (the test checks each file still says so). */
export const INLINE = {
  /** lambdas/adapters/EventBridgeBus.ts: `PUT_EVENTS_MAX = 10`, events per PutEvents. */
  eventsPerPut: 10,
  /** lambdas/adapters/smtpCredentials.ts: `5 * 60_000`, how long a container keeps the SMTP secret. */
  secretCacheSeconds: 300,
  /**
   * lambdas/sender/createSenderHandler.ts: `maxEarlyWaitMs = 1000`. A copy queued with
   * `DelaySeconds = floor(remaining)` arrives up to this early and waits it out in process.
   */
  maxEarlyWaitSeconds: 1,
} as const;

/** Status changes that are events on every path: `scheduled` at acceptance, then `sent`. */
const EVENTS_PER_MESSAGE = 2;
/** State records the event producer's filter passes: the INSERT, the claim and the outcome. */
const EVENT_RECORDS_PER_MESSAGE = 3;

export type LimitKind = 'prop' | 'code' | 'quota' | 'hard' | 'design' | 'hot key';

export interface Limit {
  readonly label: string;
  readonly capacity: number;
  readonly kind: LimitKind;
  /** What moves it. */
  readonly moves: string;
}

const DEFAULTS = POSTDATE_DEFAULTS;

/** The limits that are not one partition key. */
export const LIMITS = {
  senderMaxConcurrency: {
    label: '`senderMaxConcurrency` (sender event source)',
    capacity: DEFAULTS.senderMaxConcurrency,
    kind: 'prop',
    moves: '`-c senderMaxConcurrency=…` (at most 1,000; past it `senderPollers`)',
  },
  apiStage: {
    label: '`apiThrottle.rateLimit` (the stage)',
    capacity: DEFAULTS.apiThrottle.rateLimit,
    kind: 'prop',
    moves: '`-c apiRateLimit=… -c apiBurstLimit=…`',
  },
  webhookConcurrency: {
    label: '`webhookMaxConcurrency` (webhook delivery event source)',
    capacity: WEBHOOK_DELIVERY.maxConcurrency,
    kind: 'prop',
    moves: '`-c webhookMaxConcurrency=…` (at most 1,000)',
  },
  apiAccount: {
    label: 'API Gateway account throttle, rps',
    capacity: 10_000,
    kind: 'quota',
    moves: 'quota raise (2,500 in newer Regions); a batch enqueue',
  },
  lambdaConcurrency: {
    label: 'Lambda concurrent executions',
    capacity: 1_000,
    kind: 'quota',
    moves: 'quota raise ("tens of thousands")',
  },
  lambdaInvocations: {
    label: 'Lambda invocations/s (10 × concurrency)',
    capacity: 10 * 1_000,
    kind: 'quota',
    moves: 'follows the concurrency quota',
  },
  // Standard mode: MaximumConcurrency's top. Provisioned mode (`senderPollers`, decision 0103):
  // SQS_POLLER_INVOCATIONS batches per poller, up to 2,000 pollers.
  senderEventSource: {
    label: 'SQS event source: 1,000 batches at once, or 10 × maximum pollers',
    capacity: 1_000,
    kind: 'prop',
    moves: `\`senderPollers\` (\`-c senderMaxPollers=…\`): ${SQS_POLLER_INVOCATIONS} batches a poller, at most ${(SQS_POLLER_INVOCATIONS * 2_000).toLocaleString('en-US')}`,
  },
  // One group's head: each replica an item of 3,000 R/s; the reads spread over them (decision 0104).
  groupHeadReplicas: {
    label: '`groupHeadReplicas` (the group head, 3,000 R/s a replica)',
    capacity: DEFAULTS.groupHeadReplicas,
    kind: 'prop',
    moves: '`-c groupHeadReplicas=…` (at most 32; every raise writes each)',
  },
  tableWrites: {
    label: 'table writes (on-demand, per table)',
    capacity: 40_000,
    kind: 'quota',
    moves: 'quota raise; pre-warm (`WarmThroughput`)',
  },
  tableReads: {
    label: 'table reads (on-demand, per table)',
    capacity: 40_000,
    kind: 'quota',
    moves: 'quota raise; pre-warm',
  },
  byStatusWrites: {
    label: 'index `by_status` writes',
    capacity: 40_000,
    kind: 'quota',
    moves: 'quota raise',
  },
  dueWrites: { label: 'index `due` writes', capacity: 40_000, kind: 'quota', moves: 'quota raise' },
  byTenantWrites: {
    label: 'index `by_tenant` writes',
    capacity: 40_000,
    kind: 'quota',
    moves: 'quota raise',
  },
  schedulerCreate: {
    label: 'Scheduler `CreateSchedule`/s',
    capacity: 5_000,
    kind: 'quota',
    moves: 'quota raise ("tens of thousands")',
  },
  schedulerInvoke: {
    label: 'Scheduler invocations/s',
    capacity: 1_000,
    kind: 'quota',
    moves: 'quota raise ("tens of thousands")',
  },
  putEvents: {
    label: 'EventBridge `PutEvents`/s (us-east-1)',
    capacity: 10_000,
    kind: 'quota',
    moves: 'quota raise (2,400 in us-east-2, fewer elsewhere)',
  },
  secretReads: {
    label: 'Secrets Manager `GetSecretValue`/s',
    capacity: 10_000,
    kind: 'quota',
    moves: 'quota raise',
  },
  sqsInFlight: {
    label: 'send queue in flight (~120,000)',
    capacity: 120_000,
    kind: 'quota',
    moves: 'support request; shorter invocations',
  },
} as const satisfies Record<string, Limit>;

export type LimitId = keyof typeof LIMITS;

/** Partition keys that take more than the spread load of a message id. */
export interface HotKey {
  readonly key: string;
  /** Whose traffic lands on it. */
  readonly scope: string;
  /** How many partition-key values share the load evenly (shards); 1 for one item. */
  readonly shards: number;
  /**
   * Replicated items (the group head): every write lands on each, the reads spread over them, so
   * the reads load this prop (replicas needed) instead of one partition.
   */
  readonly readsReplicatedBy?: LimitId;
  readonly moves: string;
}

const shardRange = (shards: number) => `{0..${shards - 1}}`;

/**
 * Warm functions at 10,000 msg/s (docs/capacity.md §4: the api ~400, the sender ~870 on the plain
 * path; the delivery function as many as `webhookMaxConcurrency` needs there, ~660). A read cached
 * per warm function is made once per max age by each, whatever the rate: per message, it is that many
 * reads a second over 10,000.
 */
export const WARM_AT_10K = { api: 400, sender: 870, webhooks: 660 } as const;
const cachedReadsPerMessage = (warm: number, maxAgeMs: number) => warm / (maxAgeMs / 1000) / 10_000;

export const KEYS = {
  groupHead: {
    key: 'GROUP#{tenant}#{group}',
    scope: 'one group',
    shards: 1,
    readsReplicatedBy: 'groupHeadReplicas',
    moves: 'reads: `groupHeadReplicas`; raises: none (every raise writes every replica)',
  },
  templateHeads: {
    key: 'TPLS#{tenant}',
    scope: 'one tenant',
    shards: 1,
    moves: '`TEMPLATE_HEAD_MAX_AGE_MS`; more warm functions read it more',
  },
  deliveries: {
    key: `WHDL#{endpoint}#${shardRange(WEBHOOK_DELIVERY_SHARDS)}`,
    scope: 'one endpoint',
    shards: WEBHOOK_DELIVERY_SHARDS,
    moves: '`WEBHOOK_DELIVERY_SHARDS`',
  },
  endpoints: {
    key: 'WHEP#{tenant}',
    scope: 'one tenant',
    shards: 1,
    moves: '`WEBHOOK_ENDPOINT_MAX_AGE_MS`; more warm functions read it more',
  },
  gate: {
    key: 'GATE#sending',
    scope: 'the stack',
    shards: 1,
    moves: 'read it less often per container (code)',
  },
  suppressions: {
    key: `SUPP#{tenant}#${shardRange(SUPPRESSION_SHARDS)}`,
    scope: 'one tenant',
    shards: SUPPRESSION_SHARDS,
    moves: '`SUPPRESSION_SHARDS`',
  },
  suppressionEntry: {
    key: 'SUPP#{tenant}#{shard} {address}',
    scope: 'one address',
    shards: 1,
    moves: '`SUPPRESSION_MAX_AGE_MS`; more warm functions read it more',
  },
  byStatusScheduled: {
    key: `by_status {tenant}#scheduled#${shardRange(INDEX_SHARDS.byStatus)}`,
    scope: 'one tenant',
    shards: INDEX_SHARDS.byStatus,
    moves: '`INDEX_SHARDS.byStatus`',
  },
  byStatusSending: {
    key: `by_status {tenant}#sending#${shardRange(INDEX_SHARDS.byStatus)}`,
    scope: 'one tenant',
    shards: INDEX_SHARDS.byStatus,
    moves: '`INDEX_SHARDS.byStatus`',
  },
  byStatusSent: {
    key: `by_status {tenant}#sent#${shardRange(INDEX_SHARDS.byStatus)}`,
    scope: 'one tenant',
    shards: INDEX_SHARDS.byStatus,
    moves: '`INDEX_SHARDS.byStatus`',
  },
  byTenant: {
    key: `by_tenant {tenant}#${shardRange(INDEX_SHARDS.byTenant)}`,
    scope: 'one tenant',
    shards: INDEX_SHARDS.byTenant,
    moves: '`INDEX_SHARDS.byTenant`',
  },
  due: {
    key: `due due#${shardRange(INDEX_SHARDS.due)}`,
    scope: 'every tenant',
    shards: INDEX_SHARDS.due,
    moves: '`INDEX_SHARDS.due`',
  },
} as const satisfies Record<string, HotKey>;

export type KeyId = keyof typeof KEYS;

/** DynamoDB's ceiling for one partition, whatever the table's mode (docs/capacity.md §2). */
export const PARTITION = { writeUnits: 1_000, readUnits: 3_000 } as const;

/** One request a message causes, and what each one costs. */
export interface Call {
  readonly fn: 'api' | 'relay' | 'scheduler' | 'sender' | 'events' | 'webhooks';
  readonly request: string;
  readonly item: string;
  readonly units: string;
  readonly perMessage: number;
  readonly loads?: Partial<Record<LimitId, number>>;
  readonly keys?: readonly { readonly key: KeyId; readonly read?: number; readonly write?: number }[];
}

/**
 * One copy on the send queue, as the time a batch of `SENDER_QUEUE.batchSize` such copies lasts: the
 * sender's slot is held for the whole batch (its lanes run `SENDER_LANES` copies at once).
 */
interface Copy {
  readonly batchSeconds: number;
}

export interface Journey {
  readonly label: string;
  /** API requests per message (a batch enqueue carries 100). */
  readonly apiRequests: number;
  readonly calls: readonly Call[];
  readonly copies: readonly Copy[];
  /** Webhook deliveries per message (events × subscribed endpoints). */
  readonly deliveries: number;
}

const A = ASSUMPTIONS;
const B = A.bodyUnits;
const sendSeconds = A.tableSecondsPerSend + A.smtpSeconds;
const lanes = SENDER_LANES;
const rounds = Math.ceil(SENDER_QUEUE.batchSize / lanes);

/** A copy that works `seconds` in its lane: ⌈10/4⌉ = 3 rounds of them a batch. */
const inLane = (seconds: number): Copy => ({ batchSeconds: rounds * seconds });

/**
 * A deferred copy, arrived early by up to `maxEarlyWaitSeconds` (uniform): it is read in a lane, waits
 * out of it, and takes one back ahead of copies not yet started to send (`runInLanes`,
 * lambdas/core/runWithConcurrency.ts; decision 0098). A batch of them lasts about its longest wait
 * plus a send; the lanes' queueing when waits end together is what the simulation adds.
 */
const earlyCopy = (): Copy => {
  const random = seeded(34);
  let total = 0;
  for (let batch = 0; batch < A.earlyBatchesSimulated; batch++) {
    const waits = Array.from({ length: SENDER_QUEUE.batchSize }, () => random() * INLINE.maxEarlyWaitSeconds);
    total += earlyBatchSeconds(waits, A.quickCopySeconds, sendSeconds);
  }
  return { batchSeconds: total / A.earlyBatchesSimulated };
};

/** mulberry32: a fixed sequence in [0, 1), so the page is the same on every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** When the last of a batch's early copies is sent: `read` in a lane, its wait out of it, `send` in one. */
function earlyBatchSeconds(waits: readonly number[], read: number, send: number): number {
  type Step = { readonly at: number; readonly copy: number; readonly done: 'read' | 'wait' | 'send' };
  const steps: Step[] = [];
  const returned: number[] = [];
  let free = lanes;
  let unstarted = 0;
  let now = 0;
  const fill = () => {
    while (free > 0 && (returned.length > 0 || unstarted < waits.length)) {
      free -= 1;
      const back = returned.shift();
      if (back === undefined) steps.push({ at: now + read, copy: unstarted++, done: 'read' });
      else steps.push({ at: now + send, copy: back, done: 'send' });
    }
  };
  fill();
  for (let step = steps.shift(); step !== undefined; step = steps.shift()) {
    now = step.at;
    if (step.done === 'read') {
      free += 1;
      steps.push({ at: now + (waits[step.copy] ?? 0), copy: step.copy, done: 'wait' });
    } else if (step.done === 'wait') returned.push(step.copy);
    else free += 1;
    fill();
    steps.sort((a, b) => a.at - b.at);
  }
  return now;
}
const INDEXED_PUT = { byStatusWrites: 1, byTenantWrites: 1, dueWrites: 1 } as const;
const INDEXED_PUT_KEYS = [
  { key: 'byStatusScheduled', write: 1 },
  { key: 'byTenant', write: 1 },
  { key: 'due', write: 1 },
] as const;

const CALLS = {
  putBody: {
    fn: 'api',
    request: 'PutItem, new',
    item: 'MSG#{id} BODY',
    units: `${B} W`,
    perMessage: 1,
    loads: { tableWrites: B },
  },
  putState: {
    fn: 'api',
    request: 'PutItem, new',
    item: 'MSG#{id} STATE + 3 index entries',
    units: '1 W + 1 W per index',
    perMessage: 1,
    loads: { tableWrites: 1, ...INDEXED_PUT },
    keys: INDEXED_PUT_KEYS,
  },
  // The first read is eventually consistent; a retry after a raise that beat ours reads consistently
  // (lambdas/api/routes/enqueue.ts; decision 0097). One attempt per message, as everywhere here.
  readGroupHead: {
    fn: 'api',
    request: 'GetItem, eventually consistent',
    item: 'GROUP#{tenant}#{group}[#{r}], one replica',
    units: '0.5 R',
    perMessage: 1,
    loads: { tableReads: 0.5 },
    keys: [{ key: 'groupHead', read: 0.5 }],
  },
  enqueueGrouped: {
    fn: 'api',
    request: 'TransactWriteItems: STATE, BODY',
    item: 'MSG#{id} ×2',
    units: `2×(1 + ${B}) W + 1 W per index`,
    perMessage: 1,
    loads: { tableWrites: 2 * (1 + B), ...INDEXED_PUT },
    keys: INDEXED_PUT_KEYS,
  },
  // In the same transaction, only when the message's version is above the head (store/groupHead.ts).
  raiseGroupHead: {
    fn: 'api',
    request: 'TransactWriteItems: the head, when the version rises',
    item: 'GROUP#{tenant}#{group}[#{r}], every replica',
    units: '2×1 W a replica',
    perMessage: 1,
    loads: { tableWrites: 2 * DEFAULTS.groupHeadReplicas },
    keys: [{ key: 'groupHead', write: 2 }],
  },
  readTemplateHead: {
    fn: 'api',
    request: 'GetItem, consistent, once per 5 s per warm function',
    item: 'TPLS#{tenant}',
    units: '1 R',
    perMessage: cachedReadsPerMessage(WARM_AT_10K.api, TEMPLATE_HEAD_MAX_AGE_MS),
    loads: { tableReads: 1 },
    keys: [{ key: 'templateHeads', read: 1 }],
  },
  apiCopy: {
    fn: 'api',
    request: 'SendMessageBatch, 1 copy',
    item: 'send queue',
    units: '—',
    perMessage: 1,
  },
  relayCopies: {
    fn: 'relay',
    request: `SendMessageBatch, ${SQS_MAX_BATCH} copies`,
    item: 'send queue',
    units: '—',
    perMessage: 1 / SQS_MAX_BATCH,
  },
  createSchedule: {
    fn: 'relay',
    request: 'CreateSchedule',
    item: 'the schedule group',
    units: '—',
    perMessage: 1,
    loads: { schedulerCreate: 1 },
  },
  scheduleFires: {
    fn: 'scheduler',
    request: 'invocation: SendMessage',
    item: 'send queue',
    units: '—',
    perMessage: 1,
    loads: { schedulerInvoke: 1 },
  },
  redelay: {
    fn: 'sender',
    request: 'SendMessageBatch, the early copy again',
    item: 'send queue',
    units: '—',
    perMessage: 1,
  },
  readGroupHeadAfterClaim: {
    fn: 'sender',
    request: 'GetItem, consistent, after the claim',
    item: 'GROUP#{tenant}#{group}[#{r}], one replica',
    units: '1 R',
    perMessage: 1,
    loads: { tableReads: 1 },
    keys: [{ key: 'groupHead', read: 1 }],
  },
  claim: {
    fn: 'sender',
    request: 'UpdateItem, claim',
    item: 'MSG#{id} STATE',
    // The claim leaves the `due` entry where it was, but updates its projected `status` (decision 0106).
    units: '1 W + by_status 2 + due 1',
    perMessage: 1,
    loads: { tableWrites: 1, byStatusWrites: 2, dueWrites: 1 },
    keys: [
      { key: 'byStatusScheduled', write: 1 },
      { key: 'byStatusSending', write: 1 },
      { key: 'due', write: 1 },
    ],
  },
  readBody: {
    fn: 'sender',
    request: 'GetItem, consistent',
    item: 'MSG#{id} BODY',
    units: `${Math.ceil(B / 4)} R`,
    perMessage: 1,
    loads: { tableReads: Math.ceil(B / 4) },
  },
  suppressions: {
    fn: 'sender',
    request: 'BatchGetItem, a key per recipient',
    item: 'SUPP#{tenant}#{shard}',
    units: '0.5 R',
    perMessage: A.recipients,
    loads: { tableReads: 0.5 },
    keys: [{ key: 'suppressions', read: 0.5 }],
  },
  // The same address on every message (a compliance BCC, an archive): its key joins the recipients'
  // BatchGetItem once per SUPPRESSION_MAX_AGE_MS per warm sender (decision 0173).
  suppressionEntry: {
    fn: 'sender',
    request: 'BatchGetItem, the same key, once per 5 s per warm function',
    item: 'SUPP#{tenant}#{shard} {address}',
    units: '0.5 R',
    perMessage: cachedReadsPerMessage(WARM_AT_10K.sender, SUPPRESSION_MAX_AGE_MS),
    loads: { tableReads: 0.5 },
    keys: [{ key: 'suppressionEntry', read: 0.5 }],
  },
  smtp: {
    fn: 'sender',
    request: 'SMTP transaction',
    item: 'the relay (SES counts recipients)',
    units: '—',
    perMessage: 1,
  },
  outcome: {
    fn: 'sender',
    request: 'UpdateItem, outcome',
    item: 'MSG#{id} STATE',
    units: '1 W + by_status 2 + due 1',
    perMessage: 1,
    loads: { tableWrites: 1, byStatusWrites: 2, dueWrites: 1 },
    keys: [
      { key: 'byStatusSending', write: 1 },
      { key: 'byStatusSent', write: 1 },
      { key: 'due', write: 1 },
    ],
  },
  bodyTtl: {
    fn: 'sender',
    request: "UpdateItem, the body's TTL when the message ends",
    item: 'MSG#{id} BODY',
    units: `${B} W`,
    perMessage: 1,
    loads: { tableWrites: B },
  },
  putEvents: {
    fn: 'events',
    request: `PutEvents, ${INLINE.eventsPerPut} events`,
    item: 'the event bus',
    units: '—',
    perMessage: EVENTS_PER_MESSAGE / INLINE.eventsPerPut,
    loads: { putEvents: 1 },
  },
  listEndpoints: {
    fn: 'events',
    request: 'Query, consistent, per batch',
    item: 'WHEP#{tenant}',
    units: '1 R',
    perMessage: EVENT_RECORDS_PER_MESSAGE / EVENTS_STREAM.batchSize,
    loads: { tableReads: 1 },
    keys: [{ key: 'endpoints', read: 1 }],
  },
} as const satisfies Record<string, Call>;

/** The calls of the webhook deliveries of one message, `deliveries` of them (events × endpoints). */
function deliveryCalls(deliveries: number): Call[] {
  const D = A.deliveryUnits;
  return [
    {
      fn: 'events',
      request: 'PutItem, new delivery',
      item: 'WHDL#{endpoint}#{shard}',
      units: `${D} W`,
      perMessage: deliveries,
      loads: { tableWrites: D },
      keys: [{ key: 'deliveries', write: D }],
    },
    {
      fn: 'events',
      request: `SendMessageBatch, ${SQS_MAX_BATCH} copies`,
      item: 'webhook queue',
      units: '—',
      perMessage: deliveries / SQS_MAX_BATCH,
    },
    {
      fn: 'webhooks',
      request: 'GetItem, consistent',
      item: 'WHDL#{endpoint}#{shard}',
      units: '1 R',
      perMessage: deliveries,
      loads: { tableReads: 1 },
      keys: [{ key: 'deliveries', read: 1 }],
    },
    {
      fn: 'webhooks',
      request: 'GetItem, consistent, once per 5 s per warm function',
      item: 'WHEP#{tenant}',
      units: '1 R',
      perMessage: cachedReadsPerMessage(WARM_AT_10K.webhooks, WEBHOOK_ENDPOINT_MAX_AGE_MS),
      loads: { tableReads: 1 },
      keys: [{ key: 'endpoints', read: 1 }],
    },
    {
      fn: 'webhooks',
      request: 'UpdateItem, attempt',
      item: 'WHDL#{endpoint}#{shard}',
      units: `${D} W`,
      perMessage: deliveries,
      loads: { tableWrites: D },
      keys: [{ key: 'deliveries', write: D }],
    },
  ];
}

const C = CALLS;
const sending = [C.claim, C.readBody, C.suppressions, C.smtp, C.outcome, C.bodyTtl];
const always = [C.putEvents, C.listEndpoints];
/** Due now: the api's copy is sent, the relay's backup (held back a few seconds) is read and dropped. */
const IMMEDIATE_COPIES: readonly Copy[] = [inLane(sendSeconds), inLane(A.quickCopySeconds)];
const EARLY_COPY = earlyCopy();
const stateReads = (copies: number): Call => ({
  fn: 'sender',
  request: 'GetItem, consistent, per copy',
  item: 'MSG#{id} STATE',
  units: '1 R',
  perMessage: copies,
  loads: { tableReads: 1 },
});
const immediateCalls = [
  C.putBody,
  C.putState,
  C.apiCopy,
  C.relayCopies,
  stateReads(2),
  ...sending,
  ...always,
];

/**
 * A grouped message: its head read, its records in one transaction (with `raise` when the version
 * rises), the head read again under the sender's claim. Messages that share a version (a campaign)
 * write the head once; messages that each raise it (an order's status) write it every time.
 */
const groupedCalls = (raise: readonly Call[]): Call[] => [
  C.readGroupHead,
  C.enqueueGrouped,
  ...raise,
  C.apiCopy,
  C.relayCopies,
  stateReads(2),
  C.readGroupHeadAfterClaim,
  ...sending,
  ...always,
];

/** The paths of DESIGN §4, each as the code takes it. */
export const JOURNEYS = {
  immediate: {
    label: 'immediate',
    apiRequests: 1,
    calls: immediateCalls,
    copies: IMMEDIATE_COPIES,
    deliveries: 0,
  },
  deferred: {
    label: 'deferred ≤ 15 min',
    apiRequests: 1,
    calls: [C.putBody, C.putState, C.relayCopies, stateReads(1), ...sending, ...always],
    copies: [EARLY_COPY],
    deliveries: 0,
  },
  scheduled: {
    label: 'deferred > 15 min',
    apiRequests: 1,
    calls: [
      C.putBody,
      C.putState,
      C.createSchedule,
      C.scheduleFires,
      stateReads(2),
      C.redelay,
      ...sending,
      ...always,
    ],
    copies: [inLane(A.quickCopySeconds), EARLY_COPY],
    deliveries: 0,
  },
  templated: {
    label: 'templated',
    apiRequests: 1,
    calls: [C.readTemplateHead, ...immediateCalls],
    copies: IMMEDIATE_COPIES,
    deliveries: 0,
  },
  grouped: {
    label: 'grouped, one version',
    apiRequests: 1,
    calls: groupedCalls([]),
    copies: IMMEDIATE_COPIES,
    deliveries: 0,
  },
  groupedRaising: {
    label: 'grouped, each raises',
    apiRequests: 1,
    calls: groupedCalls([C.raiseGroupHead]),
    copies: IMMEDIATE_COPIES,
    deliveries: 0,
  },
  webhooks: {
    label: 'webhooks',
    apiRequests: 1,
    calls: [...immediateCalls, ...deliveryCalls(EVENTS_PER_MESSAGE * A.endpoints)],
    copies: IMMEDIATE_COPIES,
    deliveries: EVENTS_PER_MESSAGE * A.endpoints,
  },
  bcc: {
    label: 'one BCC on every message',
    apiRequests: 1,
    calls: [...immediateCalls, C.suppressionEntry],
    copies: IMMEDIATE_COPIES,
    deliveries: 0,
  },
  batch: {
    label: `batch of ${REQUEST_LIMITS.maxBatchMessages}`,
    apiRequests: 1 / REQUEST_LIMITS.maxBatchMessages,
    calls: immediateCalls,
    copies: IMMEDIATE_COPIES,
    deliveries: 0,
  },
} as const satisfies Record<string, Journey>;

export type JourneyId = keyof typeof JOURNEYS;
export const JOURNEY_IDS = Object.keys(JOURNEYS) as JourneyId[];

/** What one message of a journey asks of every limit, per message (units, requests or slots). */
export interface Demand {
  readonly limits: Readonly<Record<string, number>>;
  /** Sender slots (concurrency-seconds) per message. */
  readonly senderSeconds: number;
}

export function demand(journey: Journey): Demand {
  const limits: Record<string, number> = {};
  const add = (id: string, amount: number) => {
    if (amount > 0) limits[id] = (limits[id] ?? 0) + amount;
  };
  for (const call of journey.calls) {
    for (const [id, amount] of Object.entries(call.loads ?? {})) add(id, call.perMessage * amount);
    for (const load of call.keys ?? []) {
      const hot: HotKey = KEYS[load.key];
      const reads = (call.perMessage * (load.read ?? 0)) / hot.shards;
      add(keyLimitId(load.key, 'write'), (call.perMessage * (load.write ?? 0)) / hot.shards);
      // Replicas needed per msg/s: each takes one partition's reads.
      if (hot.readsReplicatedBy !== undefined) add(hot.readsReplicatedBy, reads / PARTITION.readUnits);
      else add(keyLimitId(load.key, 'read'), reads);
    }
  }
  // A copy holds its share of its batch's slot; a batch is as long as its copies make it (Copy).
  const batchSeconds = journey.copies.reduce((sum, copy) => sum + copy.batchSeconds, 0);
  const senderSeconds = batchSeconds / SENDER_QUEUE.batchSize;
  const senderInvocations = journey.copies.length / SENDER_QUEUE.batchSize;
  const deliverySeconds =
    (journey.deliveries / WEBHOOK_DELIVERY.batchSize) * (A.endpointSeconds + A.tableSecondsPerSend);
  const streamInvocations = 1 / RELAY_STREAM.batchSize + EVENT_RECORDS_PER_MESSAGE / EVENTS_STREAM.batchSize;
  add('apiStage', journey.apiRequests);
  add('apiAccount', journey.apiRequests);
  add(
    'lambdaInvocations',
    journey.apiRequests +
      senderInvocations +
      streamInvocations +
      journey.deliveries / WEBHOOK_DELIVERY.batchSize,
  );
  add(
    'lambdaConcurrency',
    A.apiSeconds + senderSeconds + streamInvocations * A.streamBatchSeconds + deliverySeconds,
  );
  add('senderMaxConcurrency', senderSeconds);
  add('senderEventSource', senderSeconds);
  add('webhookConcurrency', deliverySeconds);
  add('secretReads', senderSeconds / INLINE.secretCacheSeconds);
  // A copy is in flight from its receive to its batch's end.
  add('sqsInFlight', batchSeconds);
  // Every sender container reads the gate once per cache period while it works.
  const gateReads = senderSeconds / (GATE_READ_REUSE_MS / 1000);
  add(keyLimitId('gate', 'read'), gateReads);
  add('tableReads', gateReads);
  return { limits, senderSeconds };
}

export function keyLimitId(key: KeyId, op: 'read' | 'write'): string {
  return `${key}.${op}`;
}

/** Every limit a journey can meet: the named ones, and a read and a write limit per hot key. */
export function limitOf(id: string): Limit {
  if (id in LIMITS) return LIMITS[id as LimitId];
  const [key, op] = id.split('.') as [KeyId, 'read' | 'write'];
  const hot = KEYS[key];
  const units = op === 'write' ? PARTITION.writeUnits : PARTITION.readUnits;
  return {
    label: `\`${hot.key}\` ${op}s`,
    capacity: units,
    kind: hot.shards > 1 ? 'design' : 'hot key',
    moves: hot.moves,
  };
}

/** The rate (messages/s) at which a limit binds on a journey; Infinity when the journey does not use it. */
export function ceiling(journey: Journey, id: string): number {
  const perMessage = demand(journey).limits[id] ?? 0;
  return perMessage > 0 ? limitOf(id).capacity / perMessage : Number.POSITIVE_INFINITY;
}

/** Every limit any journey meets, the tightest first (by its lowest ceiling over the journeys). */
export function limitIds(): string[] {
  const ids = new Set(JOURNEY_IDS.flatMap((id) => Object.keys(demand(JOURNEYS[id]).limits)));
  const lowest = (id: string) => Math.min(...JOURNEY_IDS.map((journey) => ceiling(JOURNEYS[journey], id)));
  return [...ids].sort((a, b) => lowest(a) - lowest(b) || a.localeCompare(b));
}

/** The first limit of `kinds` to bind on a journey, and where. */
export function firstToBind(journey: Journey, kinds: readonly LimitKind[]): { id: string; rate: number } {
  const candidates = limitIds()
    .filter((id) => kinds.includes(limitOf(id).kind))
    .map((id) => ({ id, rate: ceiling(journey, id) }))
    .filter((entry) => Number.isFinite(entry.rate));
  const first = candidates.sort((a, b) => a.rate - b.rate)[0];
  if (first === undefined) throw new Error(`${journey.label}: no limit of ${kinds.join(', ')}`);
  return first;
}

/** A rate as the page prints it: three significant figures. */
export function rate(value: number): string {
  if (!Number.isFinite(value)) return '—';
  const rounded = Number(value.toPrecision(3));
  return rounded.toLocaleString('en-US');
}

const row = (cells: readonly (string | number)[]) => `| ${cells.join(' | ')} |`;
const header = (cells: readonly string[]) => [row(cells), row(cells.map(() => '---'))];
const count = (value: number) => (value === 0 ? '' : Number(value.toPrecision(3)).toString());

/** §3: every request per message, by path. */
export function requestsTable(): string[] {
  const lines = header([
    'fn',
    'request',
    'item or key',
    'units',
    ...JOURNEY_IDS.map((id) => JOURNEYS[id].label),
  ]);
  const seen = new Map<string, Map<JourneyId, number>>();
  const first = new Map<string, Call>();
  for (const id of JOURNEY_IDS) {
    for (const call of JOURNEYS[id].calls) {
      const name = `${call.fn}|${call.request}|${call.item}`;
      first.set(name, first.get(name) ?? call);
      const counts = seen.get(name) ?? new Map<JourneyId, number>();
      counts.set(id, (counts.get(id) ?? 0) + call.perMessage);
      seen.set(name, counts);
    }
  }
  for (const [name, counts] of seen) {
    const call = first.get(name) as Call;
    lines.push(
      row([
        call.fn,
        call.request,
        call.item.includes('#') ? `\`${call.item}\`` : call.item,
        call.units,
        ...JOURNEY_IDS.map((id) => count(counts.get(id) ?? 0)),
      ]),
    );
  }
  return lines;
}

/** §4: the rate at which each limit binds, by path, the tightest limit first. */
export function ceilingsTable(): string[] {
  const lines = header(['limit', 'kind', 'default', ...JOURNEY_IDS.map((id) => JOURNEYS[id].label)]);
  for (const id of limitIds()) {
    const limit = limitOf(id);
    lines.push(
      row([
        limit.label,
        limit.kind,
        limit.capacity.toLocaleString('en-US'),
        ...JOURNEY_IDS.map((journey) => rate(ceiling(JOURNEYS[journey], id))),
      ]),
    );
  }
  return lines;
}

/** §4: what binds first on each path: as deployed, then AWS's own limits, then a key. */
export function firstTable(): string[] {
  const lines = header(['path', 'first as deployed', 'first AWS limit', 'first key']);
  const describe = (entry: { id: string; rate: number }) => `${limitOf(entry.id).label}: ${rate(entry.rate)}`;
  for (const id of JOURNEY_IDS) {
    const journey = JOURNEYS[id];
    lines.push(
      row([
        journey.label,
        describe(firstToBind(journey, ['prop', 'code', 'quota', 'hard', 'design', 'hot key'])),
        describe(firstToBind(journey, ['quota', 'hard'])),
        describe(firstToBind(journey, ['design', 'hot key'])),
      ]),
    );
  }
  return lines;
}

/** §5: the load on each hot key at `at` messages/s of one tenant (the path that loads it most). */
export function hotKeysTable(at: number = A.rate): string[] {
  const lines = header([
    'key',
    'scope',
    `units/s on one key at ${rate(at)} msg/s`,
    'share of a partition',
    'binds at',
    'at 100,000/s',
    'moved by',
  ]);
  for (const key of Object.keys(KEYS) as KeyId[]) {
    const hot = KEYS[key];
    // A replicated key's reads, per replica at the default count.
    const replicatedBy = (hot as HotKey).readsReplicatedBy;
    const perMessage = (id: JourneyId, op: 'read' | 'write') => {
      const limits = demand(JOURNEYS[id]).limits;
      if (op === 'write' || replicatedBy === undefined) return limits[keyLimitId(key, op)] ?? 0;
      return ((limits[replicatedBy] ?? 0) * PARTITION.readUnits) / LIMITS[replicatedBy].capacity;
    };
    const loads = (op: 'read' | 'write') => Math.max(...JOURNEY_IDS.map((id) => perMessage(id, op)));
    const share = (messages: number) =>
      Math.max(
        (loads('write') * messages) / PARTITION.writeUnits,
        (loads('read') * messages) / PARTITION.readUnits,
      );
    const write = loads('write') * at;
    const read = loads('read') * at;
    const parts = [write > 0 ? `${rate(write)} W` : '', read > 0 ? `${rate(read)} R` : ''].filter(Boolean);
    lines.push(
      row([
        `\`${hot.key}\``,
        hot.scope,
        parts.join(', '),
        `${rate(share(at) * 100)} %`,
        rate(at / share(at)),
        hot.shards > 1
          ? `${shardsFor(hot.shards, share(100_000))} shards`
          : `${rate(share(100_000) * 100)} %`,
        hot.moves,
      ]),
    );
  }
  return lines;
}

/** The shard count (a power of two, as today's) that keeps each shard within one partition. */
export function shardsFor(shards: number, share: number): number {
  let needed = shards;
  while (share * (shards / needed) > 1) needed *= 2;
  return needed;
}

/** §6: what each quota, prop and event source limit must become for every path at 10,000/s and at 100,000/s. */
export function raisesTable(): string[] {
  const lines = header(['limit', 'default', 'needed at 10,000/s', 'needed at 100,000/s', 'moved by']);
  for (const id of limitIds().filter((id) => id in LIMITS)) {
    const limit = limitOf(id);
    const worst = Math.max(...JOURNEY_IDS.map((journey) => demand(JOURNEYS[journey]).limits[id] ?? 0));
    const needed = (at: number) => worst * at;
    if (needed(100_000) <= limit.capacity) continue;
    lines.push(
      row([
        limit.label,
        limit.capacity.toLocaleString('en-US'),
        needed(10_000) > limit.capacity ? `**${rate(needed(10_000))}**` : rate(needed(10_000)),
        rate(needed(100_000)),
        limit.moves,
      ]),
    );
  }
  return lines;
}

/**
 * The sweeper's rescue (DESIGN §5a at 10,000/s): how fast it re-dispatches lost messages, as
 * lambdas/sweeper/sweep.ts paces its pass, and what that costs a `due` shard meanwhile.
 */
export const RESCUE = {
  /** A stamp: one conditional UpdateItem from Lambda, same Region (AWS's single-digit ms, and margin). */
  stampSeconds: 0.01,
  /** A stamp moves its record's `due` entry: a delete and a put (DynamoDB Local says 2, test/bench). */
  stampDueWrites: 2,
  /** Lost messages: a relay that dropped every record for a minute at 10,000/s. */
  lost: 600_000,
} as const;

/** The rescue's figures, from the pace, the function's timeout and the schedule's default interval. */
export function sweeperRescue() {
  const byLatency = SWEEP_PACE.stampsAtOnce / RESCUE.stampSeconds;
  const perShard = Math.min(SWEEP_PACE.entriesPerShardSecond, byLatency);
  const perSecond = SWEEP_PACE.shardsAtOnce * perShard;
  const passSeconds = SWEEPER_TIMEOUT_SECONDS - SWEEP_RESERVED_MS / 1000;
  const perRun = perSecond * passSeconds;
  const intervalSeconds = DEFAULTS.sweepIntervalMinutes * 60;
  const runsFor = (lost: number) => Math.ceil(lost / perRun);
  // A `due` shard while a run sweeps it: the paths' own writes at 10,000/s, the stamps, and the claim
  // and outcome of the messages rescued (spread over every shard).
  const due = keyLimitId('due', 'write');
  const normal = Math.max(...JOURNEY_IDS.map((id) => demand(JOURNEYS[id]).limits[due] ?? 0)) * A.rate;
  const sendDueWrites = ([CALLS.claim, CALLS.outcome] as readonly Call[])
    .flatMap((call) => call.keys ?? [])
    .filter((key) => key.key === 'due')
    .reduce((sum, key) => sum + (key.write ?? 0), 0);
  const stamps = RESCUE.stampDueWrites * perShard;
  const sends = (sendDueWrites * perSecond) / INDEX_SHARDS.due;
  return {
    byLatency,
    perShard,
    perSecond,
    passSeconds,
    perRun,
    intervalSeconds,
    runsFor,
    normal,
    stamps,
    sends,
  };
}

/** §7: the sweeper's rescue rate, the time to drain lost messages, and its load on a `due` shard. */
export function rescueTable(): string[] {
  const r = sweeperRescue();
  const n = (value: number) => rate(value);
  const minutes = (seconds: number) => `${n(seconds / 60)} min`;
  const drained = (lost: number) =>
    `${r.runsFor(lost)} run${r.runsFor(lost) === 1 ? '' : 's'}: within ${minutes(r.runsFor(lost) * r.intervalSeconds)} after the grace`;
  const load = r.normal + r.stamps + r.sends;
  const lines = header(['quantity', 'value', 'from']);
  lines.push(
    row([
      'the pace',
      `${n(r.perShard)} entries/s a shard, ${n(SWEEP_PACE.shardsAtOnce)} shards at once: ${n(r.perSecond)} msg/s`,
      `\`SWEEP_PACE\`; stamps ${SWEEP_PACE.stampsAtOnce} at once of ${RESCUE.stampSeconds * 1000} ms could do ${n(r.byLatency)}/s a shard; table +${n(r.perSecond)} W and R/s, \`due\` index +${n(r.perSecond * RESCUE.stampDueWrites)} W/s`,
    ]),
    row([
      'a run',
      `${n(r.passSeconds)} s: ${n(r.perRun)} msg; ${n(r.perRun / r.intervalSeconds)} msg/s on average`,
      `\`SWEEPER_TIMEOUT_SECONDS\` ${SWEEPER_TIMEOUT_SECONDS} s − \`SWEEP_RESERVED_MS\` ${SWEEP_RESERVED_MS / 1000} s (gauges, the DLQ); a run every ${DEFAULTS.sweepIntervalMinutes} min; its cursors one item (\`SWEEPER#due\`, ≤ 7 W) put when moved`,
    ]),
    row([
      `${n(RESCUE.lost)} lost messages`,
      drained(RESCUE.lost),
      `a relay dropping every record for 1 min (over every shard; fewer than ${SWEEP_PACE.shardsAtOnce}: ${n(r.perShard)}/s each)`,
    ]),
    row([
      '`due due#{n}` while swept',
      `${n(load)} W/s, ${n((load / PARTITION.writeUnits) * 100)} %`,
      `${n(r.normal)} the paths' + ${n(r.stamps)} stamps (${RESCUE.stampDueWrites} W each) + ${n(r.sends)} the rescued sends'`,
    ]),
  );
  return lines;
}

/** Every table the page carries, in its order. */
export function capacityTables(): Record<string, string[]> {
  return {
    requests: requestsTable(),
    ceilings: ceilingsTable(),
    first: firstTable(),
    hotKeys: hotKeysTable(),
    raises: raisesTable(),
    rescue: rescueTable(),
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [name, lines] of Object.entries(capacityTables())) {
    process.stdout.write(`<!-- capacity: ${name} -->\n${lines.join('\n')}\n\n`);
  }
}
