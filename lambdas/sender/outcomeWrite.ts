import { extractEnhancedCode, type SmtpErrorClassification } from '../core/classifySmtpError.js';
import { redactAddresses } from '../core/errorForLog.js';
import { MESSAGE_STATUS, type MessageStatus } from '../core/messageStatus.js';
import { SENDER_METRIC, type SenderCountMetric } from '../core/metricNames.js';
import { providerMessageIdOf } from '../core/providerMessageId.js';
import { MAX_RECIPIENT_REPLIES, MAX_RECIPIENT_REPLY_LENGTH } from '../core/recipients.js';
import { isRefused, type RefusedRecord } from '../core/recordLayout.js';
import {
  givenBackStatus,
  joinsHistory,
  leaseWaitSeconds,
  type OutcomeDecision,
  type OutcomeStatus,
  retryAtOf,
} from '../core/sendDecision.js';
import { SUPPRESSION_REASON, suppressionKey } from '../core/suppressions.js';
import { isLiveSide } from '../core/testSide.js';
import { isOwnEarlierWrite, nextWriteTry } from '../core/writeRetry.js';
import type { SendOutcome } from '../ports/Mailer.js';
import type { SenderWriteResult } from '../ports/SenderStore.js';
import type { AttemptRecord, LastError, MessageStateRecord, RecipientReply } from '../store/messageRecord.js';
import {
  ack,
  afterConflict,
  type CopyRun,
  type CopyVerdict,
  errorName,
  keep,
  logContext,
  progressOf,
  retireDeadCopy,
  settled,
} from './copyRun.js';
import { countFailureClass } from './failureMetrics.js';

/**
 * The writes after the claim, under our lease (DESIGN §5), and what they write down. Every one is
 * tried until it lands or is lost to a newer owner (`writeUntilLanded`), so a message the relay
 * accepted is not sent again because one write of ours failed (refused until the invocation runs
 * out, the expired lease is ambiguous: decision 0293), and a write that failed before MAIL
 * FROM never leaves the record `sending` for a takeover to count as an ambiguous attempt: the
 * outcome of an attempt (`recordOutcome`, then the DLQ for a live `dead`), a message that must not go out
 * (`supersede`), one that can never be sent as stored (`failUnsent`), one whose recipients are all
 * suppressed (sendClaimed.ts), a claim given back unused (`release`).
 * After the outcome, recipients the relay refused as bad mailboxes join the suppression list
 * (`suppressHardBounces`).
 *
 * What is stored is short and carries no address: relay replies often echo the recipient
 * ("550 5.1.1 <ada@example.com>: user unknown"), so every address is replaced before anything is
 * kept or logged.
 */

/** The outcome of our own attempt, as decided (core/sendDecision.ts `decideOutcome`). */
export async function recordOutcome(
  run: CopyRun,
  claimed: MessageStateRecord,
  owner: string,
  outcome: SendOutcome,
  decision: OutcomeDecision,
  envelope: AttemptEnvelope,
  relay?: string,
): Promise<CopyVerdict> {
  const { deps } = run;
  const now = deps.now();
  // Every attempt names the relay it went through (DESIGN §15).
  const attempt = { ...attemptRecord(outcome, now, envelope), ...(relay === undefined ? {} : { relay }) };
  const result = await writeUntilLanded(
    run,
    () =>
      deps.store.recordOutcome({
        claimed,
        owner,
        to: decision.to,
        now,
        attempt,
        joinsHistory: decision.joinsHistory,
        lastError: decision.showsLastError ? lastErrorOfAttempt(outcome) : null,
        retryAt: retryAtOf(decision, now),
        retentionDays: deps.settings.retentionDays,
        attempts: decision.attempts,
        recipients: decision.recipients,
        ...(decision.to === 'dead' ? { deadCopy: run.copy.sqsMessageId } : {}),
      }),
    { status: decision.to, now, owner },
    claimed,
  );
  const details = logContext(run, {
    status: decision.to,
    class: outcome.delivered ? 'sent' : outcome.failure.class,
    code: attempt.code,
    enhancedCode: attempt.enhanced_code,
    origin: outcome.delivered ? undefined : outcome.failure.origin,
    receiveCount: run.copy.receiveCount,
    attempts: decision.attempts,
    durationMs: outcome.durationMs,
    ...(attempt.rejected_domains ? { rejectedDomains: attempt.rejected_domains } : {}),
  });
  if (result.kind !== 'applied') {
    deps.log.error('sender could not record the outcome of its attempt', details);
    return result.verdict;
  }
  deps.log.info('sender recorded an outcome', details);
  countOutcome(run, claimed, decision.to, outcome, relay, now);
  if (outcome.delivered) {
    if (outcome.refused.length > 0) {
      deps.log.warn('the relay refused some recipients', {
        ...logContext(run, {}),
        refusedDomains: domainsOf(outcome.refused.map((refusal) => envelope.addresses[refusal.index] ?? '')),
      });
    }
  }
  switch (decision.to) {
    case 'retrying':
      return keep('retrying after backoff', decision.visibilitySeconds);
    case 'dead':
      return retireDeadCopy(run, result.record);
    default:
      return ack(decision.to);
  }
}

