import { isAllowedFrom } from './addresses.js';
import { backoffSeconds, configBackoffSeconds } from './backoff.js';
import { FAILURE_ORIGIN, type FailureOrigin, type ThrottleKind } from './classifySmtpError.js';
import { retentionRanOut } from './messageLifetime.js';
import { MESSAGE_STATUS, type MessageStatus } from './messageStatus.js';
import type { ErrorClass } from './postdateError.js';
import {
  pendingPositions,
  progressAfter,
  type RecipientProgress,
  type RecipientRefusal,
} from './recipients.js';
import { isRefused, type RefusedRecord } from './recordLayout.js';
import { checkTransition } from './stateMachine.js';
import { dueAtIsTheSweepers } from './sweepDecision.js';

/**
 * The two decisions that carry the promise (DESIGN §2, §5), as pure functions: whether a queue copy
 * may go on to a send (`admitCopy`, then `interruptedAttemptBecomes`, `claimTerms`, `bodyFault`, and
 * `givenBackStatus` for a claim given back), and what one attempt's outcome makes of the message
 * (`decideOutcome`, `retryAtOf`); the attempt limit both obey is `attemptsExhausted`. What must not
 * go out at all is lambdas/core/unsentDecision.ts. The sender runs the I/O around them.
 */

/** What the admission reads of the state record. */
export interface AdmissionRecord extends DeathRecord {
  readonly status: MessageStatus;
  readonly rev: number;
  readonly lease_until?: string;
  /** The SQS message id of the copy that made the message `dead` (its move to the DLQ). */
  readonly dead_copy?: string;
  /** Its TTL: set when an operator discarded it (core/messageLifetime.ts). */
  readonly expires_at?: number;
}

/** What the admission reads of the queue copy. */
export interface AdmissionCopy extends DeadLetterMark {
  readonly rev: number;
  readonly sqsMessageId: string;
}

/** What a copy says of the DLQ: whether the sender put it there, and for which death. */
export interface DeadLetterMark {
  /** The copy is one the sender put in the DLQ (`"dlq": true`), so an operator redrove it. */
  readonly fromDeadLetters: boolean;
  /** The death it stands for (`"death"`); absent on a copy put in the DLQ before decision 0149. */
  readonly death?: number | undefined;
}

export type Admission =
  | { readonly kind: 'drop'; readonly reason: string }
  /** A newer writer made the record (core/recordLayout.ts): not sent by this code's rules; counted. */
  | { readonly kind: 'refuse'; readonly reason: string }
  /** Another sender holds a live lease: the copy comes back when it ends. */
  | { readonly kind: 'wait-for-lease'; readonly visibilitySeconds: number }
  /** The message is `dead` and this is the copy whose move to the DLQ has not happened yet. */
  | { readonly kind: 'move-to-dead-letters' }
  /** The copy may claim: `takeover` when the record's lease expired mid-send, `redrive` from the DLQ. */
  | { readonly kind: 'proceed'; readonly takeover: boolean; readonly redrive: boolean };

/**
 * `record`: as the reader hands it on — a newer writer's as its refusal (core/recordLayout.ts), which
 * the sender never claims: its rules may not be this sender's (decision 0166).
 */
