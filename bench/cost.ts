import { randomBytes } from 'node:crypto';
import { encodedAttachmentBytes } from '../lambdas/core/attachments.js';
import { type CountedRequest, installAwsRequestCounter } from './awsRequestCounter.js';
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
  DURATION_MODEL_MS,
  FUNCTION_MEMORY_MB,
  PLATFORM_LOG_BYTES_PER_INVOCATION,
  PRICES,
  PRICES_CHECKED_ON,
  PRICES_REGION,
} from './prices.js';
import { round, sleep } from './stats.js';

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

interface Scenario {
  readonly name: string;
  readonly bodyBytes: number;
  readonly deferred: boolean;
  /** No goal for the attachment rows: their bill is mostly S3 storage, the user's own choice of retention. */
  readonly goalPerMillion?: number;
  /** One attachment (DESIGN §13): inline base64 in the enqueue, or uploaded first through POST /v1/attachments. */
  readonly attachment?: { readonly bytes: number; readonly uploaded: boolean };
}

const SCENARIOS: readonly Scenario[] = [
  { name: 'immediate 1 KB', bodyBytes: 1024, deferred: false, goalPerMillion: 6 },
  { name: 'immediate 20 KB', bodyBytes: 20 * 1024, deferred: false, goalPerMillion: 10 },
  { name: 'deferred 1 KB', bodyBytes: 1024, deferred: true, goalPerMillion: 6 },
  { name: 'deferred 20 KB', bodyBytes: 20 * 1024, deferred: true, goalPerMillion: 10 },
  {
    name: 'immediate 1 KB + 100 KB attachment (inline)',
    bodyBytes: 1024,
    deferred: false,
    attachment: { bytes: 100 * 1024, uploaded: false },
  },
  {
    name: 'immediate 1 KB + 5 MB attachment (uploaded)',
    bodyBytes: 1024,
    deferred: false,
    attachment: { bytes: 5 * 1024 * 1024, uploaded: true },
  },
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
 * START/END/REPORT lines then come once per batch. Same counted requests and units either way.
 */
export type Traffic = 'alone' | 'busy';

const BUSY_BATCH = { relayRecords: 100, senderCopies: 10, sqsEntries: 10 } as const;

export async function cost(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const perScenario = options.quick ? 3 : 10;
  const counter = installAwsRequestCounter();
  const logBytes = captureLogBytes();
  // EMF metrics are off by default in the local stack; here they are on, as in AWS, so their log
  // bytes are measured.
  const previousMetrics = process.env.POWERTOOLS_METRICS_DISABLED;
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  const stack = await startBenchStack(
    {
      POSTDATE_DIRECT_DELAY_MAX_SECONDS: String(DIRECT_DELAY_MAX_SECONDS),
      POSTDATE_SCHEDULE_LEAD_SECONDS: String(SCHEDULE_LEAD_SECONDS),
      // The relay's second copy of an immediate message is counted: its lease is waited out.
      ...SHORT_LEASE_ENV,
    },
    { quiet: false, countSandboxRequests: true },
  );
  const rows: BenchRow[] = [];
  const details: Record<string, unknown> = {
    pricesCheckedOn: PRICES_CHECKED_ON,
    region: PRICES_REGION,
    messagesPerScenario: perScenario,
    compression: { DIRECT_DELAY_MAX_SECONDS, SCHEDULE_LEAD_SECONDS, DEFERRED_DELAY_SECONDS },
    scenarios: {} as Record<string, unknown>,
  };
  try {
    // Warm every function once so cold-start reads (API key lookups are per request anyway) do not
    // land in the first scenario, then let the pipeline go quiet.
    const warm = await enqueue(stack, { bodyBytes: 10, key: `cost-warm-${Date.now()}` });
    await waitForDelivery(stack, [warm.id], 30_000);
    await waitOutShortLease();
    await settle(stack);
    counter.take();
    logBytes.take();
    logBytes.takeSources();

    for (const scenario of SCENARIOS) {
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
      await waitForDelivery(stack, ids, 60_000);
      if (!scenario.deferred) await waitOutShortLease();
      await settle(stack);
      const requests = counter.take();
      const bytes = logBytes.take();
      const logSources = logBytes.takeSources();
      const load = scenario.attachment && { ...scenario.attachment, retentionDays: RETENTION_DAYS };
      const bill = billOf(requests, bytes, perScenario, 'alone', load);
      const perMillion = bill.reduce((sum, line) => sum + line.usdPerMillion, 0);
      const busyBill = billOf(requests, bytes, perScenario, 'busy', load);
      const busyPerMillion = busyBill.reduce((sum, line) => sum + line.usdPerMillion, 0);
      // SES bills the attachments it sends per GB, beside its per-message price (as it counts them: encoded).
      const sesPerMillion =
        SES_PER_MILLION +
        (scenario.attachment
          ? (encodedAttachmentBytes(scenario.attachment.bytes) / 1024 ** 3) * PRICES.sesAttachmentGb.usd * 1e6
          : 0);
      const goal = scenario.goalPerMillion;
      const judged = (value: number) =>
        goal === undefined ? {} : { goal: `≤ $${goal}/M`, pass: value <= goal };
      rows.push({
        ...ratioRow({
          metric: `${scenario.name}: $ per million`,
          value: round(perMillion, 3),
          unit: '$/M',
          baselineLabel: 'SES $/M',
          baseline: round(sesPerMillion, 3),
          ...(goal === undefined
            ? { note: `S3 storage for the ${RETENTION_DAYS}-day retention included` }
            : { note: `goal ≤ $${goal}/M` }),
        }),
        ...judged(perMillion),
      });
      rows.push({
        ...ratioRow({
          metric: `${scenario.name}: $ per million, busy (full batches)`,
          value: round(busyPerMillion, 3),
          unit: '$/M',
          baselineLabel: 'SES $/M',
          baseline: round(sesPerMillion, 3),
        }),
        ...judged(busyPerMillion),
      });
      options.log(
        `  ${scenario.name}: $${round(perMillion, 3)} per million alone, $${round(busyPerMillion, 3)} busy (SES $${round(sesPerMillion, 3)})`,
      );
      for (const line of bill) {
        options.log(
          `    ${line.item.padEnd(58)} ${String(round(line.quantity, 3)).padStart(8)} ${line.unit.padEnd(10)} $${round(line.usdPerMillion, 3)}/M  (${line.how})`,
        );
      }
      (details.scenarios as Record<string, unknown>)[scenario.name] = {
        usdPerMillion: round(perMillion, 4),
        bill,
        busy: { usdPerMillion: round(busyPerMillion, 4), bill: busyBill },
        requests: summarize(requests, perScenario),
        logBytesPerMessage: Object.fromEntries(
          Object.entries(logSources).map(([key, value]) => [key, round(value / perScenario, 0)]),
        ),
      };
    }
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

/** SQS bills every 64 KB chunk of a request's payload as one request. */
const sqsRequests = (request: CountedRequest): number => Math.max(1, Math.ceil(request.inputBytes / 65_536));

export function billOf(
  requests: readonly CountedRequest[],
  logBytes: number,
  messages: number,
  traffic: Traffic = 'alone',
  attachment?: AttachmentLoad,
): CostLine[] {
  const busy = traffic === 'busy';
  /** Requests that carry a batch: one per message alone, one per full batch when busy. */
  const batched = (entries: number, perBatch: number) => (busy ? entries / perBatch : entries);
  const lines: CostLine[] = [];
  const per = (value: number) => value / messages;
  const add = (item: string, total: number, unit: string, usdEach: number, how: CostLine['how']) => {
    if (total === 0) return;
    lines.push({ item, quantity: per(total), unit, usdPerMillion: per(total) * usdEach * 1e6, how });
  };

  // The front door: one HTTP API request, one authorizer and one api invocation per enqueue.
  add('API Gateway HTTP API request', messages, 'requests', PRICES.httpApiRequest.usd, 'derived');

  // Requests the functions made, by function and call.
  const groups = new Map<string, CountedRequest[]>();
  for (const request of requests) {
    // S3 from any function: the event producer's tagging too (it is not in the modelled invocations).
    // Not from `other`: pre-signing an upload URL runs the client's middleware without sending, and
    // the PUT it signs is the client's, billed below.
    const s3FromFunction = request.service === 'S3' && request.origin === 'function';
    if (!isFunction(request.origin) && !s3FromFunction) continue;
    const key = `${request.origin} ${request.service}.${request.command}`;
    groups.set(key, [...(groups.get(key) ?? []), request]);
  }
  for (const [key, group] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    const service = group[0]?.service;
    if (service === 'DynamoDB') {
      const write = group.reduce((sum, r) => sum + r.writeUnits, 0);
      const read = group.reduce((sum, r) => sum + r.readUnits, 0);
      add(
        `${key} (${round(per(group.length), 2)} calls) WRU`,
        write,
        'WRU',
        PRICES.dynamodbWriteRequestUnit.usd,
        'counted',
      );
      add(
        `${key} (${round(per(group.length), 2)} calls) RRU`,
        read,
        'RRU',
        PRICES.dynamodbReadRequestUnit.usd,
        'counted',
      );
    } else if (service === 'SQS') {
      const entries = group.reduce((sum, r) => sum + (r.command === 'SendMessageBatch' ? r.items : 0), 0);
      add(
        key,
        busy && entries > 0
          ? batched(entries, BUSY_BATCH.sqsEntries)
          : group.reduce((sum, r) => sum + sqsRequests(r), 0),
        'requests',
        PRICES.sqsRequest.usd,
        busy && entries > 0 ? 'derived' : 'counted',
      );
    } else if (service === 'Scheduler') {
      // Creating and deleting schedules is not billed; the invocation is (below).
      add(key, group.length, 'requests', 0, 'counted');
    } else if (service === 'S3') {
      const getClass = group[0]?.command === 'GetObject' || group[0]?.command === 'HeadObject';
      add(
        key,
        group.length,
        'requests',
        getClass ? PRICES.s3GetRequest.usd : PRICES.s3PutRequest.usd,
        'counted',
      );
    } else if (service === 'SecretsManager') {
      add(key, group.length, 'requests', PRICES.secretsManagerApiCall.usd, 'counted');
    } else {
      add(key, group.length, 'requests', 0, 'counted');
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
  const receives = platform.filter(
    (r) => r.service === 'SQS' && r.command === 'ReceiveMessage' && r.items > 0,
  );
  const deletes = platform.filter((r) => r.service === 'SQS' && r.command.startsWith('DeleteMessage'));
  const deliveries = platform.filter((r) => r.service === 'SQS' && r.command === 'SendMessage');
  const senderInvocations = receives.reduce((sum, r) => sum + r.items, 0);
  const relayRecords = platform
    .filter((r) => r.command === 'GetRecords')
    .reduce((sum, r) => sum + r.relayRecords, 0);
  add(
    'sender event source: ReceiveMessage that returned copies',
    busy ? batched(senderInvocations, BUSY_BATCH.senderCopies) : receives.length,
    'requests',
    PRICES.sqsRequest.usd,
    busy ? 'derived' : 'counted',
  );
  add(
    'sender event source: DeleteMessageBatch',
    busy ? batched(senderInvocations, BUSY_BATCH.senderCopies) : deletes.length,
    'requests',
    PRICES.sqsRequest.usd,
    busy ? 'derived' : 'counted',
  );
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
  add(
    'relay event source: GetRecords (free for Lambda triggers)',
    platform.filter((r) => r.command === 'GetRecords' && r.items > 0).length,
    'requests',
    0,
    'counted',
  );

  // Invocations: api and authorizer once per enqueue (authorizer caching off: the worst case); the
  // relay once per stream record that passes its event filter (RELAY_STREAM_FILTER: scheduled and
  // cancelled images; claims, outcomes and the TTL deletion never invoke it); the sender once per
  // delivered copy. Batches of one: the low-traffic worst case (under load the relay takes up to 100
  // records and the sender 10). When busy, API Gateway answers from its authorizer cache and the
  // batches are full.
  const invocations: Record<FunctionName, number> = {
    api: messages,
    authorizer: busy ? 0 : messages,
    relay: batched(relayRecords, BUSY_BATCH.relayRecords),
    sender: batched(senderInvocations, BUSY_BATCH.senderCopies),
    sweeper: 0,
  };
  const totalInvocations = Object.values(invocations).reduce((sum, n) => sum + n, 0);
  add(
    busy
      ? 'Lambda invocations (api; relay and sender in full batches; authorizer cached)'
      : 'Lambda invocations (api, authorizer, relay, sender)',
    totalInvocations,
    'invocations',
    PRICES.lambdaRequest.usd,
    'derived',
  );

  let gbSeconds = 0;
  for (const fn of Object.keys(invocations) as FunctionName[]) {
    const mine = requests.filter((r) => r.origin === fn);
    const dynamo = mine.filter((r) => r.service === 'DynamoDB').length;
    const others = mine.length - dynamo;
    const ms =
      invocations[fn] * DURATION_MODEL_MS.handlerOverhead +
      dynamo * DURATION_MODEL_MS.perDynamodbCall +
      others * DURATION_MODEL_MS.perSqsOrSchedulerCall +
      (fn === 'sender' ? messages * DURATION_MODEL_MS.perSmtpSend : 0) +
      movedMb(fn, attachment) * messages * DURATION_MODEL_MS.perAttachmentMb;
    gbSeconds += (FUNCTION_MEMORY_MB[fn] / 1024) * (ms / 1000);
  }
  add(
    'Lambda compute, arm64 (duration modelled: prices.ts)',
    gbSeconds,
    'GB-s',
    PRICES.lambdaArmGbSecond.usd,
    'modelled',
  );

  const ingested = logBytes + totalInvocations * PLATFORM_LOG_BYTES_PER_INVOCATION;
  add(
    'CloudWatch Logs ingest (function logs + EMF measured, platform lines modelled)',
    ingested / 1e3,
    'KB',
    PRICES.cloudwatchLogsIngestGb.usd / 1e6,
    'derived',
  );
  return lines;
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

function logSource(line: string): string {
  try {
    const parsed = JSON.parse(line) as { service?: string; message?: string; _aws?: unknown; level?: string };
    if (parsed._aws) return `EMF metrics (${parsed.service ?? 'unknown'})`;
    return `${parsed.service ?? 'unknown'} ${parsed.level ?? ''} "${parsed.message ?? ''}"`;
  } catch {
    return 'other';
  }
}

/**
 * Counts the bytes of JSON lines (Powertools logs and EMF blobs) written to stdout/stderr, which is
 * what CloudWatch Logs would ingest, and keeps them off the terminal.
 */
export function captureLogBytes() {
  let bytes = 0;
  let bySource = new Map<string, number>();
  const streams = [process.stdout, process.stderr] as const;
  const originals = streams.map((stream) => stream.write.bind(stream));
  streams.forEach((stream, index) => {
    const original = originals[index];
    if (!original) return;
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      if (text.startsWith('{')) {
        const size = Buffer.byteLength(text);
        bytes += size;
        const key = logSource(text);
        bySource.set(key, (bySource.get(key) ?? 0) + size);
        const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
        callback?.();
        return true;
      }
      return (original as (...args: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
  });
  return {
    take() {
      const taken = bytes;
      bytes = 0;
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
