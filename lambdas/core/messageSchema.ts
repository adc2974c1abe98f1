/**
 * The request schemas of the HTTP API (DESIGN §3) as zod 4 schemas, and the parsers that turn an
 * untrusted JSON body into a canonical, validated request or a problem naming every bad field.
 *
 * The same zod schemas validate requests and generate the OpenAPI document (lambdas/api/openapi.ts).
 * Rules that need configuration or the clock (allowed senders, the horizon, "a past send_at means
 * now", `not_after` after the effective `send_at`) run after the structural parse, in
 * `parseEnqueueRequest`. Nothing here throws on any input, and no error message echoes a value
 * (problems are logged, and values may be addresses).
 *
 * Pure: no AWS SDK, no network, the clock is an argument.
 */
import { type ZodError, z } from 'zod';
import { type FieldError, jsonPointer, type ProblemDetails, validationProblem } from './problem.js';
import { isRelayControlHeader, RELAY_CONTROL_HEADERS, RELAY_CONTROL_MESSAGE } from './relayControlHeaders.js';

// ─── Limits (docs/api.md, "Limits") ──────────────────────────────────────────────────────────────

export const LIMITS = {
  /** Recipients in to + cc + bcc together. */
  maxRecipients: 50,
  /** One address with its display name. */
  maxAddressLength: 320,
  maxDisplayNameLength: 200,
  /** RFC 5322's line limit; the subject is folded by the mailer but never longer than one line's worth. */
  maxSubjectLength: 998,
  maxHeaders: 50,
  maxHeaderNameLength: 100,
  maxHeaderValueLength: 998,
  maxTags: 10,
  maxTagKeyLength: 64,
  maxTagValueLength: 128,
  maxMetadataEntries: 20,
  maxMetadataKeyLength: 64,
  maxMetadataValueLength: 512,
  /** tags + metadata as JSON, UTF-8: they live on the small state record that is written 3+ times. */
  maxTagsAndMetadataBytes: 2048,
  maxGroupKeyLength: 200,
  /** The whole request body (HTTP: 413 above it). */
  maxBodyBytes: 256 * 1024,
} as const;

// ─── Header-injection guards ─────────────────────────────────────────────────────────────────────

const CR_OR_LF = /[\r\n]/;
/** Every control character (C0, DEL, C1) but TAB: never allowed in a subject or header value. */
const CONTROL_EXCEPT_TAB = /(?!\t)\p{Cc}/u;
/** Every control character (C0, DEL, C1): never allowed in an address, a header name, a tag or a group key. */
const ANY_CONTROL = /\p{Cc}/u;

const CRLF_MESSAGE = 'must not contain CR or LF (header injection)';

/** The message for header material, or null when it is clean. CR/LF is named specifically. */
function controlCharacterProblem(value: string, allowTab: boolean): string | null {
  if (CR_OR_LF.test(value)) return CRLF_MESSAGE;
  if ((allowTab ? CONTROL_EXCEPT_TAB : ANY_CONTROL).test(value)) return 'must not contain control characters';
  return null;
}

// ─── Addresses (RFC 5322 mailbox: addr-spec or display-name <addr-spec>) ─────────────────────────

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

function checkDomain(domain: string): string | null {
  if (domain.length > 253) return 'has a domain longer than 253 characters';
  const labels = domain.split('.');
  if (labels.length < 2) return 'must have a domain with at least two labels (example.com)';
  if (!labels.every((label) => DOMAIN_LABEL.test(label))) return 'has an invalid domain (after the @)';
  const tld = labels[labels.length - 1] ?? '';
  if (/^\d+$/.test(tld)) return 'has an invalid domain (a numeric top-level label)';
  return null;
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

// ─── Headers ─────────────────────────────────────────────────────────────────────────────────────

/** RFC 9110 token: what a header name may be (and a subset of RFC 5322 field names). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Headers Postdate writes itself; a request may not set them (compared case-insensitively). */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'message-id',
  'x-postdate-id',
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'date',
  'reply-to',
  'sender',
  'return-path',
  'mime-version',
]);

function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_HEADERS.has(lower) || lower.startsWith('content-');
}

