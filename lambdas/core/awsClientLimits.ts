/**
 * The limits every AWS SDK client of the functions is built with (issue 15 §4), and what they make
 * of one call in the worst case, defined once. The adapters build their clients from them
 * (lambdas/adapters/awsClients.ts); the sender's timing (lambdas/core/sendTiming.ts) reserves
 * {@link worstCaseAwsCallMs} for the write that must land after a reply. Pure data, no SDK import.
 */
export interface AwsClientLimits {
  /** Time to open the TCP (and TLS) connection to the service. */
  readonly connectionTimeoutMs: number;
  /** Time a request may wait on its socket without an answer. */
  readonly requestTimeoutMs: number;
  /** Attempts per call, the first included (the SDK's standard retry strategy backs off between them). */
  readonly maxAttempts: number;
}

/** @default connection 3 s, request 5 s, 3 attempts */
export const AWS_CLIENT_LIMITS: AwsClientLimits = {
  connectionTimeoutMs: 3000,
  requestTimeoutMs: 5000,
  maxAttempts: 3,
};

/**
 * How the SDK's standard retry strategy waits before retry `i` (0 for the first retry): a random
 * share of `min(capMs, baseMs · 2^i)`. Not ours to set; these are the SDK's own numbers
 * (@smithy/core's retry: the throttling base, the larger of its two, and MAXIMUM_RETRY_DELAY), pinned
 * by test/adapters/awsClients.test.ts so an SDK upgrade that changes them fails a test.
 */
export interface AwsRetryBackoff {
  readonly baseMs: number;
  readonly capMs: number;
}

export const AWS_SDK_RETRY_BACKOFF: AwsRetryBackoff = { baseMs: 1000, capMs: 20_000 };

/**
 * The longest one logical SDK call can take under these limits: every attempt times out on both its
 * connection and its request, with the longest backoff before each retry. (A service's Retry-After
 * hint could lengthen a backoff by up to 5 s; DynamoDB sends none.)
 */
export function worstCaseAwsCallMs(
  limits: AwsClientLimits,
  backoff: AwsRetryBackoff = AWS_SDK_RETRY_BACKOFF,
): number {
  const attempts = Math.max(1, limits.maxAttempts);
  let total = attempts * (limits.connectionTimeoutMs + limits.requestTimeoutMs);
  for (let retry = 0; retry < attempts - 1; retry += 1) {
    total += Math.min(backoff.capMs, backoff.baseMs * 2 ** retry);
  }
  return total;
}
