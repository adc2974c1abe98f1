import { PostdateNetworkError } from './clientErrors.js';
import {
  type AttemptFailure,
  isTransientFailure,
  parseRetryAfter,
  type RetryPolicy,
  retryDelayMs,
} from './retryPolicy.js';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

export interface RetryingFetchOptions {
  readonly policy: RetryPolicy;
  readonly fetch: (request: Request) => Promise<Response>;
  readonly random: () => number;
  readonly now: () => Date;
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * A `fetch` that sends the very same request again (same body, same `Idempotency-Key`) while
 * retryPolicy.ts allows it, and returns the last answer; only when no attempt got an answer does it
 * throw, a PostdateNetworkError. The caller's abort signal stops it at once, never retried.
 */
export function retryingFetch(options: RetryingFetchOptions): (request: Request) => Promise<Response> {
  return async function fetchWithRetries(request: Request): Promise<Response> {
    const retryRequest = {
      method: request.method,
      path: new URL(request.url).pathname,
      hasIdempotencyKey: request.headers.has(IDEMPOTENCY_KEY_HEADER),
    };
    for (let attempt = 1; ; attempt++) {
      const outcome = await attemptOnce(options, request);
      if (outcome.response !== undefined && !isTransientFailure(outcome.failure)) return outcome.response;
      const delay = retryDelayMs(
        { request: retryRequest, failure: outcome.failure, attempt, policy: options.policy },
        options.random,
      );
      if (delay === null) {
        if (outcome.response !== undefined) return outcome.response;
        throw new PostdateNetworkError(
          `${request.method} ${new URL(request.url).pathname} got no answer after ${attempt} attempt(s)`,
          request.headers.get(IDEMPOTENCY_KEY_HEADER),
          { cause: outcome.error },
        );
      }
      // The answer is not read: release its connection before waiting.
      await outcome.response?.body?.cancel();
      await options.sleep(delay, request.signal);
    }
  };
}

type AttemptOutcome =
  | { readonly response: Response; readonly failure: AttemptFailure }
  | { readonly response: undefined; readonly failure: AttemptFailure; readonly error: unknown };

/** One attempt on a copy of the request (the original's body stays unread for the next one). */
async function attemptOnce(options: RetryingFetchOptions, request: Request): Promise<AttemptOutcome> {
  try {
    const response = await options.fetch(request.clone());
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), options.now());
    return { response, failure: { kind: 'status', status: response.status, retryAfterMs } };
  } catch (error) {
    if (request.signal.aborted) throw error;
    return { response: undefined, failure: { kind: 'network' }, error };
  }
}