export function admitCopy(
  record: AdmissionRecord | RefusedRecord | undefined,
  copy: AdmissionCopy,
  now: Date,
): Admission {
  if (record === undefined) return { kind: 'drop', reason: 'no such message' };
  if (isRefused(record)) return { kind: 'refuse', reason: record.refusal.reason };
  if (record.rev !== copy.rev) return { kind: 'drop', reason: `stale rev (record is at rev ${record.rev})` };
  if (record.status === MESSAGE_STATUS.sending) {
    const leaseEnd = record.lease_until === undefined ? 0 : Date.parse(record.lease_until);
    if (leaseEnd > now.getTime()) {
      return { kind: 'wait-for-lease', visibilitySeconds: leaseWaitSeconds(record.lease_until, now) };
    }
    return { kind: 'proceed', takeover: true, redrive: false };
  }
  if (record.status === MESSAGE_STATUS.dead) {
    // The copy that died, whatever it carries (a redriven one carried the message on), is moved.
    if (record.dead_copy === copy.sqsMessageId) return { kind: 'move-to-dead-letters' };
    // Dead means dead: only an operator's redrive of this death's copy from the DLQ sends it again.
    if (redrivesDeath(copy, record)) {
      // A discarded one comes back while its retention runs, not once DynamoDB may be deleting it.
      if (retentionRanOut(record.expires_at, now))
        return { kind: 'drop', reason: 'discarded, and its retention ran out' };
      return { kind: 'proceed', takeover: false, redrive: true };
    }
    if (copy.fromDeadLetters) return { kind: 'drop', reason: 'dead again; this copy is of an earlier death' };
    return { kind: 'drop', reason: 'dead, and this copy did not come out of the DLQ' };
  }
  if (!checkTransition(record.status, MESSAGE_STATUS.sending, 'sender').allowed) {
    return { kind: 'drop', reason: `already ${record.status}` };
  }
  return { kind: 'proceed', takeover: false, redrive: false };
}

/** What the redrive rule reads of the state record. */
export interface DeathRecord {
  readonly status: MessageStatus;
  /** SMTP attempts so far: on a `dead` record, how many it had when it became `dead`. */
  readonly attempts?: number;
  /** Written with the death since decision 0149 (its attempts then): this death's copies are named. */
  readonly death?: number;
}

/**
 * Whether a copy is an operator's redrive of the death a `dead` record is in (DESIGN §5: "only an
 * operator's redrive sends it again"): the sender put it in the DLQ (`"dlq": true`) for this very
 * death. A redriven copy may arrive twice (SQS delivers at least once; a `dlq redrive --ids` cut
 * between its send and its delete leaves two), and the copy that carried a redriven message on comes
 * back after it died again when its own move to the DLQ failed; both follow the message as plain
 * copies of its rev, and neither may give a later death fresh attempts.
 *
 * A death is named by the message's `attempts` when it became `dead`: they stay as they are while it
 * is `dead`, and a later death of the same rev has more (a redrive's fresh attempts must be spent
 * first), so no two deaths share a name. Every DLQ copy made since decision 0149 carries its death's
 * name (`"death"`, core/dispatchPayload.ts `deadLetterPayload`) and is admitted only for that death.
 * A copy made before carries none: it is admitted only while the record's death was written without
 * its name (`death` ≠ `attempts`: it died before 0149), so an operator's redrive of a copy parked
 * then still works, and a leftover of such a copy never revives a death named since. The one rule
 * for the sender's admission (`admitCopy`) and the DLQ's care (core/staleDeadLetter.ts), which
 * deletes what it refuses.
 */
export function redrivesDeath(copy: DeadLetterMark, record: DeathRecord): boolean {
  if (record.status !== MESSAGE_STATUS.dead || !copy.fromDeadLetters) return false;
  const attempts = record.attempts ?? 0;
  return copy.death === undefined ? record.death !== attempts : copy.death === attempts;
}

/** What `sendableAt` reads of the state record. */
export interface SendableRecord {
  readonly status: MessageStatus;
  readonly send_at: string;
  readonly due_at?: string;
  /** The `due_at` the sweeper set when it re-dispatched the current stall (core/sweepDecision.ts). */
  readonly sweep_due_at?: string;
}

/**
 * When a copy of this record may be sent: at `send_at`, and a `retrying` message not before the
 * retry time its failed attempt chose (its `due_at`). Any copy of the current rev may arrive — the
 * Scheduler firing twice, a re-dispatch, a second copy — and none may cut the backoff short, or two
 * copies would retry at twice the rate and spend the attempts early. A `due_at` the sweeper set is
 * not a retry time (it is when the stall is overdue again; the retry time had passed long before).
 */