/** Where a message goes under our lease, after an attempt or without one, and the count of each. */
const OUTCOME_METRIC: Readonly<Record<OutcomeStatus | 'suppressed', SenderCountMetric>> = {
  sent: SENDER_METRIC.sent,
  failed: SENDER_METRIC.failed,
  retrying: SENDER_METRIC.retried,
  dead: SENDER_METRIC.dead,
  unknown: SENDER_METRIC.unknown,
  suppressed: SENDER_METRIC.suppressed,
};

/**
 * A message moved to `to` under our lease, counted (per relay when an attempt went through one,
 * DESIGN §15): the one count of an outcome, whether an attempt decided it (`recordOutcome`) or it
 * ended without one (`failUnsent`; the suppression list's screening, sendClaimed.ts) — the
 * FailedMessages alarm watches `Failed` and must see every message that ends `failed`. A live
 * message's only: a test message's outcome (DESIGN §14) never reaches the series the live alarms and
 * the dashboard watch (core/testSide.ts `isLiveSide`): the simulator's designed failures would page
 * the operator and hide real ones among them. Its record, the API and its events tell it instead.
 */
export function countEnding(
  run: CopyRun,
  claimed: MessageStateRecord,
  to: OutcomeStatus | 'suppressed',
  relay?: string,
): void {
  if (isLiveSide(claimed.tenant)) run.deps.metrics.count(OUTCOME_METRIC[to], 1, relay);
}

/** An attempt's outcome counted ({@link countEnding}), with a delivery's lateness and a failure's class. */
function countOutcome(
  run: CopyRun,
  claimed: MessageStateRecord,
  to: OutcomeStatus,
  outcome: SendOutcome,
  relay: string | undefined,
  now: Date,
): void {
  countEnding(run, claimed, to, relay);
  if (!isLiveSide(claimed.tenant)) return;
  const { metrics } = run.deps;
  if (outcome.delivered) {
    metrics.milliseconds(SENDER_METRIC.lateness, Math.max(0, now.getTime() - Date.parse(claimed.send_at)));
  }
  if (!outcome.delivered) countFailureClass(metrics, outcome.failure, relay);
}

/**
 * A message that must not go out after all (a newer version of its group exists, DESIGN §4) is
 * `superseded` under the lease, without an SMTP transaction.
 */
export async function supersede(
  run: CopyRun,
  claimed: MessageStateRecord,
  owner: string,
): Promise<CopyVerdict> {
  const { deps } = run;
  const now = deps.now();
  const result = await writeUntilLanded(
    run,
    () =>
      deps.store.settleUnsent({
        observed: claimed,
        owner,
        to: MESSAGE_STATUS.superseded,
        now,
        retentionDays: deps.settings.retentionDays,
      }),
    { status: MESSAGE_STATUS.superseded, now, owner },
    claimed,
  );
  if (result.kind !== 'applied') return result.verdict;
  return settled(run, claimed, MESSAGE_STATUS.superseded, 'superseded', SENDER_METRIC.superseded);
}