export { RELAY_CONTROL_HEADERS, RELAY_CONTROL_MESSAGE } from './relayControlHeaders.js';

// ─── Time ────────────────────────────────────────────────────────────────────────────────────────

const ISO_WITH_ZONE =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-](\d{2}):(\d{2}))$/i;

/** Parses an ISO-8601 date-time that carries a zone (`Z` or `±hh:mm`); null if invalid or impossible. */
export function parseZonedTimestamp(value: string): Date | null {
  const match = ISO_WITH_ZONE.exec(value);
  if (!match) return null;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(match[i] ?? '0')) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day > daysInMonth) return null;
  if (match[9] !== undefined && (Number(match[9]) > 23 || Number(match[10]) > 59)) return null;
  const time = Date.parse(value.toUpperCase());
  return Number.isFinite(time) ? new Date(time) : null;
}

const SECONDS_PER_DAY = 86_400;

// ─── The zod schemas (also the OpenAPI schemas) ─────────────────────────────────────────────────

const Address = z
  .string()
  .superRefine((value, ctx) => {
    const parsed = parseAddress(value);
    if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.reason });
  })
  .meta({
    description: 'An RFC 5322 mailbox: `ada@example.com` or `Ada Lovelace <ada@example.com>`.',
    example: 'Ada Lovelace <ada@example.com>',
  });

const RecipientList = z
  .array(Address)
  .max(LIMITS.maxRecipients, `must have at most ${LIMITS.maxRecipients} recipients`)
  .nullish();

const Subject = z
  .string()
  .min(1, 'must not be empty')
  .max(LIMITS.maxSubjectLength, `must be at most ${LIMITS.maxSubjectLength} characters`)
  .superRefine((value, ctx) => {
    const problem = controlCharacterProblem(value, true);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

const Headers = z
  .record(z.string(), z.string())
  .superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > LIMITS.maxHeaders) {
      ctx.addIssue({ code: 'custom', message: `must have at most ${LIMITS.maxHeaders} headers` });
      return;
    }
    const seen = new Set<string>();
    for (const name of names) {
      const issue = (message: string) => ctx.addIssue({ code: 'custom', message, path: [name] });
      const control = controlCharacterProblem(name, false);
      if (control) issue(`header name ${control}`);
      else if (name.length > LIMITS.maxHeaderNameLength || !HEADER_NAME.test(name))
        issue(
          `header name must be a token (letters, digits, !#$%&'*+-.^_\`|~) of at most ${LIMITS.maxHeaderNameLength} characters`,
        );
      else if (isReservedHeader(name)) issue('header is set by Postdate and may not be given');
      else if (isRelayControlHeader(name)) issue(RELAY_CONTROL_MESSAGE);
      else if (seen.has(name.toLowerCase())) issue('header is given twice (names are case-insensitive)');
      else {
        const value = headers[name] ?? '';
        const valueProblem = controlCharacterProblem(value, true);
        if (valueProblem) issue(`header value ${valueProblem}`);
        else if (value.length > LIMITS.maxHeaderValueLength)
          issue(`header value must be at most ${LIMITS.maxHeaderValueLength} characters`);
      }
      seen.add(name.toLowerCase());
    }
  })
  .meta({
    description: `Extra headers. Names are RFC 9110 tokens; Message-ID, X-Postdate-Id, From, To, Cc, Bcc, Subject, Date, Reply-To, Sender, Return-Path, MIME-Version and Content-* are reserved. Headers that control a relay instead of describing the message are refused (400, \`${RELAY_CONTROL_MESSAGE}\`): ${[...RELAY_CONTROL_HEADERS.names, ...RELAY_CONTROL_HEADERS.prefixes.map((prefix) => `${prefix}*`)].join(', ')} (Amazon SES, SendGrid, Mailgun, Postmark, Mandrill, SparkPost, Mailjet); a configuration set belongs to the API key.`,
    example: { 'X-Campaign': '42' },
  });

const Timestamp = z
  .string()
  .superRefine((value, ctx) => {
    if (parseZonedTimestamp(value) === null) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be an ISO-8601 date-time with a zone, e.g. 2026-12-01T09:00:00Z',
      });
    }
  })
  .meta({ format: 'date-time', example: '2026-12-01T09:00:00Z' });