export function sendableAt(record: SendableRecord): Date {
  const sendAt = new Date(record.send_at);
  if (record.status !== MESSAGE_STATUS.retrying || record.due_at === undefined) return sendAt;
  if (dueAtIsTheSweepers(record)) return sendAt;
  const retryAt = Date.parse(record.due_at);
  return Number.isFinite(retryAt) && retryAt > sendAt.getTime() ? new Date(retryAt) : sendAt;
}

/** What `dueSince` reads of the state record besides what `sendableAt` reads. */
export interface DueRecord extends SendableRecord {
  /** Present: quiet hours may have held the message, moving its `due_at` to their end (DESIGN §16). */
  readonly quiet_hours?: unknown;
  /** When the sweeper last re-dispatched it (core/sweepDecision.ts). */
  readonly swept_at?: string;
}

/**
 * Since when a copy of this record is due, for how late a copy handed back unsent already is
 * (decision 0231): when it may be sent ({@link sendableAt}: `send_at`, a retry's own time, so a
 * backoff is no lateness) or, held for quiet hours, their end (the hold moved `due_at` there). Never
 * earlier than it really came due, so that the alarm on it cannot fire early: behind the sweeper's
 * stamp, which replaced `due_at`, a scheduled message that quiet hours cannot have held is due since
 * `send_at`, any other no earlier than the stamp was made (the stamp says only that it was overdue).
 * Undefined for a record neither `scheduled` nor `retrying`: a `dead` one's redriven copy is due since
 * the operator's redrive, which the record does not hold.
 */
export function dueSince(record: DueRecord): Date | undefined {
  if (record.status !== MESSAGE_STATUS.scheduled && record.status !== MESSAGE_STATUS.retrying)
    return undefined;
  const sendable = sendableAt(record);
  if (dueAtIsTheSweepers(record)) {
    const unheld = record.status === MESSAGE_STATUS.scheduled && record.quiet_hours === undefined;
    return unheld ? sendable : latest(sendable, record.swept_at);
  }
  return latest(sendable, record.due_at);
}

function latest(date: Date, later: string | undefined): Date {
  const laterMs = Date.parse(later ?? '');
  return Number.isFinite(laterMs) && laterMs > date.getTime() ? new Date(laterMs) : date;
}

/**
 * How long a copy stays hidden so that it comes back just after a lease has run out (a second after
 * its end, at least one second from now); a lease that is unreadable or absent counts as ending now.
 */
export function leaseWaitSeconds(leaseUntil: string | undefined, now: Date): number {
  const leaseEnd = Date.parse(leaseUntil ?? '') || now.getTime();
  return Math.max(1, Math.ceil((leaseEnd - now.getTime()) / 1000) + 1);
}

/**
 * Whether a message has had every attempt it may have (DESIGN §5: after POSTDATE_MAX_ATTEMPTS
 * attempts it is `dead`, and nothing more is sent). `attempts` counts the attempt just made; the
 * limit is the message's own `attempt_limit` (a DLQ redrive raises it), else POSTDATE_MAX_ATTEMPTS.
 * The one rule for an attempt's live outcome (`decideOutcome`) and for the attempt a dead sender
 * left behind (`interruptedAttemptBecomes`).
 */
export function attemptsExhausted(
  attempts: number,
  record: { readonly attempt_limit?: number | undefined },
  maxAttempts: number,
): boolean {
  return attempts >= (record.attempt_limit ?? maxAttempts);
}

/** What `interruptedAttemptBecomes` reads of the state record. */
export interface InterruptedRecord {
  /** The attempts before the interrupted one. */
  readonly attempts: number;
  readonly attempt_limit?: number | undefined;
  readonly on_ambiguous: 'retry' | 'hold';
}

/**
 * A takeover of an expired lease (a sender died mid-send) found an interrupted attempt: it counts,
 * and it is ambiguous (DESIGN §5), so it ends as a live ambiguous failure of the same attempt would
 * (`decideOutcome`): under `hold` the message becomes `unknown`; under `retry` it is `dead` when that
 * was its last allowed attempt, and `retrying` otherwise. The sender writes this before anything
 * else happens to the copy (a hold for quiet hours or by the gate, a deadline, the next claim), so
 * no message waits `sending` with nobody holding its lease (DESIGN §2).
 */
