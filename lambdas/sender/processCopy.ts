import { decideArrival } from '../core/dispatchDecision.js';
import { parseDispatchPayload } from '../core/dispatchPayload.js';
import { MESSAGE_STATUS } from '../core/messageStatus.js';
import { SENDER_METRIC, type SenderCountMetric } from '../core/metricNames.js';
import { SQS_MAX_DELAY_SECONDS } from '../core/queueLimits.js';
import { mailboxCount, pendingPositions } from '../core/recipients.js';
import { type GateWaitCause, PROBE_TOKEN_ID } from '../core/relayBreaker.js';
import { type FailoverDecision, failoverDecision } from '../core/relays.js';
import type { Lane } from '../core/runWithConcurrency.js';
import { claimTerms, dueSince, interruptedAttemptBecomes, sendableAt } from '../core/sendDecision.js';
import { claimBy, hasTimeForAttempt } from '../core/sendTiming.js';
import { isLiveSide, SIMULATOR_RELAY } from '../core/testSide.js';
import { decideUnsent, type UnsentStatus } from '../core/unsentDecision.js';
import type { SettleUnsentInput } from '../ports/SenderStore.js';
import type { MessageStateRecord } from '../store/messageRecord.js';
import {
  ack,
  admitted,
  afterConflict,
  type CopyDependencies,
  type CopyRun,
  type CopyVerdict,
  drop,
  type InvocationTime,
  keep,
  logContext,
  progressOf,
  type ReceivedCopy,
  retireDeadCopy,
  type SenderRelay,
  settle,
  settled,
} from './copyRun.js';
import {
  INTERRUPTED_SEND_ERROR,
  interruptedAttemptRecord,
  type Landed,
  releaseOutOfTime,
  writeUntilLanded,
} from './outcomeWrite.js';
import { type GateAdmission, type RelayGate, UNLIMITED } from './relayGate.js';
import { sendClaimed } from './sendClaimed.js';

/**
 * What the sender does with one queue copy `{v, id, rev}` (DESIGN §2, §5, §5a), as a short list of
 * I/O steps around the pure decisions of lambdas/core (sendDecision.ts, unsentDecision.ts,
 * writeRetry.ts, sendTiming.ts): read the record and admit the copy (or drop it, wait for a lease,
 * move it to the DLQ); settle the attempt a dead sender left behind (a takeover) before anything
 * else, so nothing below leaves a message `sending` without a sender; hold or re-delay what is early;
 * expire what must not go out; pass the sending gate and wait for the send rate (relayGate.ts), then
 * ask both again, with the clock and the gate as they are after the wait (decisions 0152, 0163);
 * claim only with time for a whole attempt; then send under the lease (sendClaimed.ts). It never
 * throws for an expected situation; it answers with a verdict on the SQS copy.
 */
export async function processCopy(
  copy: ReceivedCopy,
  deps: CopyDependencies,
  time: InvocationTime,
  lane: Lane = IN_PLACE,
): Promise<CopyVerdict> {
  const parsed = parseDispatchPayload(copy.body);
  if (!parsed.ok) {
    // Retrying a body that cannot be read would only fill the DLQ; the reason names no content.
    deps.log.warn('sender dropped a malformed copy', {
      sqsMessageId: copy.sqsMessageId,
      reason: parsed.reason,
    });
    deps.metrics.count(SENDER_METRIC.malformedCopies);
    return ack('malformed copy');
  }
  const { id, rev, dlq, death } = parsed.payload;
  if (id === PROBE_TOKEN_ID) return probeToken(deps, rev, copy.sqsMessageId);
  return runCopy({ id, rev, fromDeadLetters: dlq === true, death, copy, deps, time }, lane);
}

/** A copy run on its own (no batch around it) waits where it stands. */
const IN_PLACE: Lane = { away: (during) => during() };