/**
 * A message that can never be sent as stored (no body, a `from` the stack does not allow, a template
 * that does not render) is `failed` under the lease, without an SMTP transaction: its attempt count
 * and recipients stay.
 */
export async function failUnsent(
  run: CopyRun,
  claimed: MessageStateRecord,
  owner: string,
  record: UnsentFailure,
): Promise<CopyVerdict> {
  const { deps } = run;
  const now = deps.now();
  const result = await writeUntilLanded(
    run,
    () =>
      deps.store.recordOutcome({
        claimed,
        owner,
        to: MESSAGE_STATUS.failed,
        now,
        attempt: record.attempt,
        // It ends the message: its one entry says why (no attempt was counted).
        joinsHistory: joinsHistory(false, MESSAGE_STATUS.failed),
        lastError: record.lastError,
        retentionDays: deps.settings.retentionDays,
        attempts: claimed.attempts,
        recipients: progressOf(claimed),
      }),
    { status: MESSAGE_STATUS.failed, now, owner },
    claimed,
  );
  if (result.kind !== 'applied') return result.verdict;
  countEnding(run, claimed, MESSAGE_STATUS.failed);
  return ack(`failed (${record.attempt.reply ?? 'cannot be sent'})`);
}

/** A claim of ours: the record it wrote, its lease owner, and the status it took the message from. */
export interface Claim {
  readonly record: MessageStateRecord;
  readonly owner: string;
  readonly from: MessageStatus;
}

/**
 * The claim given back before MAIL FROM (a read failed after it, or too little time is left): the
 * record goes back to waiting, unattempted, in the status the claim found it (core/sendDecision.ts
 * `givenBackStatus`).
 */
export async function release(run: CopyRun, claim: Claim, error: unknown, cause = 'a read failed') {
  const { record: claimed, owner } = claim;
  const to = givenBackStatus(claim.from);
  const now = run.deps.now();
  run.deps.log.warn(
    `sender released its claim: ${cause} before the relay saw the message`,
    logContext(run, error === undefined ? {} : { error: errorName(error) }),
  );
  const result = await writeUntilLanded(
    run,
    () =>
      run.deps.store.release({
        claimed,
        owner,
        now,
        to,
        retryAt: new Date(now.getTime() + run.deps.settings.shortRetrySeconds * 1000),
      }),
    { status: to, now, owner },
    claimed,
  );
  if (result.kind !== 'applied') return result.verdict;
  run.deps.metrics.count(SENDER_METRIC.released);
  return keep(`${cause} before the send; claim released`, run.deps.settings.shortRetrySeconds);
}

/**
 * DESIGN §5, "Never out of time mid-send": after the claim, the time left no longer covers one whole
 * attempt and its outcome write (core/sendTiming.ts `hasTimeForAttempt`), so no transaction starts:
 * the claim goes back before MAIL FROM, no attempt, and the copy comes back for an invocation that
 * has the time.
 */
export function releaseOutOfTime(run: CopyRun, claim: Claim) {
  run.deps.metrics.count(SENDER_METRIC.outOfTime);
  return release(run, claim, undefined, 'too little time was left');
}

export type Landed =
  | { readonly kind: 'applied'; readonly record: MessageStateRecord }
  | { readonly kind: 'not-applied'; readonly verdict: CopyVerdict };

