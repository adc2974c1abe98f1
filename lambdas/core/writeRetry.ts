import type { MessageStatus } from './messageStatus.js';

/**
 * The claim and the writes after it (the outcome, a release) are tried until they land (DESIGN §5, "Never
 * out of time mid-send"): they are conditional on the sender's lease, so a retry can never
 * overwrite someone else's move, and a message the relay accepted is not sent again because one
 * write of ours failed. A write refused until the invocation runs out leaves the lease to expire,
 * and the takeover counts an ambiguous attempt (`interruptedAttemptBecomes`, decision 0293). These
 * are the loop's decisions, pure; the sender runs the loop.
 */

/** The first pause between tries, doubled on every try up to the cap. */
export const WRITE_RETRY_FIRST_MS = 100;
/** The writes after a claim are retried with equal jitter up to this pause. */
export const WRITE_RETRY_CAP_MS = 2000;
/** A write retry is not started with less than this left before the invocation's end. */
export const WRITE_RETRY_FLOOR_MS = 500;

export type WriteRetryStep =
  | { readonly kind: 'retry'; readonly pauseMs: number }
  /** Too little time for another try: the copy comes back when the lease has run out. */
  | { readonly kind: 'give-up' };

/**
 * After try number `failedTry` (0 for the first) threw: pause with equal jitter — never 0, so the
 * time left always runs down between tries — or give up when the pause would leave less than the
 * floor.
 */
export function nextWriteTry(failedTry: number, remainingMs: number, random: () => number): WriteRetryStep {
  const ceiling = Math.min(WRITE_RETRY_CAP_MS, WRITE_RETRY_FIRST_MS * 2 ** failedTry);
  const pauseMs = Math.round(ceiling / 2 + random() * (ceiling / 2));
  if (remainingMs - pauseMs < WRITE_RETRY_FLOOR_MS) return { kind: 'give-up' };
  return { kind: 'retry', pauseMs };
}

/** What the landed-check reads of the record as it is now. */
export interface WrittenRecord {
  readonly status: MessageStatus;
  readonly updated_at: string;
  readonly lease_owner?: string;
}

/**
 * A conditional write that lost its condition (or whose try threw) may have lost only to an earlier
 * try of its own, which landed with its answer lost — or to the SDK's own retry of it. The record
 * tells: our status, our `updated_at`, and the lease our write leaves: none after an attempt (every
 * write after one ends the lease), our own after a claim (its owner is drawn for this claim alone).
 */
export function isOwnEarlierWrite(
  now: WrittenRecord | undefined,
  ours: { readonly status: MessageStatus; readonly at: Date; readonly lease?: string },
): boolean {
  return (
    now !== undefined &&
    now.status === ours.status &&
    now.updated_at === ours.at.toISOString() &&
    now.lease_owner === ours.lease
  );
}