const stringMap = (options: {
  entries: number;
  keyLength: number;
  valueLength: number;
  headerMaterial: boolean;
}) =>
  z.record(z.string(), z.string()).superRefine((map, ctx) => {
    const keys = Object.keys(map);
    if (keys.length > options.entries) {
      ctx.addIssue({ code: 'custom', message: `must have at most ${options.entries} entries` });
      return;
    }
    for (const key of keys) {
      const issue = (message: string) => ctx.addIssue({ code: 'custom', message, path: [key] });
      const value = map[key] ?? '';
      const keyControl = controlCharacterProblem(key, false);
      if (keyControl) issue(`key ${keyControl}`);
      else if (key.length < 1 || key.length > options.keyLength)
        issue(`key must be 1–${options.keyLength} characters`);
      else if (options.headerMaterial && controlCharacterProblem(value, false))
        issue(`value ${controlCharacterProblem(value, false) ?? ''}`);
      else if (value.length > options.valueLength)
        issue(`value must be at most ${options.valueLength} characters`);
    }
  });

const Tags = stringMap({
  entries: LIMITS.maxTags,
  keyLength: LIMITS.maxTagKeyLength,
  valueLength: LIMITS.maxTagValueLength,
  headerMaterial: true,
}).meta({ description: 'Small labels for listing and metrics.', example: { kind: 'campaign-approved' } });

const Metadata = stringMap({
  entries: LIMITS.maxMetadataEntries,
  keyLength: LIMITS.maxMetadataKeyLength,
  valueLength: LIMITS.maxMetadataValueLength,
  headerMaterial: false,
}).meta({ description: 'Your own small string data, returned as given.', example: { campaign_id: '42' } });

/** A group key: 1–200 characters, no control characters (it is also a URL path segment). */
export const GroupKeySchema = z
  .string()
  .superRefine((value, ctx) => {
    const length = [...value].length;
    const control = controlCharacterProblem(value, false);
    if (control) ctx.addIssue({ code: 'custom', message: control });
    else if (length < 1 || length > LIMITS.maxGroupKeyLength || value.trim() !== value || value.trim() === '')
      ctx.addIssue({
        code: 'custom',
        message: `must be 1–${LIMITS.maxGroupKeyLength} printable characters without leading or trailing spaces`,
      });
  })
  .meta({ example: 'campaign:42:status' });

const GroupVersion = z
  .int('must be a whole number')
  .min(0, 'must be at least 0')
  .max(Number.MAX_SAFE_INTEGER, 'must be a safe integer');

const Group = z.strictObject({ key: GroupKeySchema, version: GroupVersion }).meta({
  id: 'Group',
  description: 'Freshness guard: the message is not sent once a higher version of its group exists.',
});

export const EnqueueBodySchema = z
  .strictObject({
    to: RecipientList,
    cc: RecipientList,
    bcc: RecipientList,
    from: Address.nullish().meta({
      description: 'Defaults to POSTDATE_DEFAULT_FROM; must match POSTDATE_ALLOWED_FROM.',
    }),
    reply_to: Address.nullish(),
    subject: Subject,
    text: z.string().nullish(),
    html: z.string().nullish(),
    headers: Headers.nullish(),
    send_at: Timestamp.nullish().meta({
      description: 'When to send; a past time means now. At most POSTDATE_MAX_HORIZON_DAYS ahead.',
    }),
    delay_seconds: z.int('must be a whole number of seconds').min(0, 'must be at least 0').nullish(),
    not_after: Timestamp.nullish().meta({ description: 'Deadline: past it the message expires unsent.' }),
    group: Group.nullish(),
    on_ambiguous: z.enum(['retry', 'hold']).nullish(),
    tags: Tags.nullish(),
    metadata: Metadata.nullish(),
  })
  .superRefine((body, ctx) => {
    const recipients = (body.to?.length ?? 0) + (body.cc?.length ?? 0) + (body.bcc?.length ?? 0);
    if (recipients === 0)
      ctx.addIssue({
        code: 'custom',
        message: 'at least one recipient (to, cc or bcc) is required',
        path: ['to'],
      });
    if (recipients > LIMITS.maxRecipients)
      ctx.addIssue({
        code: 'custom',
        message: `at most ${LIMITS.maxRecipients} recipients in to, cc and bcc together`,
        path: ['to'],
      });
    if (!body.text && !body.html)
      ctx.addIssue({ code: 'custom', message: 'text or html is required', path: ['text'] });
    if (body.send_at != null && body.delay_seconds != null)
      ctx.addIssue({
        code: 'custom',
        message: 'give send_at or delay_seconds, not both',
        path: ['delay_seconds'],
      });
    const labels = JSON.stringify({ tags: body.tags ?? {}, metadata: body.metadata ?? {} });
    if (new TextEncoder().encode(labels).length > LIMITS.maxTagsAndMetadataBytes)
      ctx.addIssue({
        code: 'custom',
        message: `tags and metadata together must be at most ${LIMITS.maxTagsAndMetadataBytes} bytes of JSON`,
        path: ['metadata'],
      });
  })
  .meta({ id: 'EnqueueRequest', description: 'An email to send later (DESIGN §3).' });