export function interruptedAttemptBecomes(
  record: InterruptedRecord,
  settings: { readonly maxAttempts: number },
): 'unknown' | 'dead' | 'retrying' {
  if (record.on_ambiguous === 'hold') return 'unknown';
  return attemptsExhausted(record.attempts + 1, record, settings.maxAttempts) ? 'dead' : 'retrying';
}

/** What a claim writes besides the owner: the lease's end and, on a DLQ redrive, a fresh attempt limit. */
export interface ClaimTerms {
  readonly leaseUntil: Date;
  /** A redriven `dead` message gets POSTDATE_MAX_ATTEMPTS more attempts than it has had. */
  readonly attemptLimit?: number;
}

export function claimTerms(
  record: { readonly attempts: number },
  redrive: boolean,
  settings: { readonly leaseSeconds: number; readonly maxAttempts: number },
  claimedAt: Date,
): ClaimTerms {
  const leaseUntil = new Date(claimedAt.getTime() + settings.leaseSeconds * 1000);
  return redrive
    ? { leaseUntil, attemptLimit: freshAttemptLimit(record.attempts, settings.maxAttempts) }
    : { leaseUntil };
}

/**
 * The status a claim given back unsent returns to (a read failed after it, or too little time was
 * left: no attempt, DESIGN §2). Nothing failed, so a `scheduled` message is `scheduled` again: its view,
 * its reschedule (§3 `PATCH`) and its events are as if no sender had taken it. A `retrying` message
 * waits again as `retrying`; a redriven `dead` one does too, live again after transient failures.
 */
export function givenBackStatus(claimedFrom: MessageStatus): 'scheduled' | 'retrying' {
  return claimedFrom === MESSAGE_STATUS.scheduled ? MESSAGE_STATUS.scheduled : MESSAGE_STATUS.retrying;
}

/**
 * The attempt limit of a message an operator takes back — a DLQ redrive of a `dead` one, a manual
 * retry of a `failed`, `dead` or `unknown` one (DESIGN §3, §5): POSTDATE_MAX_ATTEMPTS more than the
 * attempts it has had, which stay counted (DESIGN §2). Both ways out of the same state grant this one budget.
 */
export function freshAttemptLimit(attempts: number, maxAttempts: number): number {
  return attempts + maxAttempts;
}

/**
 * Why a claimed message's body must not be sent: it is missing; it is another request's (a request
 * that reused the key wrote it after the original's body expired, and deletes it again) — its
 * fingerprint differs from the state record's; or its `from` is not an allowed sender of this stack
 * (POSTDATE_ALLOWED_FROM, DESIGN §3), which binds every message the stack sends whichever way it came
 * in — the outbox helper validated with the application's settings, and an operator may have
 * narrowed the list since the message was accepted (decision 0165). Whatever the fault, the message
 * is `failed`, unsent.
 */
export function bodyFault(
  recordFingerprint: string | undefined,
  body: { readonly fingerprint: string; readonly from: string } | undefined,
  allowedFrom: readonly string[],
): 'missing' | 'foreign' | 'sender-not-allowed' | undefined {
  if (body === undefined) return 'missing';
  if (recordFingerprint !== undefined && body.fingerprint !== recordFingerprint) return 'foreign';
  if (!isAllowedFrom(body.from, allowedFrom)) return 'sender-not-allowed';
  return undefined;
}

/** One attempt's result, as the sender hands it to the decision (positions in the recipient list). */
export interface AttemptResult {
  /** The relay answered the final dot with 250. */
  readonly delivered: boolean;
  /** The failure's class when not delivered. */
  readonly failureClass?: ErrorClass;
  /** Where the failure happened (core/classifySmtpError.ts); `transaction` when absent. */
  readonly origin?: FailureOrigin;
  /** The `throttle` origin: which limit the relay says we hit; `rate` when absent. */
  readonly throttle?: ThrottleKind | undefined;
  /** The positions in this attempt's envelope. */
  readonly attempted: readonly number[];
  /** Recipients refused one by one at RCPT TO (4xx deferred, 5xx rejected). */
  readonly refused: readonly RecipientRefusal[];
}