async function runCopy(run: CopyRun, lane: Lane): Promise<CopyVerdict> {
  const { deps } = run;
  const admission = admitted(run, await deps.store.readState(run.id));
  if (admission.kind === 'verdict') return admission.verdict;
  const { takeover, redrive, record: read } = admission;

  // The attempt a dead sender left behind is settled first, as its live outcome would be (DESIGN §5):
  // every step below (a hold for quiet hours or by the gate, a deadline, the claim) starts from a
  // record nobody leases, so none leaves the message `sending` without a sender (DESIGN §2).
  let observed = read;
  if (takeover) {
    const interrupted = interruptedAttemptBecomes(read, deps.settings);
    if (interrupted !== MESSAGE_STATUS.retrying) return settleInterrupted(run, read, interrupted);
    const retried = await settleWithoutSend(run, read, interrupted, true);
    if (retried.kind !== 'applied') return retried.verdict;
    if (isLiveSide(read.tenant)) deps.metrics.count(SENDER_METRIC.ambiguous);
    deps.log.info(
      'sender settled an interrupted attempt: the message is retried',
      logContext(run, { attempts: retried.record.attempts }),
    );
    observed = retried.record;
  }

  const arrival = decideArrival({
    sendAt: sendableAt(observed),
    now: deps.now(),
    maxWaitMs: deps.settings.maxEarlyWaitMs,
  });
  if (arrival.action === 'redelay') return redelay(run, arrival.delaySeconds);
  // The last moment is waited out of the batch's lane (DESIGN §5a; decision 0098): the lanes bound
  // the work at once, and a wait is none, so the batch's other copies go on meanwhile.
  if (arrival.action === 'wait') await lane.away(() => deps.sleep(arrival.milliseconds));

  // Nothing that holds the copy changed while it waited for the rate: the last decision before the claim.
  const cleared = await clearForSend(run, observed, lane);
  if (cleared.kind === 'held') return cleared.verdict;
  const { relay } = cleared;
  // Never out of time mid-send: claim only with time left for one whole attempt and its write.
  if (!hasTimeForAttempt(run.time.remainingMs(), deps.settings.timing)) return outOfTime(run, observed);

  const owner = deps.newLeaseOwner();
  const claimedAt = deps.now();
  // The body is read while the claim is written: one round trip fewer on every send. A lost claim
  // wastes the read (rare); the read's failure surfaces only where the body is needed. A small
  // message's body came with the state record just read: no read at all.
  const body = settle(deps.store.readBody(observed));
  const { leaseUntil, attemptLimit } = claimTerms(observed, redrive, deps.settings, claimedAt);
  // Tried like every write of ours (outcomeWrite.ts `writeUntilLanded`): a claim that landed with
  // its answer lost is found under our lease and is ours; another owner's claim is a lost one.
  const claim = await writeUntilLanded(
    run,
    () =>
      deps.store.claim({
        observed,
        owner,
        now: claimedAt,
        leaseUntil,
        relay: relay.name,
        ...(attemptLimit === undefined ? {} : { attemptLimit }),
      }),
    { status: MESSAGE_STATUS.sending, now: claimedAt, claims: owner },
    // Given up unanswered, the claim may hold the record until its own lease ends.
    { ...observed, lease_until: leaseUntil.toISOString() },
  );
  if (claim.kind !== 'applied') return claim.verdict;
  const ours = { record: claim.record, owner, from: observed.status };
  // Tries of the claim may have used the time checked above: without a whole attempt left, the
  // claim goes back now, before the reads after it (sendClaimed.ts checks again at MAIL FROM).
  if (!hasTimeForAttempt(run.time.remainingMs(), deps.settings.timing)) return releaseOutOfTime(run, ours);
  // Counted once the copy is ours to send through it (decision 0163): a copy handed back or whose
  // claim was lost would count again when it returns.
  if (cleared.index > 0) deps.metrics.count(SENDER_METRIC.failoverSends, 1, relay.name);
  return sendClaimed(run, ours, body, relay, cleared.unsendable);
}

