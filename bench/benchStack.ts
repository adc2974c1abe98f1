import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../lambdas/core/config.js';
import { LAUNCHER_CLASS } from '../local/dynamodb/loopbackLauncher.js';
import { ANY_FREE_PORTS } from '../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../local/localStack.js';
import type { ReceivedMailSummary, SmtpSink } from '../local/smtp/smtpSink.js';
import { sleep } from './stats.js';

const SANDBOX_COUNTER = fileURLToPath(new URL('./sandboxRequestCounter.ts', import.meta.url));

/**
 * The local stack as the benchmarks use it: every port picked free, the sweeper out of the way
 * (it runs at start and then every hour, so it adds no requests to what is measured), and the
 * configuration given as the same environment variables the Lambdas read.
 */
export async function startBenchStack(
  env: Readonly<Record<string, string>> = {},
  options: {
    quiet?: boolean;
    dynamodbJvm?: 'fast-start' | 'peak';
    /** Count the sandboxed functions' AWS requests too (bench/sandboxRequestCounter.ts). */
    countSandboxRequests?: boolean;
    /** The front end's authorizer cache (API Gateway's `resultsCacheTtl`); 0 invokes it per request. */
    authorizerCacheTtlMs?: number;
  } = {},
): Promise<LocalStack> {
  const config = loadConfig({ ...env }, 'local');
  return startLocalStack({
    config,
    ports: ANY_FREE_PORTS,
    quiet: options.quiet ?? true,
    log: () => undefined,
    sweepIntervalMs: 3_600_000,
    ...(options.dynamodbJvm ? { dynamodbJvm: options.dynamodbJvm } : {}),
    ...(options.countSandboxRequests ? { functionPreload: [SANDBOX_COUNTER] } : {}),
    ...(options.authorizerCacheTtlMs === undefined
      ? {}
      : { authorizerCacheTtlMs: options.authorizerCacheTtlMs }),
  });
}

/**
 * A lease short enough to wait out (and the sender timeout and SMTP limits it must exceed, core/
 * sendTiming.ts: 2 × 1 s + 1 s + 28 s for the outcome write < 32 s < 34 s). With the api's own
 * copy of an immediate message (POSTDATE_API_IMMEDIATE_COPY, on by default) the relay's copy comes
 * 5 s later; one that still meets the send (a slow one) is hidden until the lease ends, then read
 * and dropped: a benchmark that counts requests waits `SHORT_LEASE_SECONDS` + 2 s so that every
 * late request is counted.
 */
export const SHORT_LEASE_SECONDS = 34;
export const SHORT_LEASE_ENV = {
  POSTDATE_LEASE_SECONDS: String(SHORT_LEASE_SECONDS),
  POSTDATE_SENDER_TIMEOUT_SECONDS: '32',
  POSTDATE_SMTP_TIMEOUT_SECONDS: '1',
  POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS: '1',
} as const;

/** Waits until copies hidden for a short lease have come back and been dropped. */
export const waitOutShortLease = (): Promise<void> => sleep(SHORT_LEASE_SECONDS * 1000 + 2000);

export interface EnqueueInput {
  readonly bodyBytes: number;
  readonly delaySeconds?: number;
  readonly sendAt?: Date;
  /** A wall-clock time in `timeZone` instead of sendAt/delaySeconds (docs/design.md §16). */
  readonly sendAtLocal?: string;
  readonly timeZone?: string;
  readonly key: string;
}

/** English prose (from this repository's docs), so that compressed bodies compress as mail does, not as `xxx…`. */
const PROSE = readFileSync(new URL('./fixtures/mailText.txt', import.meta.url), 'utf8');

/** `bytes` bytes (UTF-8) of prose; the fixture repeats past its 24 KB. */
export function mailText(bytes: number): string {
  let text = '';
  while (Buffer.byteLength(text) < bytes) text += PROSE;
  const buffer = Buffer.from(text);
  // Cut at a character boundary: drop a trailing partial UTF-8 sequence, pad with spaces to size.
  const cut = buffer
    .subarray(0, bytes)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  return cut.padEnd(cut.length + (bytes - Buffer.byteLength(cut)), ' ');
}

/**
 * One enqueue body. `tags`, `metadata` and `headers` are never empty, as in the first recorded runs
 * (docs/performance.md), so that later runs compare with them.
 */
