/**
 * Email addresses: one RFC 5322 mailbox (addr-spec or `display-name <addr-spec>`), parsed without
 * throwing, and the POSTDATE_ALLOWED_FROM sender patterns.
 */
import { domainToASCII } from 'node:url';
import { controlCharacterProblem } from './headerSafety.js';
import { LIMITS } from './requestLimits.js';

export interface ParsedAddress {
  /** The display name, unquoted, or null. */
  readonly name: string | null;
  /** The addr-spec, `local@domain`. */
  readonly address: string;
  readonly local: string;
  readonly domain: string;
}

const ATEXT = "A-Za-z0-9!#$%&'*+/=?^_`{|}~-";
const DOT_ATOM_LOCAL = new RegExp(`^[${ATEXT}]+(?:\\.[${ATEXT}]+)*$`);
const QUOTED_LOCAL = /^"(?:[\x20\x21\x23-\x5B\x5D-\x7E]|\\[\x20-\x7E])*"$/;
/** A domain label: letters (incl. IDN letters, punycoded by the mailer), digits, inner hyphens. */
const DOMAIN_LABEL = /^[\p{L}\p{N}](?:[\p{L}\p{N}\p{M}-]{0,61}[\p{L}\p{N}\p{M}])?$/u;
/** RFC 5322 `specials`: an unquoted display name may not contain them (`.` is tolerated, obs-phrase). */
const DISPLAY_NAME_SPECIALS = /["(),:;<>@[\\\]]/;

export type AddressParse =
  | { readonly ok: true; readonly value: ParsedAddress }
  | { readonly ok: false; readonly reason: string };

/**
 * Parses one mailbox: `ada@example.com`, `Ada Lovelace <ada@example.com>` or
 * `"Lovelace, Ada" <ada@example.com>`. Domain literals (`[192.0.2.1]`), comments, groups and
 * non-ASCII local parts (SMTPUTF8) are refused: the relay may not support them. Never throws.
 */
export function parseAddress(input: string): AddressParse {
  const control = controlCharacterProblem(input, false);
  if (control) return { ok: false, reason: control };
  const value = input.trim();
  if (value.length === 0) return { ok: false, reason: 'must be an email address' };
  if (value.length > LIMITS.maxAddressLength) {
    return { ok: false, reason: `must be at most ${LIMITS.maxAddressLength} characters` };
  }
  let name: string | null = null;
  let spec = value;
  if (value.endsWith('>')) {
    const open = value.lastIndexOf('<');
    if (open < 0) return { ok: false, reason: 'has a ">" without a "<"' };
    spec = value.slice(open + 1, -1).trim();
    const rawName = value.slice(0, open).trim();
    if (rawName !== '') {
      const parsedName = parseDisplayName(rawName);
      if (!parsedName.ok) return parsedName;
      name = parsedName.name;
    }
  }
  const at = spec.lastIndexOf('@');
  if (at <= 0 || at === spec.length - 1)
    return { ok: false, reason: 'must be an email address (local@domain)' };
  const local = spec.slice(0, at);
  const domain = spec.slice(at + 1);
  if (local.length > 64) return { ok: false, reason: 'has a local part longer than 64 characters' };
  if (!DOT_ATOM_LOCAL.test(local) && !QUOTED_LOCAL.test(local)) {
    return { ok: false, reason: 'has an invalid local part (before the @)' };
  }
  const domainProblem = checkDomain(domain);
  if (domainProblem) return { ok: false, reason: domainProblem };
  return { ok: true, value: { name, address: `${local}@${domain}`, local, domain } };
}

/**
 * A local part in the form RFC 5322 §3.4.1 prefers: a quoted string is the atom, semantically (§3.2.4),
 * so `"ada"` is `ada` (and nodemailer puts `ada` in RCPT TO); one that needs its quotes keeps them,
 * with only the escapes it needs (`"a\ b"` → `"a b"`).
 */
export function preferredLocalPart(local: string): string {
  if (!QUOTED_LOCAL.test(local)) return local;
  const content = local.slice(1, -1).replace(/\\(.)/g, '$1');
  return DOT_ATOM_LOCAL.test(content) ? content : `"${content.replace(/["\\]/g, '\\$&')}"`;
}

function parseDisplayName(raw: string): { ok: true; name: string } | { ok: false; reason: string } {
  if (raw.length > LIMITS.maxDisplayNameLength) {
    return { ok: false, reason: `has a display name longer than ${LIMITS.maxDisplayNameLength} characters` };
  }
  if (raw.startsWith('"')) {
    if (raw.length < 2 || !raw.endsWith('"'))
      return { ok: false, reason: 'has an unterminated quoted display name' };
    const inner = raw.slice(1, -1);
    let name = '';
    for (let i = 0; i < inner.length; i++) {
      const char = inner[i];
      if (char === '\\') {
        const next = inner[i + 1];
        if (next === undefined) return { ok: false, reason: 'has a display name ending in a backslash' };
        name += next;
        i++;
      } else if (char === '"') {
        return { ok: false, reason: 'has an unescaped quote in its display name' };
      } else {
        name += char;
      }
    }
    return { ok: true, name };
  }
  if (DISPLAY_NAME_SPECIALS.test(raw)) {
    return { ok: false, reason: 'has special characters in its display name: put the name in double quotes' };
  }
  return { ok: true, name: raw };
}

/** Printable ASCII only (a parsed domain has no spaces or control characters): no IDNA to apply. */
const PRINTABLE_ASCII = /^[!-~]*$/;

function checkDomain(domain: string): string | null {
  if (domain.length > 253) return 'has a domain longer than 253 characters';
  const labels = domain.split('.');
  if (labels.length < 2) return 'must have a domain with at least two labels (example.com)';
  if (!labels.every((label) => DOMAIN_LABEL.test(label))) return 'has an invalid domain (after the @)';
  const tld = labels[labels.length - 1] ?? '';
  if (/^\d+$/.test(tld)) return 'has an invalid domain (a numeric top-level label)';
  // An internationalised domain goes into RCPT TO as A-labels (asciiDomain, the mailer's reading):
  // one IDNA refuses would reach the relay in UTF-8, and an A-label over 63 octets no DNS holds.
  if (PRINTABLE_ASCII.test(domain)) return null;
  const ascii = domainToASCII(domain);
  if (ascii === '') return 'has an internationalised domain that IDNA refuses (no ASCII form to send it to)';
  if (!isDomainName(ascii))
    return 'has an internationalised domain whose ASCII form (A-labels) is no domain name: at most 63 characters a label, 253 in all';
  return null;
}

const HOST_LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const HOST_NAME = new RegExp(`^${HOST_LABEL}(?:\\.${HOST_LABEL})*$`);

/**
 * A domain as the envelope carries it (the mailer puts A-labels into MAIL FROM and RCPT TO), and so
 * as a relay and the suppression list know it: lower-cased, and one written with any non-ASCII
 * letter in its ASCII form (UTS #46 mapping, as node:url and the mailer read it: `ſ` and fullwidth
 * letters are ASCII ones). An ASCII domain is only lower-cased, as before decision 0153 (so no
 * stored suppression key changes, and `0x7f.1` is not read as an IPv4 address). One that IDNA
 * refuses stays as written, lower-cased: the relay could not be given it either.
 */
export function asciiDomain(domain: string): string {
  if (PRINTABLE_ASCII.test(domain)) return domain.toLowerCase();
  return (domainToASCII(domain) || domain).toLowerCase();
}

/**
 * Whether `text` is an ASCII domain or host name (letters, digits, inner dashes; or an IPv4 address):
 * the rule of POSTDATE_MESSAGE_ID_DOMAIN, for the functions and the construct alike.
 */
export function isDomainName(text: string): boolean {
  return text.length <= 253 && HOST_NAME.test(text);
}

/**
 * Whether `text` names a host a relay can be reached at: a domain name, or an IPv4 or IPv6 address
 * (`::1`, as nodemailer connects to it): the rule of SMTP_HOST and each relay's `host`.
 */
export function isHostName(text: string): boolean {
  return isDomainName(text) || isIPv6Address(text);
}

/** An IPv6 address as text (`::1`, `2001:db8::25`, `::ffff:192.0.2.1`), by the WHATWG URL parser's rule. */
function isIPv6Address(text: string): boolean {
  if (!/^[0-9A-Fa-f:.]+$/.test(text) || !text.includes(':')) return false;
  return URL.canParse(`http://[${text}]/`);
}

/**
 * Whether a sender is allowed by POSTDATE_ALLOWED_FROM patterns (already lower-cased by the
 * config): `*` allows all, `*@domain` a whole domain, anything else one exact address.
 * Compared case-insensitively.
 */
export function isAllowedSender(address: string, patterns: readonly string[]): boolean {
  const lower = address.toLowerCase();
  const domain = lower.slice(lower.lastIndexOf('@') + 1);
  return patterns.some((raw) => {
    const pattern = raw.toLowerCase();
    if (pattern === '*') return true;
    if (pattern.startsWith('*@')) return pattern.slice(2) === domain;
    return pattern === lower;
  });
}

/**
 * Whether a `from` as a message stores it (`ops@example.com` or `Ops <ops@example.com>`) is allowed
 * by POSTDATE_ALLOWED_FROM patterns: its address is ({@link isAllowedSender}); one that does not
 * parse is allowed by none.
 */
export function isAllowedFrom(from: string, patterns: readonly string[]): boolean {
  const parsed = parseAddress(from);
  return parsed.ok && isAllowedSender(parsed.value.address, patterns);
}