/**
 * What stands between the copy and its claim, asked until nothing changed during the send-rate wait:
 * what must not go out (the deadline, quiet hours: {@link unsentVerdict}), then the sending gate
 * ({@link passGate}: pauses, breakers, drains, and so the relay the copy leaves through), then the
 * wait for that relay's rate (DESIGN §5 "Rate", §15: in recipients, before the claim, never under the
 * lease). The wait lasts at most until a whole attempt is still left (a later turn is not waited
 * for: {@link outOfTime}), and meanwhile a deadline passes, a window
 * opens, the operator pauses sending or disables the relay, its breaker opens. So both are asked
 * again with the clock and the gate as they are after the wait (the gate's read at most a second
 * old, decision 0142): the same decisions, not a second copy of them (decisions 0152, 0163). The copy
 * goes on only when the relay chosen is the one whose rate it waited for; another relay (the first
 * disabled or down meanwhile) means that relay's rate, then both questions again. A held copy goes
 * back unclaimed, no attempt spent (DESIGN §2).
 */
async function clearForSend(
  run: CopyRun,
  observed: MessageStateRecord,
  lane: Lane,
): Promise<HeldCopy | GatePassed> {
  let waitedFor: string | undefined;
  for (;;) {
    // What must not go out is settled or held before the gate and the rate: a copy that will not go
    // spends neither (a night's held copies come round every 15 minutes).
    const unsent = await unsentVerdict(run, observed, lane);
    if (unsent?.kind === 'held') return unsent;
    const gate = await passGate(run, observed);
    if (gate.kind === 'held') return gate;
    // One that can never go as stored is failed under the claim, as content that cannot be sent is.
    if (gate.relay.name === waitedFor)
      return unsent === undefined ? gate : { ...gate, unsendable: unsent.reason };
    // A turn too late for a whole attempt is not waited for (the invocation would end in it): the
    // copy goes back unclaimed until about then, for a sender with time (or another's share) to take.
    const startBy = claimBy(run.deps.now().getTime(), run.time.remainingMs(), run.deps.settings.timing);
    const limiter = gate.relay.rateLimiter ?? UNLIMITED;
    const turn = await limiter.acquire(pendingRecipients(observed), gate.rateFactor, startBy);
    if (!turn.granted)
      return { kind: 'held', verdict: outOfTime(run, observed, Math.ceil(turn.inMs / 1000)) };
    waitedFor = gate.relay.name;
  }
}

/**
 * Too little time left for a whole attempt, or to wait for the send rate first: back unclaimed, at
 * once, or when its turn at the rate may have come (`visibilitySeconds`, at most the longest delay).
 */
function outOfTime(run: CopyRun, observed: MessageStateRecord, visibilitySeconds = 0): CopyVerdict {
  run.deps.metrics.count(SENDER_METRIC.outOfTime);
  run.deps.log.info('sender handed a copy back unclaimed: too little time left', logContext(run, {}));
  return handBack(
    run,
    observed,
    'too little time left for a whole attempt; back unclaimed',
    Math.min(SQS_MAX_DELAY_SECONDS, visibilitySeconds),
  );
}

/**
 * A due copy goes back unclaimed, no attempt (DESIGN §2): out of time ({@link outOfTime}) or held by
 * the sending gate ({@link passGate}). Its mail is late by as long as the copy has been due
 * (core/sendDecision.ts `dueSince`), and nothing else says so — no attempt, no outcome, and after
 * three receives the copy leaves the send queue's age (decision 0224) — so each hand-back publishes
 * it, a live message's only (DESIGN §14): the alarm DueMailHeldBack watches its maximum (decision 0231).
 */
function handBack(
  run: CopyRun,
  observed: MessageStateRecord,
  reason: string,
  visibilitySeconds: number,
): CopyVerdict {
  const due = dueSince(observed);
  if (due !== undefined && isLiveSide(observed.tenant)) {
    const lateness = Math.max(0, run.deps.now().getTime() - due.getTime());
    run.deps.metrics.milliseconds(SENDER_METRIC.heldBackLateness, lateness);
  }
  return keep(reason, visibilitySeconds);
}