export const RescheduleBodySchema = z
  .strictObject({ send_at: Timestamp })
  .meta({ id: 'RescheduleRequest', description: 'A new send time for a scheduled message.' });

export const GroupVersionBodySchema = z
  .strictObject({ version: GroupVersion })
  .meta({ id: 'GroupVersionRequest', description: "Raise a group's version without sending anything." });

// ─── The canonical requests ─────────────────────────────────────────────────────────────────────

export interface GroupRef {
  readonly key: string;
  readonly version: number;
}

/** A validated enqueue request, normalized (defaults applied, times in ISO-8601 UTC with ms). */
export interface EnqueueRequest {
  readonly to: readonly string[];
  readonly cc: readonly string[];
  readonly bcc: readonly string[];
  readonly from: string;
  readonly reply_to: string | null;
  readonly subject: string;
  readonly text: string | null;
  readonly html: string | null;
  readonly headers: Readonly<Record<string, string>>;
  /** The `send_at` the client asked for (normalized), or null. Part of the fingerprint. */
  readonly requested_send_at: string | null;
  /** The `delay_seconds` the client asked for, or null. Part of the fingerprint. */
  readonly delay_seconds: number | null;
  /** The effective send time, resolved against the clock: never in the past. NOT part of the fingerprint. */
  readonly send_at: string;
  readonly not_after: string | null;
  readonly group: GroupRef | null;
  readonly on_ambiguous: 'retry' | 'hold';
  readonly tags: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, string>>;
}

export interface EnqueueContext {
  readonly now: Date;
  /** POSTDATE_ALLOWED_FROM patterns. */
  readonly allowedFrom: readonly string[];
  /** POSTDATE_DEFAULT_FROM. */
  readonly defaultFrom: string;
  /** POSTDATE_MAX_HORIZON_DAYS. */
  readonly maxHorizonDays: number;
}

export type Parsed<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly problem: ProblemDetails };

/**
 * What an idempotency fingerprint covers: the canonical request without the effective send time,
 * which depends on the clock (a replay a second later must still match).
 */
export function fingerprintSource(request: EnqueueRequest): Omit<EnqueueRequest, 'send_at'> {
  const { send_at: _effective, ...rest } = request;
  return rest;
}

