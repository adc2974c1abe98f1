/**
 * SQS's own limits, defined once for the functions, the CLI and the construct: most entries per
 * batch request, longest `DelaySeconds`, longest visibility timeout.
 */
/** Most messages per SendMessageBatch, DeleteMessageBatch, ChangeMessageVisibilityBatch or receive. */
export const SQS_MAX_BATCH = 10;

/** SQS DelaySeconds accepts at most 15 minutes. */
export const SQS_MAX_DELAY_SECONDS = 900;

/**
 * A delay as SQS takes it: whole seconds in [0, 900]. The sub-second rest is dropped (a sender waits
 * it out in-process, core/dispatchDecision.ts `decideArrival`), so a copy is never visible later than
 * its time; a delay that is over, negative or not a number is 0, one beyond 15 minutes is 900.
 * The one clamp of every copy's delay: the relay's and the api's dispatch (`decideDispatch`), the
 * sender's re-delay of an early copy (`decideArrival`), and the queue adapter (SqsDispatchQueue.ts).
 */
export function sqsDelaySeconds(seconds: number): number {
  if (Number.isNaN(seconds) || seconds <= 0) return 0;
  return Math.min(SQS_MAX_DELAY_SECONDS, Math.floor(seconds));
}

/** Days the send queue keeps a copy (lib/queueLayout.ts, and the local stack's queue): a retrying copy must outlive its backoff. */
export const SEND_QUEUE_RETENTION_DAYS = 4;

/** SQS ChangeMessageVisibility accepts at most 12 hours. */
export const SQS_MAX_VISIBILITY_SECONDS = 43_200;

/**
 * How long before the function's invocation the poller may have received its batch: the send queue's
 * event source has no batching window, so it hands a batch on at once; a minute is room to spare.
 */
export const RECEIVE_LEAD_SECONDS = 60;

/**
 * The visibility a kept copy may be given `elapsedMs` into the invocation that holds it: `seconds`,
 * but SQS counts a received message's 12 hours from its receive and refuses a ChangeMessageVisibility
 * beyond them ("Total VisibilityTimeout for the message is beyond the limit"), which would leave the
 * copy to come back after the queue's own timeout. A copy given less comes back a little early and
 * is re-delayed (its retry time is the record's `due_at`, core/sendDecision.ts `sendableAt`).
 */
export function visibilitySinceReceive(seconds: number, elapsedMs: number): number {
  const elapsed = Number.isFinite(elapsedMs) && elapsedMs > 0 ? Math.ceil(elapsedMs / 1000) : 0;
  return Math.max(0, Math.min(seconds, SQS_MAX_VISIBILITY_SECONDS - RECEIVE_LEAD_SECONDS - elapsed));
}

/**
 * The send queue's `maxReceiveCount`: only a backstop (DESIGN §5, "Dead means dead"). The sender
 * itself moves a copy to the DLQ when the message's SMTP attempts are exhausted; receives that are
 * no attempt (a live lease, a batch out of time, a released claim) must not reach it first, and the
 * sender replaces a copy that comes close to it (lambdas/sender/createSenderHandler.ts).
 */
export function backstopReceiveCount(maxAttempts: number): number {
  return Math.min(1000, 3 * maxAttempts + 10);
}

/**
 * Which receive of its copy this is, from the SQS record's `ApproximateReceiveCount` attribute:
 * 1 when SQS gave none or nonsense. The sender's backstop and the webhook copy's backoff read it.
 */
export function receiveCountOf(
  attributes: { readonly ApproximateReceiveCount?: string } | undefined,
): number {
  const count = Number(attributes?.ApproximateReceiveCount);
  return Number.isInteger(count) && count >= 1 ? count : 1;
}
