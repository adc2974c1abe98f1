/**
 * What a status and an error class mean, in the words of docs/smtp-classification.md and DESIGN §2,
 * with the next command an operator can run. Pure data: used by `messages show` and the runbook.
 */
import {
  formatLocalDateTime,
  localDateTimeAt,
  type QuietHours,
  quietHoursDecision,
} from '../lambdas/core/localTime.js';
import type { MessageStatus } from '../lambdas/core/messageStatus.js';
import type { ErrorClass } from '../lambdas/core/postdateError.js';
import { isPaused, type PauseState } from '../lambdas/core/relayBreaker.js';

/** Each status in words, with the next command for this message (its id, its tenant). */
export const STATUS_WORDS: Readonly<Record<MessageStatus, (id: string, tenant: string) => string>> = {
  scheduled: () => 'accepted, waiting for its send time (in the scheduler or delayed in SQS)',
  sending: () => 'leased by a sender right now; the outcome is written when the SMTP exchange ends',
  retrying: () =>
    'waiting to be tried again: after a backoff with jitter, or, while no relay takes mail (an outage, a refused ' +
    'login or TLS), until its breaker closes, no attempt counted (`postdate sending status`)',
  sent: () => 'the SMTP relay accepted it (250 after DATA)',
  failed: (id) =>
    `permanent failure (5xx, or invalid content): fix the cause, then \`postdate messages retry ${id}\``,
  dead: (id) =>
    `transient failures used up every attempt and its copy is in the DLQ: \`postdate dlq redrive --ids ${id}\` ` +
    `(same rev) or \`postdate messages retry ${id}\` (new rev)`,
  cancelled: () => 'cancelled before a send began',
  superseded: () => 'a newer version of its group exists, so it was not sent (freshness)',
  expired: () => 'its not_after deadline passed before it could be sent',
  suppressed: (_id, tenant) =>
    `every recipient was on the tenant's suppression list at send time, so nothing was sent: \`postdate suppressions list --tenant ${tenant} --all\``,
  unknown: (id) =>
    'the relay may or may not have accepted it (ambiguous outcome, policy "hold"): search the relay\'s ' +
    `logs for its Message-ID; if it never arrived, \`postdate messages retry ${id}\`; if it did, ` +
    `\`postdate messages discard ${id}\` (it stops waiting)`,
};

/** A waiting message an operator discarded (lambdas/core/messageLifetime.ts `discardedAt`): decided. */
export function discardedInWords(): string {
  return 'discarded by an operator: it waits for nobody any more and expires with the retention period (a retry would still send it)';
}

/**
 * What the status says of this message now. A `sending` one's lease is read against the clock: one
 * that ended with no outcome written is no send going on but an ambiguous attempt (DESIGN §5) that
 * the next copy takes over, and the relay its lease named is whose logs to search (decision 0182).
 */
export function statusInWords(
  message: {
    readonly id: string;
    readonly tenant: string;
    readonly status: MessageStatus;
    readonly on_ambiguous: 'retry' | 'hold';
    readonly lease_until?: string | undefined;
    readonly lease_relay?: string | undefined;
  },
  now: Date,
): string {
  if (message.status !== 'sending') return STATUS_WORDS[message.status](message.id, message.tenant);
  const relay = message.lease_relay === undefined ? '' : ` (relay ${message.lease_relay})`;
  // No lease at all counts as one that ended, as the sender's admission reads it.
  const leaseEnd = message.lease_until === undefined ? 0 : Date.parse(message.lease_until);
  if (leaseEnd > now.getTime())
    return `leased by a sender right now${relay} until ${message.lease_until}; the outcome is written when the SMTP exchange ends`;
  const next =
    message.on_ambiguous === 'hold' ? 'makes it unknown (policy "hold")' : 'sends it again (policy "retry")';
  return (
    `its sender's lease${relay} ended ${message.lease_until ?? '(none)'} with no outcome written (the sender ` +
    `stopped, or its outcome write failed): the relay may have it. The next copy (the sweeper's, after its grace) ` +
    `counts an ambiguous attempt and ${next}; search the relay's logs for its Message-ID`
  );
}

