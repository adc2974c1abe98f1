/**
 * When the client tries a request again, and how long it waits first. Pure: the random source is an
 * argument, so tests never sleep on chance.
 *
 * A request is retried after a 429, a 5xx or a network error only when repeating it cannot do the
 * work twice: it is an enqueue with its `Idempotency-Key` (the API answers a replay with the original
 * message; it reads the header on that route alone, so the header on another call decides nothing),
 * it is a batch enqueue (its items each carry theirs), a GET, one of the PUTs
 * that set a value (a group's version, a suppression), a message's reschedule (an absolute time) or
 * its cancel (an end): decision 0196; a repeat after a landed first try may answer 409, the status
 * the first one made. A template render is a preview that stores and sends nothing (decision 0220).
 * Anything else — a template PUT, which stores a new version each time (DESIGN §10), a manual retry
 * (one that failed again at once would be sent again), another DELETE, a keyless POST, a route this
 * list does not know — is retried after a 429 only, which API Gateway answers before the function
 * runs. A batch answered 200 with an item whose write failed (500/503) is sent again as an
 * enqueue's 5xx is (hasFailedItems, mergeBatchResults).
 */
import { PostdateInputError } from './clientErrors.js';

export interface RetryPolicy {
  /** Attempts in all, the first included: a whole number (default 4; 1 turns retries off). */
  readonly maxAttempts: number;
  /**
   * The first retry waits up to this long (full jitter); each next one up to twice as long. This and
   * the other two are milliseconds from 0 to 2^31 − 1, as a timer holds them.
   */
  readonly baseDelayMs: number;
  /** No backoff is longer than this. */
  readonly maxDelayMs: number;
  /**
   * The longest `Retry-After` the client waits for; a longer one ends the retries and the answer is
   * thrown (its `retryAfterMs` says when to come back).
   */
  readonly maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 30_000,
};

/** The longest wait a timer holds: past 2^31 − 1 ms, setTimeout fires at once (after 1 ms). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** What a number option may be: a count is a whole number from `min`; milliseconds are a timer's wait. */
export type OptionRange =
  | { readonly unit: 'count'; readonly min: number }
  | { readonly unit: 'ms'; readonly min: number; readonly max: number };

/**
 * Each field's range. Out of it the client misbehaves quietly: NaN attempts never end (no attempt
 * number is ≥ NaN), 0 still makes one, a NaN or negative delay waits nothing, a delay past
 * MAX_TIMER_MS none at all.
 */
const RETRY_POLICY_RANGES: { readonly [Field in keyof RetryPolicy]: OptionRange } = {
  maxAttempts: { unit: 'count', min: 1 },
  baseDelayMs: { unit: 'ms', min: 0, max: MAX_TIMER_MS },
  maxDelayMs: { unit: 'ms', min: 0, max: MAX_TIMER_MS },
  maxRetryAfterMs: { unit: 'ms', min: 0, max: MAX_TIMER_MS },
};

/** Why `value` is out of `range` (`must be …, got NaN`), or null when it is in. */
export function outOfRange(value: unknown, range: OptionRange): string | null {
  const shown =
    typeof value === 'number' ? String(value) : typeof value === 'string' ? `"${value}"` : typeof value;
  const got = `got ${shown}`;
  if (range.unit === 'count') {
    return Number.isSafeInteger(value) && (value as number) >= range.min
      ? null
      : `must be a whole number, ${range.min} or more, ${got}`;
  }
  // NaN is in no range: every comparison with it is false.
  return typeof value === 'number' && value >= range.min && value <= range.max
    ? null
    : `must be milliseconds from ${range.min} to ${range.max}, ${got}`;
}

/**
 * The policy of the client's `retry` option: its fields over the defaults (a field given as
 * undefined keeps its default), each in its range; an unknown field (`attempts`) is refused rather
 * than ignored. Throws a PostdateInputError naming the first field that is wrong.
 */
export function retryPolicyOf(retry: Partial<RetryPolicy> | undefined): RetryPolicy {
  const policy: Record<string, unknown> = { ...DEFAULT_RETRY_POLICY };
  for (const [field, value] of Object.entries(retry ?? {})) {
    if (!Object.hasOwn(RETRY_POLICY_RANGES, field)) {
      const fields = Object.keys(RETRY_POLICY_RANGES).join(', ');
      throw new PostdateInputError(`retry.${field}`, `is no retry option: ${fields}`);
    }
    if (value !== undefined) policy[field] = value;
  }
  for (const [field, range] of Object.entries(RETRY_POLICY_RANGES)) {
    const reason = outOfRange(policy[field], range);
    if (reason !== null) throw new PostdateInputError(`retry.${field}`, reason);
  }
  return policy as unknown as RetryPolicy;
}

/** What went wrong with one attempt: an HTTP status, or no answer at all. */
export type AttemptFailure =
  | { readonly kind: 'status'; readonly status: number; readonly retryAfterMs: number | null }
  | { readonly kind: 'network' };

