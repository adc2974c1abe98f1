import { SENDER_METRIC } from '../core/metricNames.js';
import { type RecipientProgress, type Screening, screenRecipients } from '../core/recipients.js';
import { isHardBounce, SUPPRESSION_REASON, suppressionKey } from '../core/suppressions.js';
import type { SendOutcome } from '../ports/Mailer.js';
import type { MessageStateRecord } from '../store/messageRecord.js';
import { domainsOf } from './attemptRecords.js';
import { type CopyRun, errorName, logContext } from './copyRun.js';
import { ack, type CopyVerdict } from './copyVerdict.js';
import { writeUntilLanded } from './writeUntilLanded.js';

/**
 * The suppression list at send time (DESIGN §12), as the sender's steps around the attempt:
 * before it, the pending recipients on the tenant's list are left out (`screenSuppressed`), and a
 * message left with nobody to send to ends without an SMTP transaction (`settleSuppressed`); after
 * it, recipients refused at RCPT TO with a 5.1.x join the list (`suppressHardBounces`). The
 * decisions are lambdas/core/recipients.ts (`screenRecipients`) and lambdas/core/suppressions.ts.
 */

/**
 * Reads the tenant's list for the pending recipients and screens them. A read that fails throws:
 * the caller releases its claim (nothing reached the relay), so a list that could not be read never
 * counts as an empty one.
 */
export async function screenSuppressed(
  run: CopyRun,
  claimed: MessageStateRecord,
  recipients: readonly string[],
  progress: RecipientProgress,
): Promise<Screening> {
  const keys = recipients.map((recipient) => suppressionKey(recipient));
  const wanted = keys.filter((key): key is string => key !== undefined);
  const listed = await run.deps.store.suppressions.suppressedAmong(claimed.tenant, wanted);
  const suppressedNow = keys.flatMap((key, position) =>
    key !== undefined && listed.has(key) ? [position] : [],
  );
  const screening = screenRecipients(recipients.length, progress, suppressedNow);
  const newly = (screening.progress.suppressed?.length ?? 0) - (progress.suppressed?.length ?? 0);
  if (newly > 0) {
    run.deps.metrics.count(SENDER_METRIC.suppressedRecipients, newly);
    run.deps.log.info('sender left suppressed recipients out', logContext(run, { suppressed: newly }));
  }
  return screening;
}

/** Nobody is left to send to: the message ends as the screening says, without an attempt. */
export async function settleSuppressed(
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
      }),
    { status: screening.to, now },
    claimed,
  );
  if (result.kind !== 'applied') return result.verdict;
  if (screening.to === 'suppressed') deps.metrics.count(SENDER_METRIC.suppressed);
  deps.log.info(
    'sender settled a message without sending: its remaining recipients are suppressed',
    logContext(run, { status: screening.to }),
  );
  return ack(`${screening.to} (remaining recipients suppressed)`);
}

/**
 * Adds the recipients the relay refused at RCPT TO with a 5.1.x (bad mailbox or address) to the
 * tenant's list, with this message's id. Never throws: a failed add is logged, and the next refusal
 * of the address adds it.
 */
export async function suppressHardBounces(
  run: CopyRun,
  claimed: MessageStateRecord,
  outcome: SendOutcome,
  envelope: readonly string[],
): Promise<void> {
  const bounced = outcome.refused
    .filter(isHardBounce)
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
