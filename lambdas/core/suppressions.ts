/**
 * The suppression list of DESIGN §12, its pure part: how an address is normalised, which relay
 * replies add one, and the address its routes take (their body's schema is requestSchemas.ts's).
 * Nothing here does I/O; the DynamoDB adapter is lambdas/store/suppressionList.ts.
 *
 * Normalisation (docs/decisions/, "Suppressed addresses are compared lower-cased"): the addr-spec
 * of a mailbox (a display name is dropped), the domain lower-cased as DNS is case-insensitive, and
 * the local part lower-cased too. RFC 5321 lets a receiver treat the local part's case as meaningful,
 * but no mailbox provider of note does; a list that missed `Ada@` after `ada@` hard-bounced would
 * send again to a dead or complaining mailbox, which costs the sender's reputation, while two real
 * mailboxes that differ only in case are practically unheard of. A domain written in Unicode is
 * keyed by its ASCII form (IDNA, punycode: `bücher.example` → `xn--bcher-kva.example`), the form the
 * mailer puts in the envelope and SES reports back, so every spelling of one mailbox is one key
 * (decision 0153). A quoted local part is keyed in the form RFC 5322 prefers, `"ada"` as `ada`: the
 * same mailbox, and the form the mailer sends and SES reports (decision 0184).
 */
import { domainToUnicode } from 'node:url';
import { asciiDomain, parseAddress, preferredLocalPart } from './addresses.js';
import { type FieldError, guarded, type Validated } from './problem.js';

/** Why an address is on the list. `hard_bounce` and `complaint` are added by Postdate itself. */
export const SUPPRESSION_REASON = {
  hardBounce: 'hard_bounce',
  complaint: 'complaint',
  manual: 'manual',
} as const;

export type SuppressionReason = (typeof SUPPRESSION_REASON)[keyof typeof SUPPRESSION_REASON];

export const SUPPRESSION_REASONS: readonly SuppressionReason[] = Object.values(SUPPRESSION_REASON);

/** One entry of a tenant's list, as the API shows it. */
export interface Suppression {
  /** The normalised address (lower-case). */
  readonly address: string;
  readonly reason: SuppressionReason;
  /** The Postdate message whose bounce or complaint added it; null when added by hand. */
  readonly message_id: string | null;
  readonly created_at: string;
}

/** A suppression to write: the tenant's, with where it came from. */
export interface SuppressionInput {
  readonly tenant: string;
  readonly address: string;
  readonly reason: SuppressionReason;
  readonly messageId: string | null;
  readonly now: Date;
}

/**
 * The normalised form of one mailbox (`Ada <Ada@Example.COM>` → `ada@example.com`), or undefined
 * when it is not one. Used on a message's recipients at send time.
 */
export function suppressionKey(mailbox: string): string | undefined {
  const parsed = parseAddress(mailbox);
  return parsed.ok ? normalised(parsed.value.local, parsed.value.domain) : undefined;
}

/**
 * The key an entry of this key's mailbox was stored under before decision 0153, when it differs: its
 * domain in Unicode (`ada@xn--bcher-kva.example` → `ada@bücher.example`), as the API and the 5.1.x
 * path wrote a domain spelled so. The sender looks it up too, and DELETE removes it too, so an entry
 * written before the upgrade keeps suppressing and can still be removed. Undefined for an ASCII
 * domain (nothing changed there) or what is not an address.
 */
export function formerSuppressionKey(key: string): string | undefined {
  const at = key.lastIndexOf('@');
  if (at <= 0) return undefined;
  const domain = key.slice(at + 1);
  if (!/(^|\.)xn--/.test(domain)) return undefined;
  const unicode = domainToUnicode(domain);
  return unicode === '' || unicode === domain ? undefined : `${key.slice(0, at)}@${unicode}`;
}

/**
 * The key an entry of this mailbox was stored under before decision 0184, when it differs: its quoted
 * local part lower-cased as written (`"Ada"@example.com` → `"ada"@example.com`). The sender looks it
 * up too, and DELETE removes it too, so an entry written before the upgrade keeps suppressing the
 * recipients written so and can still be removed. Undefined for an unquoted local part (nothing
 * changed there) or what is not an address.
 */
export function formerQuotedKey(mailbox: string): string | undefined {
  const parsed = parseAddress(mailbox);
  if (!parsed.ok) return undefined;
  const { local, domain } = parsed.value;
  const former = `${local.toLowerCase()}@${asciiDomain(domain)}`;
  return former === normalised(local, domain) ? undefined : former;
}

/**
 * Validates an address given to the API or the CLI (the `{address}` of the routes): a bare addr-spec,
 * RFC 5322-valid; answers its normalised form. Its one error names the field `address`. Never throws.
 */
export function validateSuppressionAddress(address: string): Validated<string> {
  return guarded(() => {
    const parsed = parseAddress(address);
    if (!parsed.ok) return invalidAddress(parsed.reason);
    if (parsed.value.name !== null || address !== parsed.value.address) {
      return invalidAddress('must be a bare address (local@domain), without a display name or spaces');
    }
    return { ok: true, value: normalised(parsed.value.local, parsed.value.domain) };
  });
}

function invalidAddress(message: string): { ok: false; errors: FieldError[] } {
  return { ok: false, errors: [{ field: 'address', message }] };
}

function normalised(local: string, domain: string): string {
  return `${preferredLocalPart(local).toLowerCase()}@${asciiDomain(domain)}`;
}

/** Whether a value read back is one of the reasons (an item written by a later version may not be). */
export function isSuppressionReason(value: unknown): value is SuppressionReason {
  return typeof value === 'string' && (SUPPRESSION_REASONS as readonly string[]).includes(value);
}
