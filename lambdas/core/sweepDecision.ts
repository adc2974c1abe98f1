/**
 * What the sweeper does with one overdue entry of the `due` index (DESIGN §5a). Pure: the record
 * and the clock are arguments.
 *
 * A copy that waits on the send queue behind a backlog looks, from the table, exactly like a lost
 * one: its message is past its time and not moving. The sweeper cannot tell them apart, so it
 * re-dispatches once and then backs off: each re-dispatch records itself on the state record
 * (`sweep_count`, and `sweep_due_at` = the `due_at` it set), and the next one for the same stall
 * waits twice as long, up to SWEEP_MAX_INTERVAL_SECONDS. A lost copy is replaced after the grace; a
 * copy behind a backlog of length B gets about log2(B / grace) extra copies instead of one per run.
 * Any other writer that moves the record (a claim, an outcome, a retry) sets its own `due_at`,
 * which no longer equals `sweep_due_at`, so the count starts again for the next stall.
 *
 * The backoff rests on the copy being on the queue. When the queue is known to hold nothing from
 * before some moment (`queueEmptiedAt`: a purge, or the local emulator, which keeps its queues in
 * memory, restarted), a stamp made before it stands for a copy that is gone: it is void, and the
 * message is re-dispatched at once (decision 0180). So is every other copy the queue can only have
 * held, however far its time: it is replaced with its current rev and the exact remaining delay, so
 * that the message goes at its time, not the grace after it (decision 0264, {@link copyLostWithQueue}).
 */
import { isTerminal, MESSAGE_STATUS, type MessageStatus } from './messageStatus.js';
import { SQS_MAX_DELAY_SECONDS, sqsDelaySeconds } from './queueLimits.js';
import { isRefused, type RefusedRecord } from './recordLayout.js';
import { isPaused, type PauseState } from './relayBreaker.js';
import { isLiveSide } from './testSide.js';
import { isPastDeadline } from './unsentDecision.js';

/**
 * Whether the operator's pauses hold every live message: everything paused and no kind resumed since
 * (each kind excepted is paused on its own again). Then, as while no relay takes mail, the senders
 * hold every live copy, and only a test message's overdue entry can be re-dispatched.
 */
export function pauseHoldsEverything(pause: PauseState | undefined): boolean {
  if (pause?.all === undefined) return false;
  return pause.all.except.every((kind) => Object.hasOwn(pause.kinds, kind));
}

/** The longest wait between two re-dispatches of one stalled message (unless the grace is longer). */
export const SWEEP_MAX_INTERVAL_SECONDS = 3600;

/** What the sweeper needs of a state record, read consistently just before it decides. */
export interface SweptRecord {
  /** The tenant id: only a live message is held by the relays' gates (core/testSide.ts `isLiveSide`). */
  readonly tenant: string;
  readonly rev: number;
  readonly status: MessageStatus;
  readonly due_at?: string;
  /** Its send time: a `scheduled` message due within 15 minutes of a moment had its copy on the queue then. */
  readonly send_at?: string;
  /** Its last write by the api or a sender (never the sweeper's stamp): a copy put on the queue then. */
  readonly updated_at?: string;
  readonly sweep_count?: number;
  readonly sweep_due_at?: string;
  /** When the sweeper last re-dispatched it (its stamp): a copy put on the queue then. */
  readonly swept_at?: string;
  /** `tags.kind` decides whether an operator's pause holds the message. */
  readonly tags?: Readonly<Record<string, string>>;
  /** Its deadline: past it, the sender expires the message before any hold (core/unsentDecision.ts). */
  readonly not_after?: string | null;
  /** A `sending` record's lease: its own clock, since a claim leaves the `due` entry where it was. */
  readonly lease_until?: string;
  /** Its TTL: a waiting message an operator discarded has one (the DLQ's care reads it, decision 0148). */
  readonly expires_at?: number;
  /** A `dead` message's attempts and the name of its death: whose DLQ copy redrives it (decision 0149). */
  readonly attempts?: number;
  readonly death?: number;
}

export type SweepDecision =
  | {
      readonly action: 'skip';
      readonly reason: 'gone' | 'refused' | 'terminal' | SendersHold | 'not-overdue';
    }
  | {
      /**
       * Put back the copy the emptied queue lost ({@link copyLostWithQueue}): the current rev, delayed
       * until the message may go. No stamp: nothing is overdue, and the record is not written.
       */
      readonly action: 'replace';
      readonly rev: number;
      readonly delaySeconds: number;
    }
  | {
      readonly action: 'redispatch';
      readonly rev: number;
      /** The status the decision was made on: the record's write is conditional on it too. */
      readonly status: MessageStatus;
      /** The `due_at` the decision was made on: the record's write is conditional on it. */
      readonly seenDueAt: string;
      /** The record's new `due_at` (and `sweep_due_at`): when this stall is overdue again. */
      readonly nextDueAt: string;
      /** Re-dispatches of this stall, this one included. */
      readonly sweepCount: number;
    };