interface HeldCopy {
  readonly kind: 'held';
  readonly verdict: CopyVerdict;
}

/**
 * The relay a copy leaves through (`index` in the list), at `rateFactor` of its rate; `unsendable`,
 * why it can never go as stored (core/unsentDecision.ts `fail`): failed under the claim.
 */
interface GatePassed {
  readonly kind: 'pass';
  readonly rateFactor: number;
  readonly relay: SenderRelay;
  readonly index: number;
  readonly unsendable?: string;
}

/** A copy that can never go as stored: `failed` under its claim (`failed` is reached from `sending`). */
interface UnsendableCopy {
  readonly kind: 'unsendable';
  readonly reason: string;
}

/**
 * What must not go out now (core/unsentDecision.ts `decideUnsent`, with the clock as it is when
 * asked), acted on: settled `expired`, dropped, or held for quiet hours — back on the queue, or
 * waited out in process for an end a moment away. Undefined: the copy goes on towards the send; one
 * it can never go as (quiet hours in a zone unknown here) goes on to be failed under its claim.
 */
async function unsentVerdict(
  run: CopyRun,
  observed: MessageStateRecord,
  lane: Lane,
): Promise<HeldCopy | UnsendableCopy | undefined> {
  const { deps } = run;
  const now = deps.now();
  // The group head is read once, under the claim just before the send (sendClaimed.ts), not here:
  // one consistent read of the group's one item per copy (DESIGN §4 Freshness; decision 0097).
  const unsent = decideUnsent(observed, now);
  if (unsent.kind === 'drop') {
    deps.log.info(
      'sender may not make this transition',
      logContext(run, { to: unsent.to, reason: unsent.forbidden }),
    );
    return { kind: 'held', verdict: drop(run, unsent.reason) };
  }
  if (unsent.kind === 'hold') {
    // Quiet hours (docs/design.md §16): the copy waits for the window's end as an early copy waits
    // for its send time — in process for the last moment, otherwise back on the queue. No attempt.
    const held = decideArrival({ sendAt: unsent.until, now, maxWaitMs: deps.settings.maxEarlyWaitMs });
    if (held.action === 'redelay') {
      return {
        kind: 'held',
        verdict: await holdForQuietHours(run, observed, unsent.until, held.delaySeconds),
      };
    }
    if (held.action === 'wait') await lane.away(() => deps.sleep(held.milliseconds));
  }
  if (unsent.kind === 'settle') {
    const result = await settleWithoutSend(run, observed, unsent.to, false);
    if (result.kind !== 'applied') return { kind: 'held', verdict: result.verdict };
    return { kind: 'held', verdict: settled(run, observed, unsent.to, unsent.to, UNSENT_METRIC[unsent.to]) };
  }
  if (unsent.kind === 'fail') return { kind: 'unsendable', reason: unsent.reason };
  return undefined;
}

/**
 * The sending gate, before the rate limit and again after it (sender/relayGate.ts,
 * core/relayBreaker.ts), relay by relay in order (DESIGN §15, core/relays.ts `failoverDecision`): the
 * copy leaves through the first relay whose gate lets it (a relay the operator disabled never does) —
 * a relay whose breaker is open probes when its probe is due, so the first relay is tested once per
 * interval whichever relay the mail leaves through. It goes back unclaimed (no attempt, DESIGN §2)
 * while no relay takes it (each unavailable, disabled or quota-held), the relay's throttle holds the
 * fleet, or its kind is paused — visible again about when that may be over, counted by why
 * ({@link HAND_BACK_METRIC}).
 */
