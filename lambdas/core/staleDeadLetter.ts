import { retentionRanOut } from './messageLifetime.js';
import { isTerminal, isWaitingForOperator, MESSAGE_STATUS, type MessageStatus } from './messageStatus.js';
import { type DeathRecord, redrivesDeath } from './sendDecision.js';
import { isLiveSide } from './testSide.js';

/** What the rule reads of a message's state record. */
export interface DeadLetterRecord extends DeathRecord {
  readonly status: MessageStatus;
  readonly rev: number;
  /** Its TTL: set when an operator discarded it (core/messageLifetime.ts). */
  readonly expires_at?: number;
}

/** What the rule reads of a copy in the DLQ: its rev and what it says of the DLQ (`"dlq"`, `"death"`). */
export interface DeadLetter {
  readonly rev: number;
  readonly dlq?: boolean;
  readonly death?: number | undefined;
}

/**
 * Why a copy in the send queue's DLQ is stale — its message moved on, so no redrive of it can ever
 * send anything (the sender drops it, core/sendDecision.ts `admitCopy`) — or `undefined` when it is
 * not. Stale: the record is gone (`null`: the caller knows it is, not merely that a read missed it),
 * it is at another rev (DESIGN §2: a manual retry gave it rev + 1 and a new copy), it ended in a
 * status that waits for nobody (`sent`, `cancelled`, …), or its message is `dead` and a redrive of it
 * would not send it (core/sendDecision.ts `redrivesDeath`, the sender's own rule): a marked copy
 * (`"dlq": true`) of an earlier death of a message that died again (decision 0149), an unmarked
 * one, which the send queue's backstop parked (decision 0167; a redrive gives it a new SQS id, so it
 * is never the record's `dead_copy` again), or the copy of a discarded message whose retention ran
 * out at `now` (decision 0181: nothing takes it back). Never stale: the current copy of a message that waits for
 * an operator (`dead`'s: the marked copy naming its death, its only one, §5 "Dead means dead") or of
 * a live message (the queue's backstop). The one rule for all who take stale copies off the DLQ:
 * the sweeper on every run (lambdas/sweeper/staleDeadLetters.ts), `postdate dlq drop` (decision 0141)
 * and `postdate dlq redrive --ids`, which moves no stale copy (decision 0176).
 */
export function staleDeadLetter(
  copy: DeadLetter,
  record: DeadLetterRecord | null,
  now: Date,
): string | undefined {
  if (record === null) return 'no record (expired or never written)';
  if (record.rev !== copy.rev) return `stale copy: the message is at rev ${record.rev} (${record.status})`;
  if (isTerminal(record.status) && !isWaitingForOperator(record.status))
    return `ended already (${record.status})`;
  const mark = { fromDeadLetters: copy.dlq === true, death: copy.death };
  if (record.status !== MESSAGE_STATUS.dead) return undefined;
  if (redrivesDeath(mark, record))
    return retentionRanOut(record.expires_at, now)
      ? 'discarded, and its retention ran out: nothing takes it back (a new message would)'
      : undefined;
  return mark.fromDeadLetters
    ? `of an earlier death: the message died again after ${record.attempts ?? 0} attempts`
    : 'unmarked, as the send queue’s backstop parked it: a redrive of it is dropped';
}

const DAY_MS = 86_400_000;

/**
 * A waiting `dead` message's copy this old is replaced by a fresh one (decision 0148): the
 * DLQ keeps a copy 14 days (lib/queueLayout.ts, SQS's maximum), the message waits with no end.
 */
export const DEAD_LETTER_RENEW_AGE_MS = 12 * DAY_MS;

/**
 * How long a `dead` message may be without a copy before the sweeper makes it one: until then the
 * sender's own move of its `dead_copy` may still be under way (it retries every few seconds).
 */
export const DEAD_LETTER_SETTLE_MS = 15 * 60_000;

/** What the care of the DLQ reads of a message's state record. */
export interface WaitingDeadRecord extends DeadLetterRecord {
  readonly tenant: string;
  /** For a waiting record: since when it waits (its place in the `due` index's waiting partition). */
  readonly due_at?: string;
}

/**
 * Whether the message waits in `dead` for an operator, so that its marked copy (`"dlq": true`) is
 * the one thing a redrive sends it with (§5): `dead`, on the live side (a test message's copy is
 * deleted, core/testSide.ts), and not discarded.
 */
export function waitsInDeadLetters(record: WaitingDeadRecord): boolean {
  return (
    record.status === MESSAGE_STATUS.dead && isLiveSide(record.tenant) && record.expires_at === undefined
  );
}

/** What the sweeper does with one copy it received from the DLQ (decision 0148). */
export type DeadLetterCare =
  | { readonly kind: 'keep' }
  | { readonly kind: 'delete'; readonly reason: string }
  /** Send a fresh copy made from the record, then delete this one. */
  | { readonly kind: 'renew' };

/**
 * The one rule for a copy in the send DLQ: delete a stale one (`staleDeadLetter`: of a dead message,
 * every copy a redrive would not send — of an earlier death, or unmarked); of a waiting dead message's
 * copies of its death keep one — a second is deleted (`keptAlready`: another of its copies, another
 * SQS message, never the same one handed back twice, is kept or was just renewed in this walk) — and
 * renew the one kept once it is `DEAD_LETTER_RENEW_AGE_MS` old, so that it never reaches the queue's
 * retention: the fresh copy is made from the record (core/dispatchPayload.ts `deadLetterPayload`), so
 * a copy parked before its death was named (decision 0149) comes back naming it. Everything else
 * stays as it is. Never leaves a waiting dead message without a copy a redrive sends: only a second
 * one is deleted, and a renewal sends first.
 */
export function deadLetterCare(
  copy: DeadLetter & { readonly dlq: boolean; readonly ageMs: number },
  record: WaitingDeadRecord | null,
  keptAlready: boolean,
  now: Date,
): DeadLetterCare {
  const stale = staleDeadLetter(copy, record, now);
  if (stale !== undefined || record === null) return { kind: 'delete', reason: stale ?? 'no record' };
  // Past `staleDeadLetter`, a waiting dead message's copy is one that redrives its death.
  if (!waitsInDeadLetters(record)) return { kind: 'keep' };
  if (keptAlready) return { kind: 'delete', reason: 'a second copy of a waiting dead message' };
  return copy.ageMs >= DEAD_LETTER_RENEW_AGE_MS ? { kind: 'renew' } : { kind: 'keep' };
}

/**
 * Whether a waiting dead message needs a copy made from its record (`{v, id, rev, "dlq": true,
 * "death"}`, what the sender moves to the DLQ: core/dispatchPayload.ts `deadLetterPayload`): no copy
 * of it is known to be there — a walk saw every copy (`complete`) and none of this message's at its
 * rev, or no put of its death's copy was ever recorded (decision 0159: the sweeper then asks as if
 * such a walk had) — and it has been `dead` for `DEAD_LETTER_SETTLE_MS` (the sender's own move is
 * done or given up). Its copy expired (the sweeper was down past the renewal), someone deleted it, or
 * the send queue's backstop moved another copy in its place.
 */
export function deadLetterOwed(
  record: WaitingDeadRecord,
  seen: { readonly complete: boolean; readonly copyKept: boolean },
  now: Date,
): boolean {
  if (!seen.complete || seen.copyKept || !waitsInDeadLetters(record)) return false;
  const since = Date.parse(record.due_at ?? '');
  return Number.isFinite(since) && now.getTime() - since >= DEAD_LETTER_SETTLE_MS;
}