/**
 * A sender's write, tried until it lands (DESIGN §5): the claim and every write after it. It is
 * conditional on the state it saw (and on our lease after a claim), so a retry can never overwrite
 * someone else's move, and a message the relay accepted is not sent again because one write of ours
 * failed (one refused until the time is up leaves an expired lease, ambiguous: decision 0293). A
 * lost condition may be our own earlier try — or the SDK's retry of it — that landed with its
 * answer lost, or whose body TTL write failed after it: the record tells
 * (lambdas/core/writeRetry.ts), and the body's retention is then finished (DESIGN §2: a final status
 * starts it), in the same loop. `ours.owner` is the lease we write under, after our claim; `ours.claims`
 * the lease a claim takes. Without an owner (the claim, a settle before any claim) a lost condition
 * is judged on the record as read (`afterConflict`).
 */
export async function writeUntilLanded(
  run: CopyRun,
  write: () => Promise<SenderWriteResult>,
  ours: {
    readonly status: MessageStatus;
    readonly now: Date;
    readonly owner?: string;
    readonly claims?: string;
  },
  observed: MessageStateRecord,
): Promise<Landed> {
  const { deps } = run;
  // Our state write is known to have landed: only the body's retention is left to write.
  let landed: MessageStateRecord | undefined;
  for (let attempt = 0; ; attempt += 1) {
    try {
      if (landed === undefined) {
        const result = await write();
        if (result.outcome === 'applied') return { kind: 'applied', record: result.record };
        const now = await deps.store.readState(run.id);
        if (
          now === undefined ||
          isRefused(now) ||
          !isOwnEarlierWrite(now, { status: ours.status, at: ours.now, lease: ours.claims })
        ) {
          return { kind: 'not-applied', verdict: await conditionLost(run, ours, now) };
        }
        landed = now;
      }
      await deps.store.finishBodyLifetime(landed);
      return { kind: 'applied', record: landed };
    } catch (error) {
      const step = nextWriteTry(attempt, run.time.remainingMs(), deps.random);
      if (step.kind === 'give-up') {
        deps.metrics.count(SENDER_METRIC.outcomeWriteFailures);
        const details = logContext(run, { tries: attempt + 1, error: errorName(error) });
        if (landed !== undefined) {
          // The message ended as decided; its body outlives it (storage, not mail).
          deps.log.warn(
            "sender could not start the retention of a message's body: it outlives its message",
            details,
          );
          return { kind: 'applied', record: landed };
        }
        deps.log.error('sender gave up a write: the invocation is out of time', details);
        // The copy returns when our lease has run out; whoever takes it then finds it ambiguous.
        return {
          kind: 'not-applied',
          verdict: keep('the write never landed', leaseWaitSeconds(observed.lease_until, deps.now())),
        };
      }
      deps.metrics.count(SENDER_METRIC.outcomeWriteRetries);
      await deps.sleep(step.pauseMs);
    }
  }
}

/** The record moved before our write: someone else's move stands. */
async function conditionLost(
  run: CopyRun,
  ours: { readonly status: MessageStatus; readonly owner?: string; readonly claims?: string },
  current: MessageStateRecord | RefusedRecord | undefined,
) {
  if (ours.owner === undefined) {
    const reason = ours.claims === undefined ? `${ours.status}: condition lost` : 'claim lost';
    return afterConflict(run, reason, current);
  }
  // Our lease was taken over (the send outlived it); the new holder has its own copy and
  // treats our attempt as ambiguous. Nothing more is ours to write.
  run.deps.log.error('sender lost its lease before its write', logContext(run, {}));
  return ack('lease lost before the write');
}

/**
 * Adds the recipients the relay refused at RCPT TO as bad addresses for good to the tenant's list,
 * with this message's id: the classification's `hardBounce` (core/classifySmtpError.ts), a permanent
 * 5.1.x and never our sender's (5.1.7, 5.1.8, "Sender address rejected"). Never throws: a failed
 * add is logged, and the next refusal of the address adds it.
 */