/** Validates an enqueue body against every rule of DESIGN §3. Never throws. */
export function parseEnqueueRequest(body: unknown, ctx: EnqueueContext): Parsed<EnqueueRequest> {
  return guarded(() => {
    const parsed = EnqueueBodySchema.safeParse(body, PARSE_CONTEXT);
    const hidden = [...prototypeKeyErrors(body), ...illFormedStringErrors(body)];
    if (!parsed.success || hidden.length > 0) {
      const errors = parsed.success ? hidden : [...zodErrors(parsed.error), ...hidden];
      return { ok: false, problem: validationProblem(errors) };
    }
    const input = parsed.data;
    const errors: FieldError[] = [];
    const nowMs = ctx.now.getTime();
    const horizonMs = nowMs + ctx.maxHorizonDays * SECONDS_PER_DAY * 1000;

    const from = input.from?.trim() || ctx.defaultFrom;
    const fromAddress = parseAddress(from);
    if (!fromAddress.ok) errors.push({ field: '/from', message: fromAddress.reason });
    else if (!isAllowedSender(fromAddress.value.address, ctx.allowedFrom))
      errors.push({ field: '/from', message: 'is not an allowed sender (POSTDATE_ALLOWED_FROM)' });

    let requestedSendAt: string | null = null;
    let sendAtMs = nowMs;
    if (input.send_at != null) {
      const at = parseZonedTimestamp(input.send_at);
      if (at) {
        requestedSendAt = at.toISOString();
        sendAtMs = Math.max(nowMs, at.getTime());
        if (at.getTime() > horizonMs)
          errors.push({ field: '/send_at', message: `must be at most ${ctx.maxHorizonDays} days ahead` });
      }
    } else if (input.delay_seconds != null) {
      sendAtMs = nowMs + input.delay_seconds * 1000;
      if (sendAtMs > horizonMs)
        errors.push({ field: '/delay_seconds', message: `must be at most ${ctx.maxHorizonDays} days` });
    }

    let notAfter: string | null = null;
    if (input.not_after != null) {
      const deadline = parseZonedTimestamp(input.not_after);
      if (deadline) {
        notAfter = deadline.toISOString();
        if (deadline.getTime() <= sendAtMs)
          errors.push({ field: '/not_after', message: 'must be after send_at (and in the future)' });
      }
    }
    if (errors.length > 0) return { ok: false, problem: validationProblem(errors) };

    return {
      ok: true,
      value: {
        to: trimAll(input.to),
        cc: trimAll(input.cc),
        bcc: trimAll(input.bcc),
        from,
        reply_to: input.reply_to?.trim() || null,
        subject: input.subject,
        text: input.text || null,
        html: input.html || null,
        headers: { ...input.headers },
        requested_send_at: requestedSendAt,
        delay_seconds: input.send_at == null ? (input.delay_seconds ?? null) : null,
        send_at: new Date(sendAtMs).toISOString(),
        not_after: notAfter,
        group: input.group ? { key: input.group.key, version: input.group.version } : null,
        on_ambiguous: input.on_ambiguous ?? 'retry',
        tags: { ...input.tags },
        metadata: { ...input.metadata },
      },
    };
  });
}

export interface RescheduleRequest {
  /** The effective new send time (a past time means now), ISO-8601 UTC with ms. */
  readonly send_at: string;
}

/** Validates a reschedule body `{ send_at }`. Never throws. */
export function parseRescheduleRequest(
  body: unknown,
  ctx: { readonly now: Date; readonly maxHorizonDays: number },
): Parsed<RescheduleRequest> {
  return guarded(() => {
    const parsed = RescheduleBodySchema.safeParse(body, PARSE_CONTEXT);
    if (!parsed.success) return { ok: false, problem: validationProblem(zodErrors(parsed.error)) };
    const at = parseZonedTimestamp(parsed.data.send_at);
    if (!at) return { ok: false, problem: validationProblem([{ field: '/send_at', message: 'is invalid' }]) };
    const nowMs = ctx.now.getTime();
    if (at.getTime() > nowMs + ctx.maxHorizonDays * SECONDS_PER_DAY * 1000) {
      return {
        ok: false,
        problem: validationProblem([
          { field: '/send_at', message: `must be at most ${ctx.maxHorizonDays} days ahead` },
        ]),
      };
    }
    return { ok: true, value: { send_at: new Date(Math.max(nowMs, at.getTime())).toISOString() } };
  });
}

export interface GroupVersionRequest {
  readonly version: number;
}

/** Validates a group version body `{ version }`. Never throws. */
export function parseGroupVersionRequest(body: unknown): Parsed<GroupVersionRequest> {
  return guarded(() => {
    const parsed = GroupVersionBodySchema.safeParse(body, PARSE_CONTEXT);
    if (!parsed.success) return { ok: false, problem: validationProblem(zodErrors(parsed.error)) };
    return { ok: true, value: { version: parsed.data.version } };
  });
}

