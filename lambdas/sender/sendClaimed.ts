import type { StoredAttachment } from '../core/attachments.js';
import { classifyAttachmentRead } from '../core/classifySmtpError.js';
import { errorForLog } from '../core/errorForLog.js';
import { SENDER_METRIC } from '../core/metricNames.js';
import {
  type RecipientProgress,
  recipientList,
  type Screening,
  screenRecipients,
} from '../core/recipients.js';
import {
  type AttemptResult,
  bodyFault,
  decideOutcome,
  type FleetSignal,
  retryWithinDeadline,
  showsLastError,
} from '../core/sendDecision.js';
import { hasTimeForAttempt, replyEndsBy } from '../core/sendTiming.js';
import { formerQuotedKey, suppressionKey } from '../core/suppressions.js';
import type { TemplateRenderer } from '../core/templateRenderer.js';
import { isLiveSide } from '../core/testSide.js';
import { isSupersededBy } from '../core/unsentDecision.js';
import { AttachmentMissingError, type AttachmentStore } from '../ports/AttachmentStore.js';
import type { OutgoingAttachment, OutgoingEmail, SendOutcome } from '../ports/Mailer.js';
import type { MessageBodyRecord, MessageStateRecord } from '../store/messageRecord.js';
import {
  ack,
  type CopyRun,
  type CopyVerdict,
  groupHeadOf,
  logContext,
  progressOf,
  type SenderRelay,
  type Settled,
  unwrap,
} from './copyRun.js';
import {
  type Claim,
  countEnding,
  failUnsent,
  recordOutcome,
  release,
  releaseOutOfTime,
  supersede,
  suppressHardBounces,
  unsentFailure,
  writeUntilLanded,
} from './outcomeWrite.js';

/**
 * After the claim, under our lease (DESIGN §5): check the group, fail what can never go as stored
 * (`unsendable`: its quiet hours cannot be read; processCopy.ts found it), check the body, render a
 * template message from its pinned version (DESIGN §10), leave out the recipients on the tenant's
 * suppression list (DESIGN §12), send to the pending recipients, let lambdas/core/sendDecision.ts
 * decide what the outcome makes of the message, tell the sending gate what concerns every sender,
 * and write the outcome until it lands (outcomeWrite.ts). A read that fails before MAIL FROM gives
 * the claim back: nothing reached the relay, so there was no attempt.
 */

