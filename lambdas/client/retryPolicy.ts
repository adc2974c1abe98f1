/**
 * When the client tries a request again, and how long it waits first. Pure: the random source is an
 * argument, so tests never sleep on chance.
 *
 * A request is retried after a 429, a 5xx or a network error only when repeating it cannot do the
 * work twice: it carries an `Idempotency-Key` (every enqueue does; the API answers a replay with the
 * original message), it is a batch enqueue (its items each carry theirs), a GET, one of the PUTs
 * that set a value (a group's version, a suppression), a message's reschedule (an absolute time) or
 * its cancel (an end): decision 0196; a repeat after a landed first try may answer 409, the status
 * the first one made. A template render is a preview that stores and sends nothing (decision 0220).
 * Anything else — a template PUT, which stores a new version each time (DESIGN §10), a manual retry
 * (one that failed again at once would be sent again), another DELETE, a keyless POST, a route this
 * list does not know — is retried after a 429 only, which API Gateway answers before the function
 * runs.
 */

export interface RetryPolicy {
  /** Attempts in all, the first included (default 4; 1 turns retries off). */
  readonly maxAttempts: number;
  /** The first retry waits up to this long (full jitter); each next one up to twice as long. */
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
  if (request.hasIdempotencyKey || method === 'GET') return true;
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
