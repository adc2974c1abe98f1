/**
 * Retry backoff (DESIGN §5): exponential with full jitter and a cap,
 * `delay = random(0, min(cap, base · 2^attempt))`, in whole seconds.
 *
 * `attempt` counts from 0: it is the number of failed attempts *before* the one that just failed,
 * so the first retry waits up to `base` seconds. The sender passes the message's `attempts` before
 * the failed one (core/sendDecision.ts), never a queue receive count.
 * A negative, fractional or non-finite attempt is read as its floor, at least 0.
 *
 * Every result is also clamped to SQS's ChangeMessageVisibility maximum (43 200 s = 12 h), the
 * mechanism that applies it.
 *
 * Every place this rule touches, for whoever changes it (each uses the functions here, none
 * re-derives them):
 * - its settings: core/configSpec.ts `retryBaseSeconds`, `retryCapSeconds` (POSTDATE_RETRY_BASE_SECONDS,
 *   POSTDATE_RETRY_CAP_SECONDS, at most SQS_MAX_VISIBILITY_SECONDS), core/config.ts (cap ≥ base, and
 *   {@link retryOutlivesSendQueue}: the sum of `backoffCeilingSeconds` must fit the send queue's
 *   retention), and the CDK props lib/postdateProps.ts (the same checks, named by prop);
 * - the decision: core/sendDecision.ts `backoffAfter` (which backoff for which error class, the
 *   message's attempts as exponent), called by `decideOutcome` (`retrying`, and an outage without
 *   a sending gate); `retryAtOf` turns it into the record's `due_at`;
 * - the sender: sender/outcomeWrite.ts `recordOutcome` writes that `due_at` and keeps the copy for
 *   `visibilitySeconds`, which sender/createSenderHandler.ts sets on the queue within the 12 hours SQS
 *   counts from the receive (core/queueLimits.ts `visibilitySinceReceive`; the copy of a longer
 *   backoff comes back a minute early and is re-delayed);
 * - what holds it: core/sendDecision.ts `sendableAt` (no copy may send a `retrying` message before
 *   its `due_at`), and the sweeper (core/sweepDecision.ts), which re-dispatches a `retrying` message
 *   whose `due_at` is long past;
 * - its tests: test/core/backoff.test.ts, test/core/sendDecision.test.ts, test/sender/retriesAndDeadLetters.test.ts.
 * Other backoffs are separate rules, not this one: the writes after a claim (core/writeRetry.ts),
 * webhook deliveries (core/webhooks.ts `webhookRetryDelayMs`; a kept webhook copy's
 * `keptCopyVisibilitySeconds` draws from this file's ceiling), the sweeper's re-dispatch
 * (core/sweepDecision.ts), the relay breaker's probe (core/relayBreaker.ts), the AWS SDK's retries
 * (core/awsClientLimits.ts) and the typed client's (lambdas/client/retryPolicy.ts).
 */

export interface BackoffPolicy {
  readonly baseSeconds: number;
  readonly capSeconds: number;
}

import { SEND_QUEUE_RETENTION_DAYS, SQS_MAX_VISIBILITY_SECONDS } from './queueLimits.js';

/** Config-class errors (bad credentials, TLS, sender not allowed) wait at least this long. */
export const CONFIG_BACKOFF_FLOOR_SECONDS = 900;

/** `min(cap, base · 2^attempt)`, whole seconds, never negative, never above 43 200. */
export function backoffCeilingSeconds(attempt: number, policy: BackoffPolicy): number {
  const base = nonNegative(policy.baseSeconds);
  const cap = Math.min(nonNegative(policy.capSeconds), SQS_MAX_VISIBILITY_SECONDS);
  // 2^64 · 43 200 is still finite; beyond that the cap binds anyway.
  const exponent = Math.min(normalizeAttempt(attempt), 64);
  return Math.floor(Math.min(cap, base * 2 ** exponent));
}

/** Full jitter: a whole number of seconds drawn uniformly from [0, ceiling]. */
export function backoffSeconds(attempt: number, policy: BackoffPolicy, random: () => number): number {
  return drawBetween(0, backoffCeilingSeconds(attempt, policy), random);
}

/**
 * The ceiling of the long backoff for config-class errors: `cap · 2^attempt`, at least the floor,
 * at most 43 200 s. The floor is 15 minutes, or the policy's cap when that is smaller (so tests that
 * compress time with a cap of seconds compress this too).
 */
export function configBackoffCeilingSeconds(attempt: number, policy: BackoffPolicy): number {
  const floor = configBackoffFloorSeconds(policy);
  const cap = Math.min(nonNegative(policy.capSeconds), SQS_MAX_VISIBILITY_SECONDS);
  const exponent = Math.min(normalizeAttempt(attempt), 64);
  return Math.floor(Math.max(floor, Math.min(SQS_MAX_VISIBILITY_SECONDS, cap * 2 ** exponent)));
}

/** The smallest config-class backoff: 15 minutes, or the cap when it is smaller. */
export function configBackoffFloorSeconds(policy: BackoffPolicy): number {
  const cap = Math.min(nonNegative(policy.capSeconds), SQS_MAX_VISIBILITY_SECONDS);
  return Math.floor(Math.min(CONFIG_BACKOFF_FLOOR_SECONDS, cap));
}

/**
 * The long backoff for config-class errors: a whole number of seconds drawn uniformly from
 * [floor, configCeiling]. Long because retrying soon cannot help until an operator fixes the
 * configuration (the alarm tells them), yet jittered so messages do not return all at once.
 */
export function configBackoffSeconds(attempt: number, policy: BackoffPolicy, random: () => number): number {
  return drawBetween(configBackoffFloorSeconds(policy), configBackoffCeilingSeconds(attempt, policy), random);
}

function drawBetween(low: number, high: number, random: () => number): number {
  const span = high - low;
  const value = low + Math.floor(unitInterval(random()) * (span + 1));
  return Math.min(high, Math.max(low, value));
}

/** A random source's value forced into [0, 1): a broken source cannot make a delay NaN. */
function unitInterval(value: number): number {
  if (!Number.isFinite(value) || value < 0) return 0;
  return value >= 1 ? 1 - Number.EPSILON : value;
}

function normalizeAttempt(attempt: number): number {
  if (Number.isNaN(attempt) || attempt < 0) return 0;
  if (attempt === Number.POSITIVE_INFINITY) return 64;
  return Math.floor(attempt);
}

function nonNegative(value: number): number {
  if (Number.isNaN(value) || value < 0) return 0;
  return value;
}

/**
 * The longest a copy can spend waiting between attempts, the sum of the backoff ceilings
 * `min(cap, base · 2^n)` over the `maxAttempts − 1` retries, when it is not shorter than the send
 * queue's retention: SQS would delete the copy before its last attempt. Undefined when it fits.
 */
export function retryOutlivesSendQueue(settings: {
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
  readonly retryCapSeconds: number;
}): { readonly retryingSeconds: number; readonly retentionSeconds: number } | undefined {
  const policy = { baseSeconds: settings.retryBaseSeconds, capSeconds: settings.retryCapSeconds };
  let retryingSeconds = 0;
  for (let attempt = 0; attempt < settings.maxAttempts - 1; attempt++) {
    retryingSeconds += backoffCeilingSeconds(attempt, policy);
  }
  const retentionSeconds = SEND_QUEUE_RETENTION_DAYS * 86_400;
  return retryingSeconds < retentionSeconds ? undefined : { retryingSeconds, retentionSeconds };
}
