import { errorForLog } from '../core/errorForLog.js';
import { MESSAGE_STATUS } from '../core/messageStatus.js';
import { SENDER_METRIC, type SenderCountMetric } from '../core/metricNames.js';
import { type RecipientProgress, recipientList, type Screening } from '../core/recipients.js';
import {
  type AttemptResult,
  bodyFault,
  decideOutcome,
  type FleetSignal,
  type OutcomeDecision,
  type OutcomeStatus,
  retryAtOf,
} from '../core/sendDecision.js';
import { replyEndsBy } from '../core/sendTiming.js';
import { isSupersededBy } from '../core/unsentDecision.js';
import type { OutgoingEmail, SendOutcome } from '../ports/Mailer.js';
import type { MessageBodyRecord, MessageStateRecord } from '../store/messageRecord.js';
import { attemptRecord, domainsOf, lastErrorOf, missingBodyRecord } from './attemptRecords.js';
import {
  type CopyRun,
  errorName,
  groupHeadOf,
  logContext,
  moveToDeadLetters,
  type Settled,
  settled,
  unwrap,
} from './copyRun.js';
import { ack, type CopyVerdict, keep, SHORT_RETRY_SECONDS } from './copyVerdict.js';
import { screenSuppressed, settleSuppressed, suppressHardBounces } from './suppressedRecipients.js';
import { sendableBody, unrenderableRecord } from './templateBody.js';
import { writeUntilLanded } from './writeUntilLanded.js';

/**
 * After the claim, under our lease (DESIGN §5): check the group again, check the body, send to the
 * pending recipients, let lambdas/core/sendDecision.ts decide what the outcome makes of the message,
 * and write that until it lands.
 */

export async function sendClaimed(
  run: CopyRun,
  claimed: MessageStateRecord,
  owner: string,
  bodyRead: Promise<Settled<MessageBodyRecord | undefined>>,
): Promise<CopyVerdict> {
  const { deps } = run;
  let superseded: boolean;
  let body: MessageBodyRecord | undefined;
  try {
    // Check, claim, check again: a group raised between the first read and our claim still wins.
    superseded = isSupersededBy(claimed.group, await groupHeadOf(run, claimed));
    body = unwrap(await bodyRead);
  } catch (error) {
    // Nothing reached the relay: give the claim back (no attempt, nothing ambiguous).
    return release(run, claimed, owner, error);
  }
  if (superseded) {
    const result = await deps.store.settleUnsent({
      observed: claimed,
      owner,
      to: 'superseded',
      now: deps.now(),
      retentionDays: deps.settings.retentionDays,
    });
    return settled(run, result, 'superseded', SENDER_METRIC.superseded);
  }
  const fault = bodyFault(claimed.fingerprint, body);
  if (body === undefined || fault !== undefined) {
    const result = await failUnsent(run, claimed, owner, missingBodyRecord(deps.now()));
    deps.log.error(
      fault === 'foreign' ? 'sender found a body of another request' : 'sender found no body for a message',
      logContext(run, {}),
    );
    return settled(run, result, 'failed (no body)', SENDER_METRIC.failed);
  }
  // A template message is rendered here, from its pinned version (DESIGN §10).
  const sendable = await sendableBody(deps.templates, claimed.tenant, body);
  if (sendable.kind === 'read-failed') return release(run, claimed, owner, sendable.error);
  if (sendable.kind === 'unrenderable') {
    const result = await failUnsent(run, claimed, owner, unrenderableRecord(deps.now(), sendable.reason));
    deps.log.error(
      'sender could not render a template message',
      logContext(run, { template: body.template?.name }),
    );
    return settled(run, result, 'failed (template did not render)', SENDER_METRIC.failed);
  }
  body = sendable.body;

  const recipients = recipientList(body);
  // Suppressions (DESIGN §12): read at send time, not at enqueue; a failed read gives the claim back.
  let screening: Screening;
  try {
    screening = await screenSuppressed(run, claimed, recipients, progressOf(claimed));
  } catch (error) {
    return release(run, claimed, owner, error);
  }
  if (screening.kind === 'settle') return settleSuppressed(run, claimed, owner, screening);
  const positions = screening.envelope;
  const email = outgoingEmail(
    run.id,
    body,
    positions.map((position) => recipients[position] ?? ''),
  );
  // The mailer keeps time on the real clock; the reserve after the reply is ours.
  const outcome = await deps.mailer.send(email, { endsBy: replyEndsBy(Date.now(), run.time.remainingMs()) });
  deps.metrics.milliseconds(SENDER_METRIC.smtpDuration, outcome.durationMs);
  const decision = decideOutcome(
    attemptResultOf(outcome, positions),
    {
      attempts: claimed.attempts,
      ...(claimed.attempt_limit === undefined ? {} : { attempt_limit: claimed.attempt_limit }),
      on_ambiguous: claimed.on_ambiguous,
      recipients: screening.progress,
      recipientTotal: recipients.length,
    },
    { ...deps.settings, ...(deps.relayGate ? { relayWaitSeconds: deps.relayGate.waitSeconds() } : {}) },
    deps.random,
  );
  if (decision.fleet !== undefined && !outcome.delivered) await tellTheFleet(run, decision.fleet, outcome);
  const verdict = await recordOutcome(run, claimed, owner, outcome, decision, email.envelope);
  await suppressHardBounces(run, claimed, outcome, email.envelope);
  return verdict;
}

/**
 * The decision's word for every sender (the relay is unavailable, or throttling us) goes to the
 * sending gate. A gate that cannot be reached changes nothing here: the outcome write must not wait
 * on it, and the decision stands.
 */
