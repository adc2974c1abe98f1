import type { SmtpErrorClassification } from '../core/classifySmtpError.js';
import { extractEnhancedCode } from '../core/classifySmtpError.js';
import { redactAddresses } from '../core/errorForLog.js';
import { providerMessageIdOf } from '../core/providerMessageId.js';
import type { SendOutcome } from '../ports/Mailer.js';
import type { AttemptRecord, LastError } from '../store/messageRecord.js';

/**
 * How one attempt is written down: the history entry and `last_error`. What is stored is short and
 * carries no address: relay replies often echo the recipient ("550 5.1.1 <ada@example.com>: user
 * unknown"), so every address is replaced before anything is kept or logged.
 */

/** Stored reply texts are cut to this many characters. */
export const MAX_REPLY_LENGTH = 160;

// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f]+/g;

/** A relay reply without addresses or control characters, at most MAX_REPLY_LENGTH characters. */
export function redactReply(reply: string | null): string | null {
  if (reply === null) return null;
  const redacted = redactAddresses(reply.replace(CONTROL, ' ')).replace(/\s+/g, ' ').trim();
  if (redacted === '') return null;
  return redacted.length > MAX_REPLY_LENGTH ? `${redacted.slice(0, MAX_REPLY_LENGTH - 1)}…` : redacted;
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

/**
 * The history entry of an attempt the relay answered or that failed; `envelope` is the attempt's
 * RCPT TO list, whose refused recipients are kept as domains only.
 */
export function attemptRecord(
  outcome: SendOutcome,
  at: Date,
  envelope: readonly string[] = [],
): AttemptRecord {
  const refusedDomains = domainsOf(outcome.refused.map((refusal) => envelope[refusal.index] ?? ''));
  if (outcome.delivered) {
    const reply = outcome.reply ?? '';
    const code = /^(\d{3})/.exec(reply)?.[1] ?? null;
    // Read from the raw reply: redaction could take an id that looks like an address apart.
    const providerMessageId = providerMessageIdOf(outcome.reply);
    const entry: AttemptRecord = {
      at: at.toISOString(),
      outcome: 'sent',
      code,
      enhanced_code: extractEnhancedCode(reply),
      reply: redactReply(outcome.reply),
      duration_ms: outcome.durationMs,
      ...(providerMessageId === null ? {} : { provider_message_id: providerMessageId }),
    };
    return refusedDomains.length === 0 ? entry : { ...entry, rejected_domains: refusedDomains };
  }
  const entry: AttemptRecord = {
    at: at.toISOString(),
    outcome: outcome.failure.class,
    code: outcome.failure.code,
    enhanced_code: outcome.failure.enhancedCode,
    reply: redactReply(outcome.reply),
    duration_ms: outcome.durationMs,
  };
  return refusedDomains.length === 0 ? entry : { ...entry, rejected_domains: refusedDomains };
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
export function interruptedAttemptRecord(leaseUntil: string | undefined, at: Date): AttemptRecord {
  return {
    at: leaseUntil ?? at.toISOString(),
    outcome: 'ambiguous',
    code: null,
    enhanced_code: null,
    reply: 'lease expired while sending',
    duration_ms: 0,
  };
}

export const INTERRUPTED_SEND_ERROR: LastError = {
  class: 'ambiguous',
  code: null,
  enhanced_code: null,
  message: INTERRUPTED_SEND_REASON,
};

/** The history entry for a message whose body item is missing: it can never be sent. */
export function missingBodyRecord(at: Date): { attempt: AttemptRecord; lastError: LastError } {
  return {
    attempt: {
      at: at.toISOString(),
      outcome: 'permanent',
      code: null,
      enhanced_code: null,
      reply: 'message body not found',
      duration_ms: 0,
    },
    lastError: {
      class: 'permanent',
      code: null,
      enhanced_code: null,
      message: 'the message body item is missing; nothing can be sent',
    },
  };
}