export async function sendClaimed(
  run: CopyRun,
  claim: Claim,
  bodyRead: Promise<Settled<MessageBodyRecord | undefined>>,
  relay: SenderRelay,
  unsendable?: string,
): Promise<CopyVerdict> {
  const { deps } = run;
  const { record: claimed, owner } = claim;
  let superseded: boolean;
  let body: MessageBodyRecord | undefined;
  try {
    // The one group check, under the claim just before the send (DESIGN §4 Freshness, decision 0097).
    superseded = isSupersededBy(claimed.group, await groupHeadOf(run, claimed));
    body = unwrap(await bodyRead);
  } catch (error) {
    // Nothing reached the relay: give the claim back (no attempt, nothing ambiguous).
    return release(run, claim, error);
  }
  if (superseded) return supersede(run, claimed, owner);
  if (unsendable !== undefined) {
    // Its quiet hours cannot be read here (core/unsentDecision.ts `fail`): it could never go as stored.
    deps.log.error('sender could not read a message’s quiet hours', logContext(run, { reason: unsendable }));
    return failUnsent(run, claimed, owner, unsentFailure(deps.now(), 'quiet hours unreadable', unsendable));
  }
  const fault = bodyFault(claimed.fingerprint, body, deps.settings.allowedFrom);
  if (fault === 'sender-not-allowed') {
    // The rule names the setting, never the address (no addresses in logs).
    deps.log.error('sender refused a message whose from this stack does not allow', logContext(run, {}));
    // A content refusal (decision 0165), permanent, made before MAIL FROM.
    const refused = unsentFailure(
      deps.now(),
      'sender not allowed',
      "the message's from is not an allowed sender of this stack (POSTDATE_ALLOWED_FROM)",
    );
    return failUnsent(run, claimed, owner, refused);
  }
  if (body === undefined || fault !== undefined) {
    deps.log.error(
      fault === 'foreign' ? 'sender found a body of another request' : 'sender found no body for a message',
      logContext(run, {}),
    );
    const missing = unsentFailure(
      deps.now(),
      'message body not found',
      'the message body item is missing; nothing can be sent',
    );
    return failUnsent(run, claimed, owner, missing);
  }
  // A template message is rendered here, from its pinned version (DESIGN §10).
  const sendable = await sendableBody(deps.templates, claimed.tenant, body);
  if (sendable.kind === 'read-failed') return release(run, claim, sendable.error);
  if (sendable.kind === 'unrenderable') {
    deps.log.error(
      'sender could not render a template message',
      logContext(run, { template: body.template?.name }),
    );
    return failUnsent(
      run,
      claimed,
      owner,
      unsentFailure(deps.now(), 'template did not render', sendable.reason),
    );
  }
  body = sendable.body;

  const recipients = recipientList(body);
  // Suppressions (DESIGN §12): read at send time, not at enqueue; a failed read gives the claim back.
  let screening: Screening;
  try {
    screening = await screenSuppressed(run, claimed, recipients, progressOf(claimed));
  } catch (error) {
    return release(run, claim, error);
  }
  if (screening.kind === 'settle') return settleSuppressed(run, claimed, owner, screening);
  const positions = screening.envelope;
  const email = outgoingEmail(
    run.id,
    body,
    positions.map((position) => recipients[position] ?? ''),
  );
  const attachments = outgoingAttachments(claimed.attachments, deps.attachments);
  // A message with attachments on a sender without the bucket: a configuration fault, never a send without them.
  if (attachments === undefined)
    return release(run, claim, new Error('the message has attachments and this sender has no bucket'));
  // Every file is asked of the bucket before MAIL FROM (decision 0171), for a test message too: one
  // our storage cannot give now is no attempt, one that is gone fails the message without a
  // transaction. Only a stream that breaks after the relay's 354 is an attempt.
  const unstored = await unstoredAttachment(claimed.attachments, deps.attachments);
  // The last moment before MAIL FROM: the reads since the claim took their time, and a transaction
  // starts only with a whole attempt and its outcome write left; else the claim goes back unsent.
  if (unstored === undefined && !hasTimeForAttempt(run.time.remainingMs(), deps.settings.timing))
    return releaseOutOfTime(run, claim);
  // From here the outcome records the screening (or our lease was lost to a takeover that screens again).
  countLeftOut(run, claimed, screening.progress);
  // The mailer keeps time on the real clock; the reserve after the reply is ours.
  const outcome =
    unstored ??
    (await relay.mailer.send(attachments.length > 0 ? { ...email, attachments } : email, {
      endsBy: replyEndsBy(Date.now(), run.time.remainingMs()),
    }));
  // The simulator's time is no relay's (DESIGN §14): only a live message times the relay.
  if (unstored === undefined && isLiveSide(claimed.tenant))
    deps.metrics.milliseconds(SENDER_METRIC.smtpDuration, outcome.durationMs, relay.name);
  const decided = decideOutcome(
    attemptResultOf(outcome, positions),
    {
      attempts: claimed.attempts,
      ...(claimed.attempt_limit === undefined ? {} : { attempt_limit: claimed.attempt_limit }),
      on_ambiguous: claimed.on_ambiguous,
      recipients: screening.progress,
      recipientTotal: recipients.length,
    },
    { ...deps.settings, ...relayWait(run, relay) },
    deps.random,
  );
  const decision = retryWithinDeadline(decided, claimed.not_after, deps.now());
  // The fleet hears of an outage or a throttle before the copy goes back; after a 250 nothing goes
  // before the outcome write (DESIGN §5), so a recipient throttled at RCPT TO is told after it.
  const fleet = decision.fleet;
  if (fleet !== undefined && !outcome.delivered) await tellTheFleet(run, relay, fleet, outcome);
  const envelope = { addresses: email.envelope, positions };
  // A file the bucket could not give never met the relay: no relay to name.
  const through = unstored === undefined ? relay.name : undefined;
  const verdict = await recordOutcome(run, claimed, owner, outcome, decision, envelope, through);
  if (fleet !== undefined && outcome.delivered) await tellTheFleet(run, relay, fleet, outcome);
  await suppressHardBounces(run, claimed, outcome, email.envelope);
  return verdict;
}

/**
 * A template message's body at send time (DESIGN §10): rendered from the version its records
 * pinned, with the data it was enqueued with, through the sender's renderer (each version compiled
 * once per warm function). The enqueue rendered the same version with the same data, so this
 * should not fail; when it does anyway (the version item gone, a data item unreadable), the message
 * can never be sent: `failed`, class `permanent`, a reason naming what failed, never a retry. A
 * failed read of the version is the table's fault, not the message's: the claim is released.
 */
