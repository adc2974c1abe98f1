/**
 * How long a message's records live (DESIGN §2): "No TTL deletes a message that is not terminal, or
 * its body or attachments, however long it waits … Only a terminal status starts the retention
 * clock." One rule, decided here and nowhere else: the state record and the body carry a TTL
 * (`expires_at`) exactly while the message has ended for good — a final status (sent, cancelled,
 * superseded, expired, suppressed), an operator's discard of one that waited (failed, dead,
 * unknown), or on a tenant's test side one of those three, which no operator is told of (decision
 * 0145). Every other message, however long it waits (a pause, an outage, a far send_at, a
 * reschedule, an operator who has not looked yet), has none on either record. Pure: the clock is an
 * argument. docs/decisions/0047-lifetimes.md says why, and what it costs.
 */
import { isWaitingForOperator, MESSAGE_STATUS, type MessageStatus } from './messageStatus.js';
import { isLiveSide } from './testSide.js';

/** The statuses that start the retention clock on either side: final, nothing can take the message out of them. */
export const RETAINED_STATUSES: readonly MessageStatus[] = [
  MESSAGE_STATUS.sent,
  MESSAGE_STATUS.cancelled,
  MESSAGE_STATUS.superseded,
  MESSAGE_STATUS.expired,
  MESSAGE_STATUS.suppressed,
];

/**
 * Whether a message of this tenant id ends for good in `status`: a final one, or on the test side
 * one that waits for an operator too. Decision 0135 keeps a test message out of every operator's
 * view (no waiting gauge, no alarm, no DLQ), so nobody would ever end it: it keeps the retention
 * instead, and an API retry with the test key takes it back until then (decision 0145).
 */
export function startsRetention(status: MessageStatus, tenantId: string): boolean {
  return RETAINED_STATUSES.includes(status) || (isWaitingForOperator(status) && !isLiveSide(tenantId));
}

/**
 * Whether a message that has ended in `status` can still come back (a manual retry, a DLQ redrive):
 * one waiting for an operator that was discarded, or that ended on the test side. A final status is
 * never left, so the TTL it starts is never taken back.
 */
export function mayBeTakenBack(status: MessageStatus): boolean {
  return isWaitingForOperator(status);
}

/**
 * When an operator discarded this message (`messages discard`, `dlq drop`), if it is discarded now:
 * a live-side message waiting for an operator carries a TTL only after a discard (above), and a
 * retry or a redrive takes the TTL off but leaves `discarded_at` behind, so the stamp alone says
 * nothing. Undefined for every other message.
 */
export function discardedAt(message: {
  readonly status: MessageStatus;
  readonly tenant: string;
  readonly expires_at?: number | undefined;
  readonly discarded_at?: string | undefined;
}): string | undefined {
  return isWaitingForOperator(message.status) &&
    isLiveSide(message.tenant) &&
    message.expires_at !== undefined
    ? message.discarded_at
    : undefined;
}

/**
 * Whether a record's retention has run out at `now` (its TTL has passed). DynamoDB deletes such an
 * item some time after (within days), the state record and the body each on its own, and S3 the
 * attachments by its own clock: a record still read is one being deleted, perhaps without its body.
 * Nothing takes it back (a manual retry, a DLQ redrive): it would be a live message whose body may
 * be gone (decision 0181). Every read answers as if the deleter had run: the message is gone, and
 * its idempotency key free (decision 0205; the write's side is {@link retentionRanOutCondition}).
 */
export function retentionRanOut(expiresAt: number | undefined, now: Date): boolean {
  return expiresAt !== undefined && expiresAt < ttlClock(now);
}

/**
 * The same rule as a DynamoDB condition on the item a write finds, for the write that may replace
 * it (store/outboxRecords.ts `newMessageCondition`): the same attribute, the same comparison, the
 * same epoch second. An item without the attribute never meets it, as the rule says.
 */
export function retentionRanOutCondition(now: Date): {
  readonly expression: string;
  readonly names: Readonly<Record<string, string>>;
  readonly values: Readonly<Record<string, number>>;
} {
  return {
    expression: '#ttl < :ttlNow',
    names: { '#ttl': 'expires_at' },
    values: { ':ttlNow': ttlClock(now) },
  };
}

/**
 * How long a body item without a live state record still holds its key: the retention after its
 * `created_at`. A state record lives at least POSTDATE_RETENTION_DAYS after it was written (its TTL is
 * set only once it is final, to the retention after that), so a body younger than this beside no
 * state record is an enqueue that died between its two puts (or is between them now), which its
 * identical replay completes (core/replayDecision.ts). An older one belongs to no live message: its
 * state record is past its retention or deleted, and the body's own TTL write was lost (a crash
 * between the two writes, {@link LifetimeChange}) or it is an enqueue that died long ago. It is an
 * orphan, and a new message under its key replaces it (decision 0208).
 */
export function resumeWindowMs(retentionDays: number): number {
  return retentionDays * 86_400_000;
}

/**
 * Whether DynamoDB's TTL may have deleted the records of a message created at `createdAt` by `now`:
 * it was created more than the retention ago ({@link resumeWindowMs}). A younger message has its
 * state record, whatever it went through, so one without it is a defect; an older one without it is
 * gone, as every read says (decision 0205), even while an index that lags the delete still names it
 * (decision 0212).
 */