export interface SweepInput {
  /** The record as read: a newer writer's is handed on as its refusal (core/recordLayout.ts). */
  readonly record: SweptRecord | RefusedRecord | undefined;
  readonly now: Date;
  readonly graceSeconds: number;
  /**
   * The operator's pauses as this run read them. A paused message is not lost: every copy of it is
   * handed back by the senders until it is resumed, so a re-dispatch would only add copies.
   * `'unread'`: the gate item could not be read this run, and holds every live message, as it holds
   * a sender's copy when the sender cannot read it (core/relays.ts `RelayGateRead`).
   */
  readonly pause?: PauseState | typeof PAUSE_UNREAD;
  /**
   * No relay takes mail this run (every one unavailable or disabled, core/relays.ts `relayInUse`):
   * the senders hand every live copy back until one does.
   */
  readonly noRelay?: boolean;
  /**
   * The send queue holds no copy sent before this moment (a purge; the local emulator's start, whose
   * queues are memory only). Absent: every copy sent is still there or delivered (SQS keeps them).
   */
  readonly queueEmptiedAt?: Date;
}

/** The pauses as a run found them when it could not read the gate item. */
export const PAUSE_UNREAD = 'unread';

/**
 * Why the senders hold every copy of a message this run: no relay takes mail, a pause holds it, or
 * the gate item (the pauses) could not be read — a gate that cannot be read holds the mail.
 */
export type SendersHold = 'no-relay' | 'paused' | 'gate-unread';

/**
 * Whether the senders hold every copy of this message this run, so that its overdue entry is not a
 * lost one (DESIGN §5): no relay takes mail, or the operator's pause holds its `tags.kind`. Those
 * are the relays' gates, which only a live message passes (core/testSide.ts `isLiveSide`, the rule
 * the sender's `passGate` asks too): a test message's copy is never held (DESIGN §14), so nothing
 * holds its rescue either (§5a); nor one the sender settles before its gates
 * ({@link settledBeforeTheGates}). The sweeper and `postdate reconcile` (held, not stuck) ask it.
 */
export function sendersHold(
  record: Pick<SweptRecord, 'tenant' | 'tags' | 'status' | 'not_after'>,
  holds: Pick<SweepInput, 'pause' | 'noRelay'>,
  now: Date,
): SendersHold | undefined {
  if (!isLiveSide(record.tenant) || settledBeforeTheGates(record, now)) return undefined;
  if (holds.pause === PAUSE_UNREAD) return 'gate-unread';
  if (holds.noRelay === true) return 'no-relay';
  if (holds.pause !== undefined && isPaused(holds.pause, record.tags?.kind)) return 'paused';
  return undefined;
}

/**
 * Whether the sender settles this record before it asks any gate (sender/processCopy.ts): an attempt
 * a dead sender left behind (`sending`: the takeover makes it `retrying` or, under `hold`, `unknown`,
 * DESIGN §5) and a deadline passed (`expired`, DESIGN §5 "Deadlines"). No pause, outage or unread
 * gate holds those, so none holds their rescue: left alone, a lost copy's message would stay
 * `sending` with no sender, or `scheduled` past its `not_after`, for the whole hold (decision 0257).
 */
function settledBeforeTheGates(record: Pick<SweptRecord, 'status' | 'not_after'>, now: Date): boolean {
  return record.status === MESSAGE_STATUS.sending || isPastDeadline(record.not_after, now);
}

/**
 * Whether the record's `due_at` is the one the sweeper's last re-dispatch set (its stamp is intact):
 * then it is when the stall is overdue again, not a send or retry time, and no other writer has
 * moved the record since (each sets its own `due_at`). The sweeper's count, a void stamp and the
 * sender's retry time (core/sendDecision.ts `sendableAt`) all ask this.
 */
export function dueAtIsTheSweepers(record: {
  readonly due_at?: string | undefined;
  readonly sweep_due_at?: string | undefined;
}): boolean {
  return record.due_at !== undefined && record.due_at === record.sweep_due_at;
}

/**
 * Whether the record's stamp stands for a copy the queue no longer holds: intact
 * ({@link dueAtIsTheSweepers}) and made before the queue was emptied.
 */