export async function suppressHardBounces(
  run: CopyRun,
  claimed: MessageStateRecord,
  outcome: SendOutcome,
  envelope: readonly string[],
): Promise<void> {
  const bounced = outcome.refused
    .filter((refusal) => refusal.hardBounce)
    .map((refusal) => envelope[refusal.index])
    .filter((recipient): recipient is string => recipient !== undefined);
  const addresses = [
    ...new Set(bounced.map(suppressionKey).filter((key): key is string => key !== undefined)),
  ];
  if (addresses.length === 0) return;
  const now = run.deps.now();
  const results = await Promise.allSettled(
    addresses.map((address) =>
      run.deps.store.suppressions.addReported({
        tenant: claimed.tenant,
        address,
        reason: SUPPRESSION_REASON.hardBounce,
        messageId: claimed.id,
        now,
      }),
    ),
  );
  const failed = results.filter((result) => result.status === 'rejected');
  if (isLiveSide(claimed.tenant))
    run.deps.metrics.count(SENDER_METRIC.suppressionsAdded, addresses.length - failed.length);
  if (failed.length > 0) {
    run.deps.log.warn(
      'sender could not add hard-bounced recipients to the suppression list',
      logContext(run, { failed: failed.length, error: errorName(failed[0]?.reason) }),
    );
  }
  run.deps.log.info(
    'sender added hard-bounced recipients to the suppression list',
    logContext(run, { domains: domainsOf(addresses), added: addresses.length - failed.length }),
  );
}

// What an attempt writes down: its history entry and `last_error`, without an address.

/** Stored reply texts are cut to this many characters. */
export const MAX_REPLY_LENGTH = 160;

// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f]+/g;

/** A relay reply without addresses or control characters, at most `maxLength` characters. */
export function redactReply(reply: string | null, maxLength = MAX_REPLY_LENGTH): string | null {
  if (reply === null) return null;
  const redacted = redactAddresses(reply.replace(CONTROL, ' ')).replace(/\s+/g, ' ').trim();
  if (redacted === '') return null;
  return redacted.length > maxLength ? `${redacted.slice(0, maxLength - 1)}…` : redacted;
}

/** The domain of an address, lower-cased ("Ada@Example.COM" → "example.com"); what logs may show. */
export function domainOf(address: string): string {
  const at = address.lastIndexOf('@');
  const domain = at < 0 ? '' : address.slice(at + 1).replace(/>$/, '');
  return domain.trim().toLowerCase() || 'unknown';
}

/** The distinct domains of some addresses, sorted. */
export function domainsOf(addresses: readonly string[]): string[] {
  return [...new Set(addresses.map(domainOf))].sort();
}

/** An attempt's RCPT TO list: each address and its position in the message's recipient list. */
export interface AttemptEnvelope {
  readonly addresses: readonly string[];
  readonly positions: readonly number[];
}

/**
 * The history entry of an attempt the relay answered or that failed. Each recipient the relay
 * refused at RCPT TO gets its own reply (DESIGN §3), by position and domain (no address), at most
 * MAX_RECIPIENT_REPLIES of them; `rejected_domains` are those refused for good (5xx). Every other
 * recipient of the envelope had the attempt's reply: the 250 after DATA covers them, or the failure.
 */