async function tellTheFleet(
  run: CopyRun,
  signal: FleetSignal,
  outcome: Extract<SendOutcome, { delivered: false }>,
): Promise<void> {
  const gate = run.deps.relayGate;
  if (gate === undefined) return;
  try {
    await gate.signal(signal, outcome.failure);
  } catch (error) {
    run.deps.log.warn(
      'sender could not update the sending gate',
      logContext(run, { signal, error: errorForLog(error) }),
    );
  }
}

/**
 * A message that can never be sent as stored (no body, a template that does not render) is
 * `failed` under the lease, without an SMTP transaction: its attempt count and recipients stay.
 */
function failUnsent(
  run: CopyRun,
  claimed: MessageStateRecord,
  owner: string,
  record: ReturnType<typeof missingBodyRecord>,
) {
  const { deps } = run;
  return deps.store.recordOutcome({
    claimed,
    owner,
    to: 'failed',
    now: deps.now(),
    attempt: record.attempt,
    lastError: record.lastError,
    retentionDays: deps.settings.retentionDays,
    attempts: claimed.attempts,
    recipients: progressOf(claimed),
  });
}

/** A read failed after the claim and before MAIL FROM: the record goes back to waiting, unattempted. */
async function release(run: CopyRun, claimed: MessageStateRecord, owner: string, error: unknown) {
  const now = run.deps.now();
  run.deps.log.warn(
    'sender released its claim: a read failed before the relay saw the message',
    logContext(run, { error: errorName(error) }),
  );
  const result = await writeUntilLanded(
    run,
    () =>
      run.deps.store.release({
        claimed,
        owner,
        now,
        retryAt: new Date(now.getTime() + SHORT_RETRY_SECONDS * 1000),
      }),
    { status: MESSAGE_STATUS.retrying, now },
    claimed,
  );
  if (result.kind !== 'applied') return result.verdict;
  run.deps.metrics.count(SENDER_METRIC.released);
  return keep('a read failed before the send; claim released', SHORT_RETRY_SECONDS);
}

async function recordOutcome(
  run: CopyRun,
  claimed: MessageStateRecord,
  owner: string,
  outcome: SendOutcome,
  decision: OutcomeDecision,
  envelope: readonly string[],
): Promise<CopyVerdict> {
  const { deps } = run;
  const now = deps.now();
  const attempt = attemptRecord(outcome, now, envelope);
  const result = await writeUntilLanded(
    run,
    () =>
      deps.store.recordOutcome({
        claimed,
        owner,
        to: decision.to,
        now,
        attempt,
        lastError: outcome.delivered ? null : lastErrorOf(outcome.failure),
        retryAt: retryAtOf(decision, now),
        retentionDays: deps.settings.retentionDays,
        attempts: decision.attempts,
        recipients: decision.recipients,
        ...(decision.to === 'dead' ? { deadCopy: run.copy.sqsMessageId } : {}),
      }),
    { status: decision.to, now },
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
  countOutcome(run, decision.to, outcome);
  if (outcome.delivered) {
    deps.metrics.milliseconds(
      SENDER_METRIC.lateness,
      Math.max(0, now.getTime() - Date.parse(claimed.send_at)),
    );
    if (outcome.refused.length > 0) {
      deps.log.warn('the relay refused some recipients', {
        ...logContext(run, {}),
        refusedDomains: domainsOf(outcome.refused.map((refusal) => envelope[refusal.index] ?? '')),
      });
    }
  }
  switch (decision.to) {
    case 'retrying':
      return keep('retrying after backoff', decision.visibilitySeconds);
    case 'dead':
      return moveToDeadLetters(run);
    default:
      return ack(decision.to);
  }
}

const OUTCOME_METRIC: Readonly<Record<OutcomeStatus, SenderCountMetric>> = {
  sent: SENDER_METRIC.sent,
  failed: SENDER_METRIC.failed,
  retrying: SENDER_METRIC.retried,
  dead: SENDER_METRIC.dead,
  unknown: SENDER_METRIC.unknown,
};

function countOutcome(run: CopyRun, to: OutcomeStatus, outcome: SendOutcome): void {
  const { metrics } = run.deps;
  metrics.count(OUTCOME_METRIC[to]);
  if (!outcome.delivered && outcome.failure.class === 'config') metrics.count(SENDER_METRIC.configErrors);
  if (!outcome.delivered && outcome.failure.class === 'ambiguous') metrics.count(SENDER_METRIC.ambiguous);
}

/** The mailer's outcome in the decision's terms: positions in the recipient list, not the envelope. */
function attemptResultOf(outcome: SendOutcome, positions: readonly number[]): AttemptResult {
  return {
    delivered: outcome.delivered,
    ...(outcome.delivered ? {} : { failureClass: outcome.failure.class, origin: outcome.failure.origin }),
    attempted: positions,
    refused: outcome.refused.map((refusal) => ({
      position: positions[refusal.index] ?? -1,
      permanent: refusal.permanent,
    })),
  };
}

/** The record's recipient progress (positions in the body's to, cc, bcc). */
function progressOf(record: MessageStateRecord): RecipientProgress {
  return {
    accepted: record.rcpt_accepted ?? [],
    rejected: record.rcpt_rejected ?? [],
    ...(record.rcpt_suppressed === undefined ? {} : { suppressed: record.rcpt_suppressed }),
  };
}

/** The body item as the mailer takes it; only strings reach nodemailer. */
function outgoingEmail(id: string, body: MessageBodyRecord, envelope: readonly string[]): OutgoingEmail {
  return {
    id,
    from: body.from,
    to: body.to,
    cc: body.cc ?? [],
    bcc: body.bcc ?? [],
    replyTo: body.reply_to ?? null,
    subject: body.subject,
    text: body.text ?? null,
    html: body.html ?? null,
    headers: body.headers ?? {},
    envelope,
  };
}