export function stampIsVoid(record: SweptRecord, queueEmptiedAt: Date | undefined): boolean {
  if (queueEmptiedAt === undefined || record.swept_at === undefined) return false;
  if (!dueAtIsTheSweepers(record)) return false;
  return Date.parse(record.swept_at) < queueEmptiedAt.getTime();
}

/**
 * Whether the record's copy can only have been on the send queue emptied at `queueEmptiedAt`, so that
 * it is gone (decision 0264): nothing (the api, a sender, the sweeper) wrote the record since, and
 *
 * - it is `retrying` (its copy waits out the backoff, hidden on the queue) or `sending` (its copy is in
 *   flight, and comes back when the lease ends), or
 * - it is `scheduled` and due before `queueEmptiedAt` + 15 minutes: its copy went to the queue with a
 *   delay (due within POSTDATE_DIRECT_DELAY_MAX_SECONDS ≤ 900 s of its relay, which was before), or
 *   its schedule fired `lead` ≤ 900 s before its time and the sender put the early copy back delayed,
 *   or quiet hours hold it there. A later one waits in the Scheduler, which keeps it (in AWS, and the
 *   local emulator on its data dir). One in the 15 minutes whose schedule is still to fire gets a
 *   second copy: harmless, the claim takes one (DESIGN §5).
 *
 * Without `queueEmptiedAt` (AWS's schedule) nothing is lost: SQS keeps every copy.
 */
export function copyLostWithQueue(record: SweptRecord, queueEmptiedAt: Date | undefined): boolean {
  if (queueEmptiedAt === undefined) return false;
  const emptiedMs = queueEmptiedAt.getTime();
  // Written at or after the emptying: its copy was put on the queue as it is now.
  if (writtenSince(record.updated_at, emptiedMs) || writtenSince(record.swept_at, emptiedMs)) return false;
  if (record.status === MESSAGE_STATUS.retrying || record.status === MESSAGE_STATUS.sending) return true;
  if (record.status !== MESSAGE_STATUS.scheduled) return false;
  const sendAtMs = Date.parse(record.send_at ?? record.due_at ?? '');
  return !(sendAtMs >= emptiedMs + SQS_MAX_DELAY_SECONDS * 1000);
}

function writtenSince(at: string | undefined, emptiedMs: number): boolean {
  return at !== undefined && Date.parse(at) >= emptiedMs;
}

/**
 * Where every stamp made before `queueEmptiedAt` put its `due` entry: before this. A stamp made at t
 * sets `t + interval − grace`, and no interval is longer than the capped one; so a run told
 * `queueEmptiedAt` reads the `due` index up to here to find every void stamp.
 */
export function voidStampsDueBefore(queueEmptiedAt: Date, graceSeconds: number): Date {
  return new Date(queueEmptiedAt.getTime() + sweepIntervalMs(Number.MAX_SAFE_INTEGER, graceSeconds));
}

/**
 * - No record → skip (the index lags a transition).
 * - A record a newer writer made (core/recordLayout.ts) → skip, unstamped: it is no lost message but
 *   one this stack refuses, and waits for the upgrade; the sweeper counts it (`refusedGauge`), and
 *   after the upgrade the next run finds it overdue as it was and re-dispatches it at once.
 * - A terminal record, or one without `due_at` → skip (the index lags a transition).
 * - A void stamp ({@link stampIsVoid}) → re-dispatch now, its count from one, whatever the lease or
 *   the holds: the copy the senders (or a lease's owner) would hold is gone, and the new one takes its
 *   place on the queue, where they hold it as they held the old.
 * - A copy lost with the queue ({@link copyLostWithQueue}) that the rules below would leave (held, or
 *   not overdue by the grace) → replace it, delayed until the message may go ({@link lostCopyDelaySeconds}),
 *   whatever the holds, for the same reason; one overdue by the grace and not held is re-dispatched
 *   and stamped as below.
 * - A live message while no relay takes mail, or whose `tags.kind` is paused (or everything, its
 *   kind not resumed since), or while the pauses could not be read → skip (`sendersHold`): the
 *   senders hold its copies; it is swept again once a relay takes mail or it is resumed. A test
 *   message is never held, nor one the sender settles before its gates (`settledBeforeTheGates`:
 *   a `sending` record, a deadline passed).
 * - `due_at` (for a `sending` record the later of it and its lease's end) not older than now − grace
 *   → skip (the record moved on since the index was read, or its sender still holds it).
 * - Otherwise re-dispatch the record's CURRENT rev; this is re-dispatch n of the stall (n = 1 when
 *   the `due_at` is not one the sweeper set), and the next may come `grace × 2^n` seconds from now
 *   (capped), so the new `due_at` is that minus the grace.
 */
