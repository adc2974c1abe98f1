import { redactAddresses } from '../core/errorForLog.js';
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
  /** The longest one attempt may take, its answer read to the end. */
  readonly timeoutMs: number;
  readonly fetch: (request: Request) => Promise<Response>;
  readonly random: () => number;
  readonly now: () => Date;
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * A `fetch` that sends the very same request again (same body, same `Idempotency-Key`) while
 * retryPolicy.ts allows it, and returns the last answer; only when no attempt got an answer does it
 * throw, a PostdateNetworkError. An attempt whose answer is not all in within `timeoutMs` got none.
 * The caller's abort signal stops it at once, never retried.
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
          `${request.method} ${shownPath(request.url)} got no answer after ${attempt} attempt(s)`,
          request.headers.get(IDEMPOTENCY_KEY_HEADER),
          { cause: outcome.error },
        );
      }
      await options.sleep(delay, request.signal);
    }
  };
}

/**
 * The request's path as an error message may show it: a caller logs the message, and a suppression's
 * path holds a whole address (`/v1/suppressions/ada%40example.com`), which no log may keep.
 */
function shownPath(url: string): string {
  return new URL(url).pathname
    .split('/')
    .map((segment) => redactAddresses(decodedSegment(segment)))
    .join('/');
}

/** One segment of a path as it reads (`%40` is `@`); one no UTF-8 decodes, with its `%40`s read. */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment.replaceAll(/%40/gi, '@');
  }
}

type AttemptOutcome =
  | { readonly response: Response; readonly failure: AttemptFailure }
  | { readonly response: undefined; readonly failure: AttemptFailure; readonly error: unknown };

/**
 * One attempt on a copy of the request (the original's body stays unread for the next one), its
 * answer read whole within the attempt's time: one that stalls halfway is no answer, as one that
 * never starts. The timer and the link to the caller's signal end with the attempt (a service that
 * sends thousands a second keeps no timer for 30 s after each answer).
 */
async function attemptOnce(options: RetryingFetchOptions, request: Request): Promise<AttemptOutcome> {
  const attempt = new AbortController();
  const timedOut = new DOMException(`No whole answer within ${options.timeoutMs} ms`, 'TimeoutError');
  const timer = setTimeout(() => attempt.abort(timedOut), options.timeoutMs);
  const callerAborted = (): void => attempt.abort(request.signal.reason);
  request.signal.addEventListener('abort', callerAborted, { once: true });
  try {
    if (request.signal.aborted) throw request.signal.reason;
    const answer = await options.fetch(new Request(request.clone(), { signal: attempt.signal }));
    const body = await answer.arrayBuffer();
    const response = new Response(body.byteLength === 0 ? null : body, {
      status: answer.status,
      statusText: answer.statusText,
      headers: answer.headers,
    });
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), options.now());
    return { response, failure: { kind: 'status', status: response.status, retryAfterMs } };
  } catch (error) {
    if (request.signal.aborted) throw error;
    return {
      response: undefined,
      failure: { kind: 'network' },
      error: attempt.signal.reason === timedOut ? timedOut : error,
    };
  } finally {
    clearTimeout(timer);
    request.signal.removeEventListener('abort', callerAborted);
  }
}