export interface OutcomeRecord {
  /** SMTP attempts so far (DESIGN §2: transactions in which the relay saw the message). */
  readonly attempts: number;
  /** The attempt count at which the message becomes `dead`; POSTDATE_MAX_ATTEMPTS when absent. */
  readonly attempt_limit?: number;
  readonly on_ambiguous: 'retry' | 'hold';
  readonly recipients: RecipientProgress;
  readonly recipientTotal: number;
}

export interface OutcomeSettings {
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
  readonly retryCapSeconds: number;
  /**
   * How long a copy waits after an outage: about when the sending gate's next probe may have closed
   * the breaker (POSTDATE_RELAY_PROBE_SECONDS). Absent (no gate): the backoff.
   */
  readonly relayWaitSeconds?: number;
}

export type OutcomeStatus = 'sent' | 'retrying' | 'failed' | 'dead' | 'unknown';

/**
 * What the attempt tells every sender, besides this message: the relay is down, or throttling us —
 * its rate (`throttled`), or its daily quota (`quota-exhausted`: a hold of minutes, decision 0193).
 */
export type FleetSignal = 'relay-unavailable' | 'throttled' | 'quota-exhausted';

export interface OutcomeDecision {
  readonly to: OutcomeStatus;
  /** `retrying` only: when the copy is visible again. */
  readonly visibilitySeconds?: number;
  readonly attempts: number;
  readonly recipients: RecipientProgress;
  /** For the sending gate (core/relayBreaker.ts): open the breaker, or slow the fleet down. */
  readonly fleet?: FleetSignal;
  /**
   * The outcome is an entry of the message's `history` (and names its `relay`): see
   * {@link joinsHistory}. When false, only `last_error` records it.
   */
  readonly joinsHistory: boolean;
  /** The attempt's failure becomes the message's `last_error`; when false it has none: see {@link showsLastError}. */
  readonly showsLastError: boolean;
}

/**
 * Whether an outcome is an entry of the message's capped `history` (DESIGN §3: "the attempts, each
 * with its per-recipient replies"; decision 0175): when it counted an attempt (DESIGN §2), or when it
 * ends the message (any status but `retrying`) — one that ends without any attempt (a permanent
 * refusal before MAIL FROM, a body or a file that is gone) still says why in one entry. An outage, a
 * throttle or a local failure that leaves the message retrying is no attempt: it updates `last_error`
 * only, so that however long it lasts it never pushes the message's real attempts out of its history.
 * The one rule for an attempt's outcome (`decideOutcome`) and for a message failed unsent
 * (sender/outcomeWrite.ts `failUnsent`).
 */
export function joinsHistory(attemptCounted: boolean, to: OutcomeStatus): boolean {
  return attemptCounted || to !== 'retrying';
}

/**
 * Whether the message shows an error (`last_error`, DESIGN §3; decision 0223) once an outcome took it
 * to `to`: not when it is `sent`. No recipient is pending and the relay took at least one, so an
 * earlier attempt's 450, an outage, or a recipient refused on the last attempt would read as why it
 * did not go out; the history keeps every attempt's reply and `recipients` counts the refused.
 * Any other outcome shows the error that led to it: its own failure, or, when it made no attempt (a
 * screening that ends it `failed` or `suppressed`), the error the attempts before it left. The one
 * rule for an attempt's outcome (`decideOutcome`) and for the suppression list's screening
 * (sender/sendClaimed.ts).
 */
export function showsLastError(to: OutcomeStatus | 'suppressed'): boolean {
  return to !== 'sent';
}

/** A throttled copy comes back after 1 to this many seconds (the gate then holds it while the fleet slows). */
export const THROTTLED_RETRY_SECONDS = 3;