export function mayBeDeleted(createdAt: string, now: Date, retentionDays: number): boolean {
  return createdAt < orphanedBefore(now, retentionDays);
}

/** Whether a body item beside no live state record is an orphan at `now`: its message {@link mayBeDeleted}. */
export function bodyOrphaned(createdAt: string, now: Date, retentionDays: number): boolean {
  return mayBeDeleted(createdAt, now, retentionDays);
}

/**
 * The write's side of a body item's key: a body under it may be replaced when it does not exist, its
 * retention ran out ({@link retentionRanOutCondition}), or it is an orphan ({@link bodyOrphaned}: the
 * same ISO-string comparison). Only for a put in one transaction with the state record's put under
 * `retentionRanOutCondition`: the state record decides whether a live message holds the key, and an
 * orphan's age alone does not say (a live message's body has no TTL, however old).
 */
export function bodyReplaceableCondition(
  now: Date,
  retentionDays: number,
): {
  readonly expression: string;
  readonly names: Readonly<Record<string, string>>;
  readonly values: Readonly<Record<string, number | string>>;
} {
  const ranOut = retentionRanOutCondition(now);
  return {
    expression: `${ranOut.expression} OR #bodyCreated < :orphanedBefore`,
    names: { ...ranOut.names, '#bodyCreated': 'created_at' },
    values: { ...ranOut.values, ':orphanedBefore': orphanedBefore(now, retentionDays) },
  };
}

/** The `created_at` (ISO, as the records store it) below which a body beside no live state is an orphan. */
const orphanedBefore = (now: Date, retentionDays: number): string =>
  new Date(now.getTime() - resumeWindowMs(retentionDays)).toISOString();

/** `now` as DynamoDB's TTL compares it: whole epoch seconds. */
const ttlClock = (now: Date): number => Math.floor(now.getTime() / 1000);

/** A TTL value (`expires_at`, epoch seconds): `days` after `start`. */
export function expiresAtAfter(start: Date, days: number): number {
  return ttlClock(start) + days * 86_400;
}

/** What one write does to a record's TTL: leave it, set it (epoch seconds), or remove it. */
export type TtlWrite =
  | { readonly kind: 'keep' }
  | { readonly kind: 'set'; readonly expiresAt: number }
  | { readonly kind: 'remove' };

export interface LifetimeChange {
  /** Part of the state record's own conditional write, which happens anyway: it costs nothing. */
  readonly state: TtlWrite;
  /**
   * The body's own UpdateItem, billed by the body's size: `keep` (no write) unless the TTL changes.
   * A `remove` goes BEFORE the state write, a `set` AFTER it (and only if the state write applied),
   * so that a crash between the two leaves a body that lives longer than its message — never a
   * message whose body can expire. Where the TTL can be taken back (`mayBeTakenBack`) a setter's body
   * write can land after a taker's state write: the taker removes the body's again once its state
   * write applied, and the setter reads the state after its body write and removes the body's TTL if
   * the state's is gone (decision 0181), so the last of the four writes never leaves one under a live message.
   */
  readonly body: TtlWrite;
}

export interface LifetimeInput {
  /** The state record's TTL before the write; undefined when it has none (or is being created). */
  readonly currentExpiresAt: number | undefined;
  /** The status the write leaves the message in. */
  readonly to: MessageStatus;
  /** The message's tenant id: on its test side nobody waits for a message (`startsRetention`). */
  readonly tenant: string;
  /** An operator's discard: the status stays (failed, dead or unknown) and the message stops waiting. */
  readonly discard?: boolean;
  /**
   * The body is inside the state record (a small message, docs/data-model.md): it lives and expires
   * with the record, by the state's own write, and has no write of its own.
   */
  readonly bodyInState?: boolean;
  readonly now: Date;
  /** POSTDATE_RETENTION_DAYS. */
  readonly retentionDays: number;
}

const KEEP: TtlWrite = { kind: 'keep' };
const REMOVE: TtlWrite = { kind: 'remove' };

/**
 * The TTLs after a write that leaves the message in `to`:
 * - into a final status (on the test side, any terminal one), or a discard: both records expire one
 *   retention from now;
 * - anything else (live, or waiting for an operator): neither has a TTL. The body is written only
 *   when it had one, which it has exactly when the state record had: a message taken out of a
 *   discard (a manual retry, a DLQ redrive). Every other move leaves the body alone.
 * A body inside the state record is never written on its own: the state's TTL is its TTL.
 */
export function lifetimeChange(input: LifetimeInput): LifetimeChange {
  if (input.discard === true || startsRetention(input.to, input.tenant)) {
    const expiresAt = expiresAtAfter(input.now, input.retentionDays);
    return { state: { kind: 'set', expiresAt }, body: bodyWrite(input, { kind: 'set', expiresAt }) };
  }
  return { state: REMOVE, body: bodyWrite(input, input.currentExpiresAt === undefined ? KEEP : REMOVE) };
}

const bodyWrite = (input: LifetimeInput, write: TtlWrite): TtlWrite =>
  input.bodyInState === true ? KEEP : write;