export function decideSweep(input: SweepInput): SweepDecision {
  const { record, now } = input;
  if (record === undefined) return { action: 'skip', reason: 'gone' };
  if (isRefused(record)) return { action: 'skip', reason: 'refused' };
  if (isTerminal(record.status) || record.due_at === undefined) return { action: 'skip', reason: 'terminal' };
  if (stampIsVoid(record, input.queueEmptiedAt)) return redispatch(record, record.due_at, 1, input);
  const lost = copyLostWithQueue(record, input.queueEmptiedAt);
  const held = sendersHold(record, input, now);
  if (held !== undefined)
    return lost ? replace(record, record.due_at, now) : { action: 'skip', reason: held };
  const graceMs = Math.max(0, input.graceSeconds) * 1000;
  if (!(overdueSinceMs(record, record.due_at) < now.getTime() - graceMs))
    return lost ? replace(record, record.due_at, now) : { action: 'skip', reason: 'not-overdue' };
  const earlier = dueAtIsTheSweepers(record) ? (record.sweep_count ?? 0) : 0;
  return redispatch(record, record.due_at, earlier + 1, input);
}

/**
 * The delay of a lost copy's replacement: until the message may move — its `due_at` (the send time,
 * a retry's time, the end of quiet hours), for a `sending` one the end of its lease
 * ({@link overdueSinceMs}) — in whole seconds as SQS takes them (0 when past, 900 at most: a copy
 * that arrives early goes back with the rest, core/dispatchDecision.ts `decideArrival`).
 */
export function lostCopyDelaySeconds(record: SweptRecord, dueAt: string, now: Date): number {
  return sqsDelaySeconds((overdueSinceMs(record, dueAt) - now.getTime()) / 1000);
}

function replace(record: SweptRecord, dueAt: string, now: Date): SweepDecision {
  return { action: 'replace', rev: record.rev, delaySeconds: lostCopyDelaySeconds(record, dueAt, now) };
}

/** Re-dispatch `sweepCount` of a stall: overdue again (by the grace) one interval from now. */
function redispatch(
  record: SweptRecord,
  seenDueAt: string,
  sweepCount: number,
  input: Pick<SweepInput, 'now' | 'graceSeconds'>,
): SweepDecision {
  const graceMs = Math.max(0, input.graceSeconds) * 1000;
  return {
    action: 'redispatch',
    rev: record.rev,
    status: record.status,
    seenDueAt,
    nextDueAt: new Date(
      input.now.getTime() + sweepIntervalMs(sweepCount, input.graceSeconds) - graceMs,
    ).toISOString(),
    sweepCount,
  };
}

/**
 * When the record should have moved on: its `due_at`, or for a `sending` record the later end of its
 * lease. A claim leaves the `due` entry at the send time (one index write fewer, docs/data-model.md),
 * so a live lease keeps a message being sent from looking stalled, and an expired one (its sender
 * died) is found the grace after it ends, as when the claim moved `due_at` to the lease's end.
 */
export function overdueSinceMs(record: SweptRecord, dueAt: string): number {
  const dueAtMs = Date.parse(dueAt);
  if (record.status !== MESSAGE_STATUS.sending || record.lease_until === undefined) return dueAtMs;
  return Math.max(dueAtMs, Date.parse(record.lease_until));
}

/** The wait after re-dispatch n of one stall: grace × 2^n, at most max(grace, SWEEP_MAX_INTERVAL_SECONDS). */
export function sweepIntervalMs(sweepCount: number, graceSeconds: number): number {
  const grace = Math.max(1, graceSeconds);
  const cap = Math.max(grace, SWEEP_MAX_INTERVAL_SECONDS);
  return Math.min(cap, grace * 2 ** Math.min(Math.max(1, sweepCount), 30)) * 1000;
}

/**
 * The refused-records gauge one run publishes (decision 0166; its alarm holds while a refused
 * message waits): the refused records among the overdue entries it read. A run that did not read
 * the whole index (a shard unreadable or cut short) may have missed some: it publishes a count above
 * 0, and nothing for none, so a partial read never clears the alarm (missing data keeps its state).
 */
export function refusedGauge(run: {
  readonly refused: number;
  readonly wholeIndexRead: boolean;
}): number | undefined {
  return run.wholeIndexRead || run.refused > 0 ? run.refused : undefined;
}