function throttledWait(random: () => number): number {
  return 1 + Math.floor(unitInterval(random()) * THROTTLED_RETRY_SECONDS);
}

function throttleSignal(kinds: readonly (ThrottleKind | undefined)[]): FleetSignal {
  return kinds.includes('quota') ? 'quota-exhausted' : 'throttled';
}

/**
 * Where an attempt's outcome takes the message — the whole rule, in this one place (DESIGN §2, §5):
 * - **an outage** (before MAIL FROM, at the relay: connection, greeting, EHLO, TLS, login) is no
 *   attempt and never `dead`: the message waits for the breaker, which opens for every sender;
 * - **throttling** (SES's `454 Throttling failure`) is no attempt and never `dead`: the copy comes
 *   back shortly, and every sender slows down (its daily quota: holds for minutes, decision 0193);
 *   a recipient the relay refused for good at RCPT TO before it is rejected all the same;
 *   a recipient throttled at RCPT TO while the relay took others stays pending, the attempt counts
 *   (the message went out), every sender slows down, and the message is not `dead` for it: the
 *   recipient comes back shortly when no other pending one waits for a backoff;
 * - **a local refusal** before MAIL FROM (our client refused the envelope) is no attempt and never
 *   `dead`; a permanent one rejects the attempted recipients;
 * - **a reply to the message's own commands** (MAIL, RCPT, DATA, the final dot; 421 included) or a
 *   break after MAIL FROM counts exactly one attempt, and the recipients settle one by one: `sent`
 *   when none is pending and at least one was accepted, `failed` when every one was rejected; a
 *   permanent failure of the message (a 5xx to MAIL, DATA or the final dot) rejects every attempted
 *   recipient the relay did not answer for itself at RCPT TO (one deferred there stays pending);
 *   ambiguous under `hold` is `unknown`; anything that leaves recipients pending retries after backoff with
 *   full jitter, and is `dead` once the attempts reach the limit.
 * The backoff's exponent is the message's attempts before this one (never a queue receive count: a
 * pause or an outage inflates receives, a re-delayed copy restarts them); the caller bounds the wait
 * by the message's deadline ({@link retryWithinDeadline}). Whether the outcome joins
 * the message's history is {@link joinsHistory}; whether its failure is the message's last error,
 * {@link showsLastError}.
 */