export function attemptRecord(outcome: SendOutcome, at: Date, envelope: AttemptEnvelope): AttemptRecord {
  const replies: RecipientReply[] = outcome.refused.map((refusal) => ({
    position: envelope.positions[refusal.index] ?? -1,
    domain: domainOf(envelope.addresses[refusal.index] ?? ''),
    outcome: refusal.permanent ? 'rejected' : 'deferred',
    code: refusal.code,
    enhanced_code: refusal.enhancedCode,
    reply: redactReply(refusal.reply, MAX_RECIPIENT_REPLY_LENGTH),
  }));
  const rejectedDomains = [
    ...new Set(replies.filter((reply) => reply.outcome === 'rejected').map((reply) => reply.domain)),
  ].sort();
  const perRecipient = {
    ...(rejectedDomains.length === 0 ? {} : { rejected_domains: rejectedDomains }),
    ...(replies.length === 0 ? {} : { recipients: replies.slice(0, MAX_RECIPIENT_REPLIES) }),
    ...(replies.length > MAX_RECIPIENT_REPLIES
      ? { recipients_omitted: replies.length - MAX_RECIPIENT_REPLIES }
      : {}),
  };
  if (outcome.delivered) {
    const reply = outcome.reply ?? '';
    const code = /^(\d{3})/.exec(reply)?.[1] ?? null;
    // Read from the raw reply: redaction could take an id that looks like an address apart.
    const providerMessageId = providerMessageIdOf(outcome.reply);
    return {
      at: at.toISOString(),
      outcome: 'sent',
      code,
      enhanced_code: extractEnhancedCode(reply),
      reply: redactReply(outcome.reply),
      duration_ms: outcome.durationMs,
      ...(providerMessageId === null ? {} : { provider_message_id: providerMessageId }),
      ...perRecipient,
    };
  }
  return {
    at: at.toISOString(),
    outcome: outcome.failure.class,
    code: outcome.failure.code,
    enhanced_code: outcome.failure.enhancedCode,
    reply: redactReply(outcome.reply),
    duration_ms: outcome.durationMs,
    ...perRecipient,
  };
}

/**
 * The message's last error after an attempt that leaves it unsent: the attempt's failure, or, when the
 * relay took the message for some recipients, the first one it deferred (still pending), which is why
 * the message is `retrying` (DESIGN §2) or `dead`.
 */
function lastErrorOfAttempt(outcome: SendOutcome): LastError | null {
  if (!outcome.delivered) return lastErrorOf(outcome.failure);
  const deferred = outcome.refused.find((refusal) => !refusal.permanent);
  return deferred === undefined
    ? null
    : {
        class: deferred.failure.class,
        code: deferred.code,
        enhanced_code: deferred.enhancedCode,
        message: deferred.failure.reason,
      };
}

/** `last_error` from a classification: the reason is written for operators and holds no address. */
export function lastErrorOf(failure: SmtpErrorClassification): LastError {
  return {
    class: failure.class,
    code: failure.code,
    enhanced_code: failure.enhancedCode,
    message: failure.reason,
  };
}

/** The reason recorded when a lease expired while `sending`: the sender died mid-send. */
export const INTERRUPTED_SEND_REASON =
  'the lease expired while sending: the sender stopped before recording an outcome, so the relay may or may not have the message';

/** The history entry for an attempt whose sender died holding the lease (found by the next one). */
export function interruptedAttemptRecord(
  leased: { readonly lease_until?: string; readonly lease_relay?: string },
  at: Date,
): AttemptRecord {
  return {
    at: leased.lease_until ?? at.toISOString(),
    outcome: 'ambiguous',
    code: null,
    enhanced_code: null,
    reply: 'lease expired while sending',
    duration_ms: 0,
    // The relay its lease named (DESIGN §15: every attempt records the relay's name).
    ...(leased.lease_relay === undefined ? {} : { relay: leased.lease_relay }),
  };
}

export const INTERRUPTED_SEND_ERROR: LastError = {
  class: 'ambiguous',
  code: null,
  enhanced_code: null,
  message: INTERRUPTED_SEND_REASON,
};

/** The history entry and `last_error` of a message that can never be sent, written without an attempt. */
export interface UnsentFailure {
  readonly attempt: AttemptRecord;
  readonly lastError: LastError;
}

/**
 * The history entry and `last_error` of a message failed for good before MAIL FROM (a missing body,
 * a `from` this stack does not allow, a template that does not render): permanent, no SMTP code.
 * `reply` is the attempt's short reply, `message` the last error's words.
 */
export function unsentFailure(at: Date, reply: string, message: string): UnsentFailure {
  return {
    attempt: {
      at: at.toISOString(),
      outcome: 'permanent',
      code: null,
      enhanced_code: null,
      reply,
      duration_ms: 0,
    },
    lastError: { class: 'permanent', code: null, enhanced_code: null, message },
  };
}