export const ERROR_CLASS_WORDS: Readonly<Record<ErrorClass, string>> = {
  transient:
    'temporary: retried with exponential backoff and full jitter, then the DLQ after the last attempt',
  permanent: 'permanent: the relay refused it for good (5xx); not retried until an operator retries it',
  config:
    'our SMTP configuration is wrong (credentials, TLS or a sender the relay does not allow), alarmed: a refused ' +
    "login or TLS holds every message behind the relay's breaker (no attempt), a refused sender retries it with " +
    'a long backoff; fix the configuration and the messages go out by themselves',
  ambiguous:
    'ambiguous: the connection broke after the body was sent, so the relay may have the message; ' +
    'policy "retry" retries it (receivers can dedupe by Message-ID), policy "hold" makes it unknown',
};

/** The Message-ID every attempt of a message carries (DESIGN §5): what to search the relay's logs for. */
export function messageIdHeader(id: string, domain: string): string {
  return `<${id}@${domain}>`;
}

/**
 * What holds a waiting message of this kind (undefined: none in `tags.kind`), by the sender's own
 * rule (`isPaused`, core/relayBreaker.ts), and the command that lets it go; null when nothing does.
 * A pause of its kind is named first, and its `resume --kind`: that lifts this pause and no other.
 */
export function heldInWords(pause: PauseState, kind: string | undefined): string | null {
  if (!isPaused(pause, kind)) return null;
  const own = kind !== undefined && Object.hasOwn(pause.kinds, kind) ? pause.kinds[kind] : undefined;
  if (own !== undefined) {
    return `sending is paused for kind ${kind} since ${own.at} (${own.reason}): postdate sending resume --kind ${kind}`;
  }
  const all = pause.all;
  return all === undefined
    ? null
    : `sending is paused (everything) since ${all.at} (${all.reason}): postdate sending resume`;
}

/**
 * What quiet hours make of a waiting message that has come due (its `send_at` behind `now`), by the
 * sender's own rule (`quietHoursDecision`, core/localTime.ts): held until the window's end (where the
 * sender wrote its `due_at`), or expired when its `not_after` comes first; null when they hold nothing
 * now. A message not yet due (a send time ahead, a retry's backoff ending after the window) is the
 * sender's to decide when it comes due.
 */
export function quietHoursInWords(
  message: {
    readonly status: MessageStatus;
    readonly send_at: string;
    /** When its copy is due: a retry's end of backoff, or the window's end the sender wrote. */
    readonly due_at?: string | undefined;
    readonly not_after: string | null;
    readonly time_zone?: string | undefined;
    readonly quiet_hours?: QuietHours | undefined;
  },
  now: Date,
): string | null {
  const { quiet_hours: quietHours, time_zone: zone } = message;
  if (quietHours === undefined || Date.parse(message.send_at) > now.getTime()) return null;
  const decision = quietHoursDecision({
    due: now,
    quietHours,
    timeZone: zone ?? null,
    notAfter: message.not_after === null ? null : new Date(message.not_after),
  });
  const inside = `inside its quiet hours ${quietHours.start}–${quietHours.end} ${zone}`;
  switch (decision.kind) {
    case 'send':
      return null;
    case 'hold': {
      // A retry whose backoff ends later waits for that, not for the window (its due_at is not the end).
      const due = message.status === 'retrying' ? message.due_at : undefined;
      if (due !== undefined && Date.parse(due) > decision.until.getTime()) return null;
      const there = zone === undefined ? '' : formatLocalDateTime(localDateTimeAt(decision.until, zone));
      return `${inside}: the sender holds it until ${decision.until.toISOString()} (${there} there); holding is no attempt`;
    }
    case 'expire':
      return `${inside}: its not_after comes before they end, so the sender expires it unsent`;
    case 'unreadable':
      return `${decision.reason}: the sender fails it (permanent, no attempt)`;
  }
}