export function decideOutcome(
  result: AttemptResult,
  record: OutcomeRecord,
  settings: OutcomeSettings,
  random: () => number,
): OutcomeDecision {
  const origin = result.delivered
    ? FAILURE_ORIGIN.transaction
    : (result.origin ?? FAILURE_ORIGIN.transaction);
  const failureClass = result.delivered ? undefined : (result.failureClass ?? 'transient');
  // No attempt and still retrying: nothing of the message changes but its last error.
  const unchanged = {
    attempts: record.attempts,
    recipients: record.recipients,
    joinsHistory: false,
    showsLastError: showsLastError('retrying'),
  };
  if (origin === FAILURE_ORIGIN.outage) {
    // With a gate, back when its next probe may have closed the breaker; without one, the backoff.
    const wait =
      settings.relayWaitSeconds === undefined
        ? backoffAfter(failureClass, record.attempts, settings, random)
        : Math.max(1, Math.ceil(settings.relayWaitSeconds));
    return { to: 'retrying', visibilitySeconds: wait, ...unchanged, fleet: 'relay-unavailable' };
  }
  if (origin === FAILURE_ORIGIN.throttle) {
    const fleet = throttleSignal([result.throttle]);
    // A recipient's own reply at RCPT TO stands whatever ended the transaction (decision 0315): one
    // refused there for good is rejected, though the throttle that stopped the rest counts no attempt.
    const recipients = progressAfter(record.recipients, {
      attempted: result.attempted,
      delivered: false,
      refused: result.refused,
      allRefused: false,
    });
    if (pendingPositions(record.recipientTotal, recipients).length > 0)
      return { to: 'retrying', visibilitySeconds: throttledWait(random), ...unchanged, recipients, fleet };
    // Nobody left to throttle (a throttle ends a transaction with someone pending, so only in theory).
    const to = recipients.accepted.length > 0 ? 'sent' : 'failed';
    return {
      to,
      attempts: record.attempts,
      recipients,
      joinsHistory: joinsHistory(false, to),
      showsLastError: showsLastError(to),
      fleet,
    };
  }
  const counted = origin === FAILURE_ORIGIN.transaction;
  const attempts = record.attempts + (counted ? 1 : 0);
  const recipients = progressAfter(record.recipients, {
    attempted: result.attempted,
    delivered: result.delivered,
    refused: result.refused,
    allRefused: failureClass === 'permanent',
  });
  const pending = pendingPositions(record.recipientTotal, recipients);
  // Recipients the relay throttled at RCPT TO (in a transaction), still pending: the fleet's pressure.
  const throttledAt = result.refused.filter(
    (refusal) =>
      counted && refusal.throttle !== undefined && !refusal.permanent && pending.includes(refusal.position),
  );
  const fleet = throttledAt.length === 0 ? {} : { fleet: throttleSignal(throttledAt.map((r) => r.throttle)) };
  const decided = (to: OutcomeStatus, visibilitySeconds?: number): OutcomeDecision => ({
    to,
    attempts,
    recipients,
    joinsHistory: joinsHistory(counted, to),
    showsLastError: showsLastError(to),
    ...(visibilitySeconds === undefined ? {} : { visibilitySeconds }),
    ...fleet,
  });

  if (failureClass === 'ambiguous' && record.on_ambiguous === 'hold') return decided('unknown');
  if (pending.length === 0) return decided(recipients.accepted.length > 0 ? 'sent' : 'failed');
  if (counted && throttledAt.length === 0 && attemptsExhausted(attempts, record, settings.maxAttempts))
    return decided('dead');
  if (throttledAt.length === pending.length) return decided('retrying', throttledWait(random));
  return decided('retrying', backoffAfter(failureClass, record.attempts, settings, random));
}

/** The backoff after a failed attempt; `attemptsBefore` (the message's, never the queue's) is the exponent. */
export function backoffAfter(
  failureClass: ErrorClass | undefined,
  attemptsBefore: number,
  settings: OutcomeSettings,
  random: () => number,
): number {
  const policy = { baseSeconds: settings.retryBaseSeconds, capSeconds: settings.retryCapSeconds };
  return failureClass === 'config'
    ? configBackoffSeconds(attemptsBefore, policy, random)
    : backoffSeconds(attemptsBefore, policy, random);
}

function unitInterval(value: number): number {
  if (!Number.isFinite(value) || value < 0) return 0;
  return value >= 1 ? 1 - Number.EPSILON : value;
}

/**
 * A retry never waits past the message's deadline (DESIGN §5 "Deadlines"): a wait that would end
 * after `not_after` ends a second past it instead, so the copy comes back then and the message is
 * `expired` on time, not a whole backoff later (decision 0317). Only ever shortens a wait.
 */
export function retryWithinDeadline(
  decision: OutcomeDecision,
  notAfter: string | null | undefined,
  now: Date,
): OutcomeDecision {
  if (decision.to !== 'retrying' || decision.visibilitySeconds === undefined || notAfter == null)
    return decision;
  const deadline = Date.parse(notAfter);
  if (!Number.isFinite(deadline)) return decision;
  const pastDeadline = Math.max(1, Math.ceil((deadline - now.getTime()) / 1000) + 1);
  return pastDeadline < decision.visibilitySeconds
    ? { ...decision, visibilitySeconds: pastDeadline }
    : decision;
}

/** When a `retrying` message is due again (the end of its backoff); undefined for any other outcome. */
export function retryAtOf(decision: OutcomeDecision, now: Date): Date | undefined {
  if (decision.to !== 'retrying') return undefined;
  return new Date(now.getTime() + (decision.visibilitySeconds ?? 0) * 1000);
}