type SendableBody =
  | { readonly kind: 'ready'; readonly body: MessageBodyRecord }
  | { readonly kind: 'unrenderable'; readonly reason: string }
  | { readonly kind: 'read-failed'; readonly error: unknown };

/** The body with its subject, text and html: as stored (inline), or rendered (template). */
export async function sendableBody(
  renderer: TemplateRenderer,
  tenant: string,
  body: MessageBodyRecord,
): Promise<SendableBody> {
  const template = body.template;
  if (template === undefined) return { kind: 'ready', body };
  const data = parseData(body.data_json);
  if (data === undefined)
    return {
      kind: 'unrenderable',
      reason: `the data of template ${template.name} v${template.version} is unreadable`,
    };
  let outcome: Awaited<ReturnType<TemplateRenderer['render']>>;
  try {
    outcome = await renderer.render({ tenant, name: template.name, version: template.version }, data);
  } catch (error) {
    return { kind: 'read-failed', error };
  }
  if (outcome.kind === 'missing')
    return { kind: 'unrenderable', reason: `template ${template.name} v${template.version} does not exist` };
  if (outcome.kind === 'invalid') {
    const first = outcome.errors[0];
    const why = first === undefined ? 'it does not render' : `${first.field} ${first.message}`;
    return {
      kind: 'unrenderable',
      reason:
        `template ${template.name} v${template.version} does not render with the message's data: ${why}`.slice(
          0,
          300,
        ),
    };
  }
  return { kind: 'ready', body: { ...body, ...outcome.content } };
}

