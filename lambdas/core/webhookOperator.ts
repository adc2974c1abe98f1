/**
 * What an operator (or a tenant's API client) may do with a webhook delivery beyond watching it
 * (DESIGN §3, §11; docs/decisions/0133-failed-deliveries-listed-and-stalled-ones-retried.md): which
 * deliveries a manual retry takes, and how far the endpoint's counts read. Pure: the store writes
 * the same rule as its condition, the route asks it first.
 */
import { WEBHOOK_DELIVERY_STATUS, type WebhookDeliveryStatus } from './webhooks.js';

/**
 * How long past its next attempt a `pending` delivery must be before a manual retry may take it:
 * its copy is not coming (in the webhook DLQ, or lost). A copy kept by table or queue errors comes
 * back 5 s, doubling, up to 360 s later, and reaches the DLQ after 20 receives: 41 minutes at the
 * least, 89 at the most (lib/webhookLayout.ts `WEBHOOK_QUEUE.maxReceiveCount`). Past two hours no
 * live copy of it is still cycling, so a retry restarts nothing that was about to happen. (Were one
 * still cycling, the retry's new revision makes it stale: one extra POST at most, never a second
 * chain.)
 */
export const WEBHOOK_STALLED_AFTER_MS = 2 * 3_600_000;

/**
 * `GET /v1/webhooks/{id}` counts every failed delivery the endpoint keeps, up to this many (a
 * bounded read, DESIGN §4): the answer's `failed` is this when there are this many or more.
 */
export const WEBHOOK_FAILED_COUNT_CAP = 10_000;

/** What a manual retry looks at. */
export interface RetryCandidate {
  readonly status: WebhookDeliveryStatus;
  /** ISO; set while pending. */
  readonly nextAttemptAt: string | null;
}

/**
 * A manual retry takes a `failed` delivery, or a `pending` one whose next attempt is more than
 * WEBHOOK_STALLED_AFTER_MS overdue (its copy parked in the DLQ or lost). Never a delivered one,
 * nor a pending one whose copy may still come.
 */
export function mayRetryDelivery(delivery: RetryCandidate, now: Date): boolean {
  if (delivery.status === WEBHOOK_DELIVERY_STATUS.failed) return true;
  const from = stalledRetryFrom(delivery);
  return from !== null && from.getTime() < now.getTime();
}

/**
 * From when a manual retry may take a `pending` delivery: its next attempt WEBHOOK_STALLED_AFTER_MS
 * overdue (what a refused retry tells the caller to wait for). Null for any other delivery (a failed
 * one is retryable now, a delivered one never) or a pending one without a next attempt.
 */
export function stalledRetryFrom(delivery: RetryCandidate): Date | null {
  if (delivery.status !== WEBHOOK_DELIVERY_STATUS.pending) return null;
  const due = Date.parse(delivery.nextAttemptAt ?? '');
  return Number.isFinite(due) ? new Date(due + WEBHOOK_STALLED_AFTER_MS) : null;
}

/** The time a pending delivery's next attempt must be before for a manual retry to take it. */
export function stalledBefore(now: Date): Date {
  return new Date(now.getTime() - WEBHOOK_STALLED_AFTER_MS);
}