export function enqueueBody(input: EnqueueInput): string {
  return JSON.stringify({
    to: ['bench@example.com'],
    subject: `bench ${input.key}`,
    text: mailText(input.bodyBytes),
    headers: { 'X-Bench': 'postdate' },
    tags: { kind: 'bench' },
    metadata: { key: input.key },
    ...(input.sendAt ? { send_at: input.sendAt.toISOString() } : {}),
    ...(input.delaySeconds !== undefined ? { delay_seconds: input.delaySeconds } : {}),
    ...(input.sendAtLocal !== undefined
      ? { send_at_local: input.sendAtLocal, time_zone: input.timeZone }
      : {}),
  });
}

export interface Enqueued {
  readonly id: string;
  readonly sendAt: Date;
  readonly status: number;
}

export async function enqueue(stack: LocalStack, input: EnqueueInput): Promise<Enqueued> {
  const response = await fetch(`${stack.apiUrl}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.apiKey}`,
      'idempotency-key': input.key,
      'content-type': 'application/json',
    },
    body: enqueueBody(input),
  });
  const text = await response.text();
  if (response.status !== 202 && response.status !== 200) {
    throw new Error(`enqueue answered ${response.status}: ${text.slice(0, 300)}`);
  }
  const body = JSON.parse(text) as { id: string; send_at: string };
  return { id: body.id, sendAt: new Date(body.send_at), status: response.status };
}

/** Waits until the SMTP sink has received every id (by X-Postdate-Id); returns each receive time. */
export function waitForDelivery(
  stack: LocalStack,
  ids: readonly string[],
  timeoutMs: number,
): Promise<Map<string, Date>> {
  const sink = stack.smtpSink;
  if (!sink) throw new Error('the local stack has no SMTP sink');
  return waitForMail(sink, ids, timeoutMs, (mail) => mail.postdateId);
}

/**
 * Waits until `sink` has received a message for every key (`keyOf` reads it from a received
 * message: Postdate's X-Postdate-Id, a peer's Message-ID); returns each key's first receive time.
 */
export async function waitForMail(
  sink: Pick<SmtpSink, 'messages'>,
  keys: readonly string[],
  timeoutMs: number,
  keyOf: (mail: ReceivedMailSummary) => string | null,
): Promise<Map<string, Date>> {
  const wanted = new Set(keys);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const received = new Map<string, Date>();
    for (const mail of sink.messages()) {
      const key = keyOf(mail);
      if (key !== null && wanted.has(key) && !received.has(key)) received.set(key, new Date(mail.receivedAt));
    }
    if (received.size === wanted.size) return received;
    if (Date.now() > deadline) {
      throw new Error(
        `${wanted.size - received.size} of ${wanted.size} messages not delivered in ${timeoutMs} ms`,
      );
    }
    await sleep(25);
  }
}

/** Runs `task` over `items` with at most `concurrency` in flight. */
export async function inParallel<T, R>(
  items: readonly T[],
  concurrency: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await task(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/**
 * The pid of the DynamoDB Local JVM listening on `port`, found in /proc (the local stack does not
 * expose it): a java process with `-port <port>` that runs the loopback launcher or, when it could
 * not be compiled, DynamoDBLocal.jar.
 */
export function findDynamoDbLocalPid(port: number): number | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const portIndex = args.indexOf('-port');
      const engine = args.includes(LAUNCHER_CLASS) || args.some((arg) => arg.endsWith('DynamoDBLocal.jar'));
      if (engine && portIndex >= 0 && args[portIndex + 1] === String(port)) {
        return Number(entry);
      }
    } catch {
      // The process ended while we looked, or is not ours to read.
    }
  }
  return undefined;
}

/** VmRSS and VmHWM (kB) from /proc/<pid>/status; undefined when the process is gone. */
export function procStatusKb(pid: number): { VmRSS?: number; VmHWM?: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => {
      const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
      return match?.[1] === undefined ? undefined : Number(match[1]);
    };
    const rss = field('VmRSS');
    const hwm = field('VmHWM');
    return { ...(rss !== undefined ? { VmRSS: rss } : {}), ...(hwm !== undefined ? { VmHWM: hwm } : {}) };
  } catch {
    return undefined;
  }
}