export interface RetryRequest {
  readonly method: string;
  /** The URL's path, the base URL's own path included (`/prod/v1/groups/…`). */
  readonly path: string;
  readonly hasIdempotencyKey: boolean;
}

/** The one route that reads an `Idempotency-Key` and answers its replay (DESIGN §3). */
const KEYED_WRITE = { method: 'POST', path: /\/v1\/messages$/ } as const;

/** The keyless writes that may be repeated, by method and the end of their path. */
const REPEATABLE_WRITES: readonly { readonly method: string; readonly path: RegExp }[] = [
  { method: 'POST', path: /\/v1\/messages\/batch$/ },
  { method: 'PUT', path: /\/v1\/groups\/[^/]+$/ },
  { method: 'PUT', path: /\/v1\/suppressions\/[^/]+$/ },
  { method: 'PATCH', path: /\/v1\/messages\/[^/]+$/ },
  { method: 'DELETE', path: /\/v1\/messages\/[^/]+$/ },
  { method: 'POST', path: /\/v1\/templates\/[^/]+\/render$/ },
];

/** Whether doing `request` twice is doing it once (see the module comment). */
function isRepeatable(request: RetryRequest): boolean {
  const method = request.method.toUpperCase();
  if (method === 'GET') return true;
  if (request.hasIdempotencyKey && method === KEYED_WRITE.method && KEYED_WRITE.path.test(request.path))
    return true;
  return REPEATABLE_WRITES.some((write) => write.method === method && write.path.test(request.path));
}

/** Whether the answer (or its absence) is one that may go away: 429, 5xx, no answer. */
export function isTransientFailure(failure: AttemptFailure): boolean {
  return failure.kind === 'network' || failure.status === 429 || failure.status >= 500;
}

/** Whether repeating `request` is safe after `failure` (see the module comment). */
export function mayRetry(request: RetryRequest, failure: AttemptFailure): boolean {
  if (!isTransientFailure(failure)) return false;
  if (isRepeatable(request)) return true;
  return failure.kind === 'status' && failure.status === 429;
}

/**
 * Full jitter: uniformly in [0, min(maxDelayMs, baseDelayMs · 2^retry)], whole milliseconds.
 * `retry` counts from 0 (the first retry).
 */
export function backoffDelayMs(retry: number, policy: RetryPolicy, random: () => number): number {
  const exponent = Math.min(Math.max(0, Math.floor(retry)), 32);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
  const draw = random();
  const unit = Number.isFinite(draw) ? Math.min(Math.max(draw, 0), 1) : 0;
  return Math.floor(unit * ceiling);
}

/**
 * The wait before retry number `retry` (from 0) after `failure`, or null to stop: attempts used up,
 * not retryable, or a `Retry-After` longer than the policy waits. A `Retry-After` is honoured as it
 * is: never shortened by the backoff.
 */
export function retryDelayMs(
  input: {
    readonly request: RetryRequest;
    readonly failure: AttemptFailure;
    readonly attempt: number;
    readonly policy: RetryPolicy;
  },
  random: () => number,
): number | null {
  const { request, failure, attempt, policy } = input;
  if (attempt >= policy.maxAttempts || !mayRetry(request, failure)) return null;
  if (failure.kind === 'status' && failure.retryAfterMs !== null) {
    return failure.retryAfterMs <= policy.maxRetryAfterMs ? failure.retryAfterMs : null;
  }
  return backoffDelayMs(attempt - 1, policy, random);
}

/**
 * A `Retry-After` header (RFC 9110 §10.2.3) in milliseconds from `now`: delay-seconds or an
 * HTTP-date; null when absent or unreadable. A date in the past is 0.
 */
export function parseRetryAfter(value: string | null, now: Date): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now.getTime());
}

/**
 * Whether a batch answer holds an item worth sending again: one whose write failed (500, 503), which
 * a single enqueue's own 5xx would have been retried for. A 4xx item is that item's answer.
 */
export function hasFailedItems(results: readonly { readonly status: number }[]): boolean {
  return results.some(isFailedItem);
}

/** One batch item whose write failed (500, 503): {@link hasFailedItems}'s test of each. */
function isFailedItem(result: { readonly status: number }): boolean {
  return isTransientFailure({ kind: 'status', status: result.status, retryAfterMs: null });
}

/**
 * A batch sent again merged into the answer before it: each item keeps its earlier answer unless that
 * was a failure ({@link hasFailedItems}), which takes the new one. The same batch answers the same
 * indexes and pointers (`/messages/3/to`), and a replay of an item stored the first time (200) never
 * hides the 202 that stored it.
 */
export function mergeBatchResults<Result extends { readonly index: number; readonly status: number }>(
  earlier: readonly Result[],
  again: readonly Result[],
): Result[] {
  return earlier.map((result) =>
    isFailedItem(result) ? (again.find((next) => next.index === result.index) ?? result) : result,
  );
}