async function passGate(run: CopyRun, observed: MessageStateRecord): Promise<HeldCopy | GatePassed> {
  // A test message's relay is the mailbox simulator (DESIGN §14): it has no gate, so no breaker,
  // pause or throttle holds it, and what it answers never reaches a real relay's breaker. The sweeper
  // asks the same rule (core/sweepDecision.ts `sendersHold`).
  if (!isLiveSide(observed.tenant)) {
    const simulator = { name: SIMULATOR_RELAY, mailer: run.deps.simulator(observed.attempts ?? 0) };
    return { kind: 'pass', rateFactor: 1, relay: simulator, index: 0 };
  }
  // The gates are asked in order, only as far as the decision needs (core/relays.ts).
  const { relays } = run.deps;
  const admissions: GateAdmission[] = [];
  let decision: FailoverDecision | undefined;
  for (const relay of relays) {
    admissions.push(
      relay.gate === undefined
        ? { kind: 'send', rateFactor: 1 }
        : await relay.gate.admit(observed.tags?.kind),
    );
    decision = failoverDecision(admissions, relays.length);
    if (decision !== undefined) break;
  }
  const chosen = decision?.kind === 'send' ? relays[decision.index] : undefined;
  if (decision?.kind === 'send' && chosen !== undefined) {
    return { kind: 'pass', rateFactor: decision.rateFactor, relay: chosen, index: decision.index };
  }
  const held = decision?.kind === 'wait' ? decision : { seconds: 1, cause: 'relay-unavailable' as const };
  const metric = HAND_BACK_METRIC[held.cause];
  if (metric !== undefined) run.deps.metrics.count(metric);
  run.deps.log.info(
    'sender handed a copy back unclaimed: sending waits',
    logContext(run, { cause: held.cause, visibilitySeconds: held.seconds }),
  );
  return { kind: 'held', verdict: handBack(run, observed, `sending waits (${held.cause})`, held.seconds) };
}

/**
 * The recipients this send will have (the rate's unit): the mailboxes not yet settled, each once
 * however often the message names it (one RCPT TO: decision 0248), at least one.
 */
function pendingRecipients(record: MessageStateRecord): number {
  const pending = pendingPositions(record.rcpt_total ?? 1, progressOf(record));
  return Math.max(1, mailboxCount(pending, record.rcpt_places));
}

/**
 * The probe token's copy (`{v, id: PROBE_TOKEN_ID, rev: token}`): probe when due, or re-arm. With
 * several relays, the token is the one relay's whose breaker holds it (tokens are random); the first
 * relay's gate drops a token nobody holds.
 */
async function probeToken(deps: CopyDependencies, token: number, sqsMessageId: string): Promise<CopyVerdict> {
  const gate = await gateHolding(deps, token);
  if (gate === undefined) return ack('probe token without a gate');
  const outcome = await gate.onToken(token);
  deps.log.info('sender handled the probe token', {
    sqsMessageId,
    outcome: outcome.kind === 'done' ? outcome.reason : 'kept',
  });
  return outcome.kind === 'done' ? ack(outcome.reason) : keep('probe token kept', outcome.seconds);
}

async function gateHolding(deps: CopyDependencies, token: number): Promise<RelayGate | undefined> {
  const gates = deps.relays.flatMap((relay) => (relay.gate === undefined ? [] : [relay.gate]));
  if (gates.length <= 1) return deps.relayGate;
  for (const gate of gates) if (await gate.holdsToken(token)) return gate;
  return deps.relayGate;
}

/**
 * What a copy the gate handed back counts, by why it waits (core/relays.ts `failoverDecision`): a
 * throttle, of the rate or of a quota, is the relay's pressure, counted once a wave as RelayThrottled
 * by the gate (relayGate.ts), not per copy.
 */
const HAND_BACK_METRIC: Readonly<Record<GateWaitCause, SenderCountMetric | undefined>> = {
  'relay-unavailable': SENDER_METRIC.relayUnavailable,
  'relay-disabled': SENDER_METRIC.relaysDisabled,
  paused: SENDER_METRIC.sendingPaused,
  throttled: undefined,
  'quota-held': undefined,
};

const UNSENT_METRIC: Readonly<Record<UnsentStatus, SenderCountMetric>> = {
  expired: SENDER_METRIC.expired,
  superseded: SENDER_METRIC.superseded,
};