function parseData(json: string | undefined): Readonly<Record<string, unknown>> | undefined {
  if (json === undefined) return {};
  try {
    const data: unknown = JSON.parse(json);
    return typeof data === 'object' && data !== null && !Array.isArray(data)
      ? (data as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The suppression list at send time (DESIGN §12; the decisions are core/recipients.ts
 * `screenRecipients` and core/suppressions.ts): reads the tenant's list for the pending recipients
 * and screens them. A read that fails throws:
 * the caller releases its claim (nothing reached the relay), so a list that could not be read never
 * counts as an empty one.
 */
async function screenSuppressed(
  run: CopyRun,
  claimed: MessageStateRecord,
  recipients: readonly string[],
  progress: RecipientProgress,
): Promise<Screening> {
  // Each recipient's key, and the key an entry of a quoted local part had before decision 0184.
  const keys = recipients.map((recipient) =>
    [suppressionKey(recipient), formerQuotedKey(recipient)].filter((key): key is string => key !== undefined),
  );
  const listed = await run.deps.store.suppressions.suppressedAmong(claimed.tenant, [...new Set(keys.flat())]);
  const suppressedNow = keys.flatMap((own, position) =>
    own.some((key) => listed.has(key)) ? [position] : [],
  );
  return screenRecipients(recipients.length, progress, suppressedNow);
}

/**
 * Counts the recipients this screening newly left out (`SuppressedRecipients`), once its progress is
 * going onto the record: with the attempt's outcome or the settle. A claim given back before MAIL
 * FROM records nothing, and the next claim screens them again: counted then, once, as
 * `recipients.suppressed` counts them.
 */
function countLeftOut(run: CopyRun, claimed: MessageStateRecord, screened: RecipientProgress): void {
  const newly = (screened.suppressed?.length ?? 0) - (progressOf(claimed).suppressed?.length ?? 0);
  if (newly <= 0) return;
  if (isLiveSide(claimed.tenant)) run.deps.metrics.count(SENDER_METRIC.suppressedRecipients, newly);
  run.deps.log.info('sender left suppressed recipients out', logContext(run, { suppressed: newly }));
}

/** Nobody is left to send to: the message ends as the screening says, without an attempt. */
async function settleSuppressed(
  run: CopyRun,
  claimed: MessageStateRecord,
  owner: string,
  screening: Extract<Screening, { kind: 'settle' }>,
): Promise<CopyVerdict> {
  const { deps } = run;
  const now = deps.now();
  const result = await writeUntilLanded(
    run,
    () =>
      deps.store.settleScreened({
        claimed,
        owner,
        to: screening.to,
        now,
        recipients: screening.progress,
        retentionDays: deps.settings.retentionDays,
        showsLastError: showsLastError(screening.to),
      }),
    { status: screening.to, now, owner },
    claimed,
  );
  if (result.kind !== 'applied') return result.verdict;
  countLeftOut(run, claimed, screening.progress);
  // Counted as every ending is: `failed` and `sent` too, not only `suppressed` (FailedMessages).
  countEnding(run, claimed, screening.to);
  deps.log.info(
    'sender settled a message without sending: its remaining recipients are suppressed',
    logContext(run, { status: screening.to }),
  );
  return ack(`${screening.to} (remaining recipients suppressed)`);
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

/**
 * The message's attachments as the mailer takes them, each opened from the bucket only when the
 * relay takes the body (so a refused transaction reads nothing, and no stream waits open behind the
 * others); undefined when the message has some and there is no bucket to read them from.
 */
function outgoingAttachments(
  stored: readonly StoredAttachment[] | undefined,
  bucket: Pick<AttachmentStore, 'open'> | undefined,
): OutgoingAttachment[] | undefined {
  if (stored === undefined || stored.length === 0) return [];
  if (bucket === undefined) return undefined;
  return stored.map((attachment) => ({
    filename: attachment.filename,
    contentType: attachment.content_type,
    open: () => bucket.open(attachment.key),
  }));
}

/**
 * Asks the bucket for every file before MAIL FROM (DESIGN §2, §5, §13; decision 0171): undefined
 * when each is there, else the failure as one that came before the transaction
 * (core/classifySmtpError.ts `classifyAttachmentRead`: origin `local`, permanent only for a file that
 * is gone), for the one outcome rule (`decideOutcome`) to decide. A HEAD, not the read itself: a GET
 * opened now would wait unread behind the session's setup and the files before it, and break there.
 */
async function unstoredAttachment(
  stored: readonly StoredAttachment[] | undefined,
  bucket: Pick<AttachmentStore, 'describe'> | undefined,
): Promise<Extract<SendOutcome, { delivered: false }> | undefined> {
  if (stored === undefined || stored.length === 0 || bucket === undefined) return undefined;
  let error: unknown;
  try {
    const found = await Promise.all(stored.map((attachment) => bucket.describe(attachment.key)));
    const missing = found.indexOf(undefined);
    if (missing < 0) return undefined;
    error = new AttachmentMissingError(stored[missing]?.key ?? '');
  } catch (thrown) {
    error = thrown;
  }
  const failure = classifyAttachmentRead(error);
  return { delivered: false, failure, reply: null, refused: [], durationMs: 0 };
}

/** The mailer's outcome in the decision's terms: positions in the recipient list, not the envelope. */
export function attemptResultOf(outcome: SendOutcome, positions: readonly number[]): AttemptResult {
  return {
    delivered: outcome.delivered,
    ...(outcome.delivered
      ? {}
      : {
          failureClass: outcome.failure.class,
          origin: outcome.failure.origin,
          throttle: outcome.failure.throttle,
        }),
    attempted: positions,
    refused: outcome.refused.map((refusal) => ({
      position: positions[refusal.index] ?? -1,
      permanent: refusal.permanent,
      throttle: refusal.throttle,
    })),
  };
}

/**
 * How long a copy waits after its relay was found unavailable: one probe interval, about when the
 * relay's breaker may have closed — or a moment when a later relay may take it (DESIGN §15).
 */
function relayWait(run: CopyRun, relay: SenderRelay): { readonly relayWaitSeconds?: number } {
  if (relay.gate === undefined) return {};
  const later = run.deps.relays.indexOf(relay) < run.deps.relays.length - 1;
  return { relayWaitSeconds: later ? 1 : relay.gate.waitSeconds() };
}

/**
 * The decision's word for every sender (the relay is unavailable, or throttling us: the attempt's
 * failure, or a recipient's RCPT TO) goes to the sending gate. A gate that cannot be reached changes
 * nothing here: the outcome write must not wait on it, and the decision stands.
 */
async function tellTheFleet(
  run: CopyRun,
  relay: SenderRelay,
  signal: FleetSignal,
  outcome: SendOutcome,
): Promise<void> {
  const gate = relay.gate;
  if (gate === undefined) return;
  const throttledAt = outcome.refused.find((refusal) => refusal.throttle !== undefined);
  const said = outcome.delivered
    ? {
        code: throttledAt?.code ?? null,
        class: 'transient' as const,
        reason: 'the relay throttled a recipient at RCPT TO',
      }
    : outcome.failure;
  try {
    await gate.signal(signal, said);
  } catch (error) {
    run.deps.log.warn(
      'sender could not update the sending gate',
      logContext(run, { signal, error: errorForLog(error) }),
    );
  }
}