/** Validates a group key taken from a URL path. Never throws. */
export function parseGroupKey(key: string): Parsed<string> {
  return guarded(() => {
    const parsed = GroupKeySchema.safeParse(key, PARSE_CONTEXT);
    if (!parsed.success) {
      return {
        ok: false,
        problem: validationProblem([
          { field: 'key', message: parsed.error.issues[0]?.message ?? 'is invalid' },
        ]),
      };
    }
    return { ok: true, value: parsed.data };
  });
}

// ─── Internals ──────────────────────────────────────────────────────────────────────────────────

/**
 * `{"headers": {"__proto__": "x"}}` parses to an own `__proto__` key that a record copy silently
 * drops; a dropped header must be an error, not a surprise.
 */
function prototypeKeyErrors(body: unknown): FieldError[] {
  if (typeof body !== 'object' || body === null) return [];
  const errors: FieldError[] = [];
  for (const field of ['headers', 'tags', 'metadata'] as const) {
    const map = (body as Record<string, unknown>)[field];
    if (typeof map === 'object' && map !== null && Object.hasOwn(map, '__proto__')) {
      errors.push({ field: jsonPointer([field, '__proto__']), message: 'is not an allowed name' });
    }
  }
  return errors;
}

/** A UTF-16 surrogate without its pair: valid in JSON (`"\\ud800"`), not Unicode, refused by DynamoDB. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MAX_WALK_DEPTH = 8;

/** Every string (value or name) in the body that is not well-formed Unicode, by its JSON Pointer. */
function illFormedStringErrors(body: unknown, path: (string | number)[] = []): FieldError[] {
  if (typeof body === 'string') {
    return LONE_SURROGATE.test(body)
      ? [{ field: jsonPointer(path), message: 'must be well-formed Unicode' }]
      : [];
  }
  if (typeof body !== 'object' || body === null || path.length >= MAX_WALK_DEPTH) return [];
  const entries: [string | number, unknown][] = Array.isArray(body)
    ? body.map((item, index): [number, unknown] => [index, item])
    : Object.entries(body);
  return entries.flatMap(([name, value]) =>
    typeof name === 'string' && LONE_SURROGATE.test(name)
      ? [{ field: jsonPointer(path), message: 'has a field name that is not well-formed Unicode' }]
      : illFormedStringErrors(value, [...path, name]),
  );
}

function trimAll(list: readonly string[] | null | undefined): string[] {
  return (list ?? []).map((address) => address.trim());
}

function guarded<T>(parse: () => Parsed<T>): Parsed<T> {
  try {
    return parse();
  } catch {
    // Defensive: zod does not throw on data, but a hostile value (a getter, a proxy) could.
    return { ok: false, problem: validationProblem([{ field: 'body', message: 'could not be read' }]) };
  }
}

/**
 * Issues carry the value they judged, so a missing field is told by `input === undefined` rather than
 * by zod's message text (which changed between major versions). The values never leave zodErrors.
 */
const PARSE_CONTEXT = { reportInput: true } as const;

/** One FieldError per zod issue, the field as a JSON Pointer; values are never echoed. */
export function zodErrors(error: ZodError): FieldError[] {
  const errors: FieldError[] = [];
  for (const issue of error.issues) {
    const path = issue.path.filter((segment): segment is string | number => typeof segment !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        errors.push({ field: jsonPointer([...path, key]), message: 'is not a known field' });
      continue;
    }
    errors.push({ field: jsonPointer(path), message: issueMessage(issue) });
  }
  return errors;
}

function issueMessage(issue: ZodError['issues'][number]): string {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return 'is required';
    if (issue.expected === 'object' && issue.path.length === 0) return 'must be a JSON object';
    if (issue.expected === 'int') return 'must be a whole number';
    return `must be ${issue.expected === 'array' || issue.expected === 'object' ? 'an' : 'a'} ${issue.expected}`;
  }
  if (issue.code === 'invalid_value')
    return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  return issue.message;
}