/**
 * A sender died mid-send and its attempt ends the message without another send: `unknown` (the
 * policy is `hold`), or `dead` (it was the last allowed attempt; the copy goes to the DLQ, or for a
 * test message is deleted: copyRun.ts `retireDeadCopy`).
 */
async function settleInterrupted(
  run: CopyRun,
  observed: MessageStateRecord,
  to: 'unknown' | 'dead',
): Promise<CopyVerdict> {
  const result = await settleWithoutSend(run, observed, to, true);
  if (result.kind !== 'applied') return result.verdict;
  if (to === MESSAGE_STATUS.unknown) {
    return settled(
      run,
      observed,
      to,
      'unknown (lease expired, on_ambiguous = hold)',
      SENDER_METRIC.unknown,
      true,
    );
  }
  settled(run, observed, to, 'dead (lease expired on its last attempt)', SENDER_METRIC.dead, true);
  return retireDeadCopy(run, result.record);
}

/**
 * A move without a send of ours, from the record as read (no claim of ours), tried until it lands
 * like every write after a decision (outcomeWrite.ts `writeUntilLanded`): to a final status, or a
 * takeover's interrupted attempt settled, which counts the attempt of the sender that died.
 */
function settleWithoutSend(
  run: CopyRun,
  observed: MessageStateRecord,
  to: SettleUnsentInput['to'],
  interrupted: boolean,
): Promise<Landed> {
  const { deps } = run;
  const now = deps.now();
  return writeUntilLanded(
    run,
    () =>
      deps.store.settleUnsent({
        observed,
        to,
        now,
        retentionDays: deps.settings.retentionDays,
        ...(interrupted
          ? {
              interruptedAttempt: interruptedAttemptRecord(observed, now),
              lastError: INTERRUPTED_SEND_ERROR,
            }
          : {}),
        ...(to === MESSAGE_STATUS.dead ? { deadCopy: run.copy.sqsMessageId } : {}),
      }),
    { status: to, now },
    observed,
  );
}

/**
 * Due inside quiet hours: the record's `due_at` moves to the window's end (once per hold; a message
 * in the DLQ's care or leased keeps its own), then the copy goes back on the queue like an early one,
 * coming round every 15 minutes at most until the end. The rev is unchanged: nothing can go twice.
 */
async function holdForQuietHours(
  run: CopyRun,
  observed: MessageStateRecord,
  until: Date,
  delaySeconds: number,
): Promise<CopyVerdict> {
  const waitsInQueue =
    observed.status === MESSAGE_STATUS.scheduled || observed.status === MESSAGE_STATUS.retrying;
  if (waitsInQueue && observed.due_at !== until.toISOString()) {
    const held = await run.deps.store.hold({ observed, now: run.deps.now(), until });
    if (held.outcome === 'conflict') return afterConflict(run, 'quiet-hours hold lost');
  }
  run.deps.log.info(
    'sender held a copy for quiet hours',
    logContext(run, { until: until.toISOString(), timeZone: observed.time_zone }),
  );
  return redelay(run, delaySeconds);
}

/** Early by more than a moment: back on the queue with the exact remaining delay; not an attempt. */
async function redelay(run: CopyRun, delaySeconds: number): Promise<CopyVerdict> {
  // A redriven copy keeps its marks (`"dlq"`, `"death"`): what it is does not change with its delay.
  const death = run.death === undefined ? {} : { death: run.death };
  const marks = run.fromDeadLetters ? { dlq: true as const, ...death } : {};
  const payload = { id: run.id, rev: run.rev, ...marks };
  const { failed } = await run.deps.queue.enqueue([{ payload, delaySeconds }]);
  if (failed.length > 0) {
    // Keep this copy instead, visible again when the message is due.
    return keep('early; re-enqueue failed', delaySeconds);
  }
  run.deps.metrics.count(SENDER_METRIC.redelayed);
  run.deps.log.info('sender re-delayed an early copy', logContext(run, { delaySeconds }));
  return ack('early; re-enqueued');
}
