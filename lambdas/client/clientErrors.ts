/**
 * What the client throws. An HTTP error is a {@link PostdateProblemError} carrying the API's RFC 9457
 * problem (`type`, `status`, `errors`, …); a request that got no answer at all, after its retries,
 * is a {@link PostdateNetworkError} with the last failure as `cause`; the caller's own input that
 * cannot be sent is a {@link PostdateInputError}, thrown before anything is.
 */

/** One offending field of a 400 (`field` is a JSON Pointer into the body, a header or a parameter). */
export interface ProblemFieldError {
  readonly field: string;
  readonly message: string;
}

/** An RFC 9457 problem as the client reports it. */
export interface PostdateProblem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly errors: readonly ProblemFieldError[];
  /** On a 409: the status the message has now. */
  readonly currentStatus?: string;
}

/** The base of every error the client throws. */
export class PostdateClientError extends Error {
  override readonly name: string = 'PostdateClientError';
}

/**
 * An option of the client or a value a call would send that the client refuses before sending
 * anything: `field` names it (`timeoutMs`, `retry.maxAttempts`, `Idempotency-Key`) and `reason` says
 * what it must be, as a field error of the API does.
 */
export class PostdateInputError extends PostdateClientError {
  override readonly name = 'PostdateInputError';
  constructor(
    readonly field: string,
    readonly reason: string,
    /** Where the value came from, when `field` alone does not say (`made by newIdempotencyKey`). */
    source?: string,
  ) {
    super(`${field}${source === undefined ? '' : ` (${source})`} ${reason}`);
  }
}

/** The API answered with an error (after any retries). */
export class PostdateProblemError extends PostdateClientError implements PostdateProblem {
  override readonly name = 'PostdateProblemError';
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly errors: readonly ProblemFieldError[];
  readonly currentStatus?: string;
  /** The answer's `Retry-After` in milliseconds, when it had one. */
  readonly retryAfterMs: number | null;
  /** The `Idempotency-Key` the request was sent with, to retry it later with the same key. */
  readonly idempotencyKey: string | null;

  constructor(
    problem: PostdateProblem,
    context: { readonly retryAfterMs: number | null; readonly idempotencyKey: string | null },
  ) {
    super(`${problem.status} ${problem.title}: ${problem.detail}`);
    this.type = problem.type;
    this.title = problem.title;
    this.status = problem.status;
    this.detail = problem.detail;
    this.errors = problem.errors;
    if (problem.currentStatus !== undefined) this.currentStatus = problem.currentStatus;
    this.retryAfterMs = context.retryAfterMs;
    this.idempotencyKey = context.idempotencyKey;
  }
}

/** No answer (connection refused, reset, DNS) after every attempt. */
export class PostdateNetworkError extends PostdateClientError {
  override readonly name = 'PostdateNetworkError';
  constructor(
    message: string,
    readonly idempotencyKey: string | null,
    options: { readonly cause: unknown },
  ) {
    super(message, options);
  }
}

/**
 * The problem in an error answer. Postdate's own answers are `application/problem+json`; one made by
 * API Gateway (`{"message": "Unauthorized"}`, a throttling 429) or a proxy is turned into a problem of
 * type `about:blank` with its status, as RFC 9457 §4.2.1 does for a plain HTTP status.
 */
export function problemOf(status: number, statusText: string, body: unknown): PostdateProblem {
  const record = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
  const title = text(record.title) ?? (statusText || `HTTP ${status}`);
  const problem: PostdateProblem = {
    type: text(record.type) ?? 'about:blank',
    title,
    status: typeof record.status === 'number' ? record.status : status,
    detail: text(record.detail) ?? text(record.message) ?? title,
    errors: Array.isArray(record.errors) ? record.errors.filter(isFieldError) : [],
  };
  const currentStatus = text(record.current_status);
  return currentStatus === undefined ? problem : { ...problem, currentStatus };
}

function isFieldError(value: unknown): value is ProblemFieldError {
  if (typeof value !== 'object' || value === null) return false;
  const { field, message } = value as Record<string, unknown>;
  return typeof field === 'string' && typeof message === 'string';
}
