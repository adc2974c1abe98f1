/**
 * The message requests (DESIGN §3), and the public entry of their validation for the API, the
 * outbox helper and applications (docs/api.md, "The transactional outbox"): the request bodies as
 * zod schemas (which also generate the OpenAPI document), the validations of an enqueue, a
 * reschedule and a group's version, and the parsers that turn an untrusted JSON body into a
 * canonical, validated request or a 400 problem naming every bad field. Nothing here throws on any
 * input, and no error message echoes a value (problems are logged, and values may be addresses).
 *
 * The rules it uses live in rooms of their own: requestLimits.ts (the limits), addresses.ts
 * (mailboxes and allowed senders), timestamps.ts (zoned date-times and the horizon), headerSafety.ts
 * (CR/LF, control characters, reserved and relay-control headers), templateRequests.ts (a template
 * and its data), localTime.ts (local times and quiet hours; their fields' schemas are here),
 * requestSchemas.ts (the attachments' schemas), problem.ts (field errors and the problem document).
 * Of the functions only the api loads it, and zod with it (decision 0131).
 *
 * Pure: no AWS SDK, no network, the clock is an argument.
 */
import * as z from 'zod';
import { isAllowedSender, parseAddress } from './addresses.js';
import { type RequestedAttachment, requestedAttachments } from './attachments.js';
import { fingerprint } from './fingerprint.js';
import {
  controlCharacterProblem,
  headerNameProblem,
  headerValueProblem,
  RELAY_CONTROL_HEADERS,
  RELAY_CONTROL_MESSAGE,
  tagValueProblem,
} from './headerSafety.js';
import {
  formatLocalDateTime,
  HH_MM,
  HH_MM_MESSAGE,
  isTimeZone,
  isTimeZoneAsSpelled,
  MAX_ZONE_LENGTH,
  parseSendAtLocal,
  type QuietHours,
  SAME_START_AND_END_MESSAGE,
  TIME_ZONE_MESSAGE,
  zonedInstant,
} from './localTime.js';
import {
  type FieldError,
  guarded,
  illFormedStringErrors,
  PARSE_CONTEXT,
  type ProblemDetails,
  prototypeKeyErrors,
  type Validated,
  validationProblem,
  zodErrors,
} from './problem.js';
import { bodySizeProblem, LIMITS } from './requestLimits.js';
import { AttachmentsSchema } from './requestSchemas.js';
import { rawData, TemplateDataSchema, TemplateRefSchema, templateDataErrors } from './templateRequests.js';
import { isSimulatorDomain, SIMULATOR_DOMAIN, TEST_KEY_PREFIX } from './testSide.js';
import { horizonEndMs, parseZonedTimestamp } from './timestamps.js';

export { type AddressParse, isAllowedSender, type ParsedAddress, parseAddress } from './addresses.js';
export { RELAY_CONTROL_HEADERS, RELAY_CONTROL_MESSAGE, RESERVED_HEADERS } from './headerSafety.js';
export { zodErrors } from './problem.js';
export { LIMITS } from './requestLimits.js';
export { parseZonedTimestamp } from './timestamps.js';

export type Parsed<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly problem: ProblemDetails };

declare const PARSED: unique symbol;

/**
 * An enqueue request as {@link parseEnqueueRequest} returned it: validated against every rule of
 * DESIGN §3 and frozen. The public outbox helper's `request` takes no other (decision 0165), so an
 * application cannot hand it an object it built, or changed, past the rules.
 */
export type ParsedEnqueueRequest = EnqueueRequest & { readonly [PARSED]: true };

/** The requests parseEnqueueRequest returned, as the helper checks them at run time (past the type). */
const parsedRequests = new WeakSet<object>();

/**
 * Validates an enqueue body against every rule of DESIGN §3, its size too (413 past 256 KiB, as the
 * API's body reader judges it). Never throws. The request it returns is frozen (its lists and maps
 * too, and a copy of `data`: the caller's object stays its own) and known to
 * {@link isParsedEnqueueRequest}.
 */
export function parseEnqueueRequest(body: unknown, ctx: EnqueueContext): Parsed<ParsedEnqueueRequest> {
  const oversized = sizeProblem(body);
  if (oversized) return { ok: false, problem: oversized };
  // The helper's messages are live (its tenants are): none may name the simulator (decision 0192).
  const validated = validateEnqueueRequest(body, ctx);
  const simulated = validated.ok ? simulatorRecipientErrors(validated.value) : [];
  const parsed = withProblem(simulated.length > 0 ? { ok: false, errors: simulated } : validated);
  if (!parsed.ok) return parsed;
  const request = frozen(parsed.value);
  parsedRequests.add(request);
  return { ok: true, value: request as ParsedEnqueueRequest };
}

/** The API's 413 for a body over LIMITS.maxBodyBytes, first, as its body reader answers it. */
function sizeProblem(body: unknown): ProblemDetails | null {
  try {
    return bodySizeProblem(body, LIMITS.maxBodyBytes);
  } catch {
    // A body that cannot even be measured (a hostile getter) cannot be read: the validation's
    // `guarded` answers its 400.
    return null;
  }
}

/** Whether `value` is a request parseEnqueueRequest returned (and so validated and unchanged since). */
export function isParsedEnqueueRequest(value: unknown): value is ParsedEnqueueRequest {
  return typeof value === 'object' && value !== null && parsedRequests.has(value);
}

function frozen(validated: EnqueueRequest): EnqueueRequest {
  // `data` is the caller's object (rawData): what was validated is a copy of it, as JSON (what the
  // records store), frozen to its leaves, so a change to the caller's object afterwards reaches no
  // record unchecked. Validated data is JSON already (finite numbers, bounded depth and size).
  const request: EnqueueRequest =
    validated.data == null
      ? validated
      : {
          ...validated,
          data: deepFrozen(JSON.parse(JSON.stringify(validated.data)) as Record<string, unknown>),
        };
  for (const part of [
    request.to,
    request.cc,
    request.bcc,
    request.headers,
    request.tags,
    request.metadata,
    request.group,
    request.template,
    request.quiet_hours,
    ...(request.attachments ?? []),
    request.attachments,
  ])
    if (part != null) Object.freeze(part);
  return Object.freeze(request);
}

function deepFrozen<T extends object>(value: T): Readonly<T> {
  for (const item of Object.values(value))
    if (typeof item === 'object' && item !== null) deepFrozen(item as object);
  return Object.freeze(value);
}

/** Validates a reschedule body `{ send_at }`. Never throws. */
export function parseRescheduleRequest(
  body: unknown,
  ctx: { readonly now: Date; readonly maxHorizonDays: number },
): Parsed<RescheduleRequest> {
  return withProblem(validateRescheduleRequest(body, ctx));
}

/** Validates a group version body `{ version }`. Never throws. */
export function parseGroupVersionRequest(body: unknown): Parsed<GroupVersionRequest> {
  return withProblem(validateGroupVersionRequest(body));
}

/** Validates a group key taken from a URL path. Never throws. */
export function parseGroupKey(key: string): Parsed<string> {
  return withProblem(validateGroupKey(key));
}

function withProblem<T>(validated: Validated<T>): Parsed<T> {
  return validated.ok ? validated : { ok: false, problem: validationProblem(validated.errors) };
}

// ─── The schemas

/**
 * The request bodies of DESIGN §3 as zod 4 schemas: structure, types, limits and the rules that need
 * neither configuration nor the clock. The same schemas generate the OpenAPI document
 * (lib/openapi/openApiDocument.ts), so what is documented is what is checked.
 */
/*
 * What the OpenAPI document can say of a rule that a refinement checks (JSON Schema patterns are
 * ECMA-262; the refinements stay the validation, these only describe it). Test:
 * test/api/openapiRequestSchemas.test.ts holds the document to what these schemas accept and refuse.
 */
/** No control character (C0, DEL, C1): addresses, tags, metadata keys, group keys. */
const NO_CONTROL_PATTERN = '^[^\\u0000-\\u001F\\u007F-\\u009F]*$';
/** No control character but TAB, so no CR or LF: the subject and header values. */
const NO_CONTROL_BUT_TAB_PATTERN = '^[^\\u0000-\\u0008\\u000A-\\u001F\\u007F-\\u009F]*$';
/** A recipient list with at least one address. */
const NON_EMPTY = (field: string) => ({
  required: [field],
  properties: { [field]: { type: 'array', minItems: 1 } },
});

const Address = z
  .string()
  .superRefine((value, ctx) => {
    const parsed = parseAddress(value);
    if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.reason });
  })
  .meta({
    description: 'An RFC 5322 mailbox: `ada@example.com` or `Ada Lovelace <ada@example.com>`.',
    example: 'Ada Lovelace <ada@example.com>',
    pattern: NO_CONTROL_PATTERN,
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
  })
  .meta({
    description: 'One line: no CR, LF or other control character but TAB.',
    pattern: NO_CONTROL_BUT_TAB_PATTERN,
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
      const duplicate = seen.has(name.toLowerCase())
        ? 'header is given twice (names are case-insensitive)'
        : null;
      const message = headerNameProblem(name) ?? duplicate ?? headerValueProblem(headers[name] ?? '');
      if (message) ctx.addIssue({ code: 'custom', message, path: [name] });
      seen.add(name.toLowerCase());
    }
  })
  .meta({
    description: `Extra headers. Names are RFC 9110 tokens; Message-ID, X-Postdate-Id, From, To, Cc, Bcc, Subject, Date, Reply-To, Sender, Return-Path, MIME-Version and Content-* are reserved. Headers that control a relay instead of describing the message are refused (400, \`${RELAY_CONTROL_MESSAGE}\`): ${[...RELAY_CONTROL_HEADERS.names, ...RELAY_CONTROL_HEADERS.prefixes.map((prefix) => `${prefix}*`)].join(', ')} (Amazon SES, SendGrid, Mailgun, Postmark, Mandrill, SparkPost, Mailjet); a configuration set belongs to the API key.`,
    example: { 'X-Campaign': '42' },
    maxProperties: LIMITS.maxHeaders,
    propertyNames: { pattern: "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$", maxLength: LIMITS.maxHeaderNameLength },
    additionalProperties: {
      type: 'string',
      maxLength: LIMITS.maxHeaderValueLength,
      pattern: NO_CONTROL_BUT_TAB_PATTERN,
    },
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
  /** Why a value may not be one of the map's, or null when it may. */
  valueProblem: (value: string) => string | null;
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
      else {
        const problem = options.valueProblem(value);
        if (problem) issue(problem);
      }
    }
  });

const Tags = stringMap({
  entries: LIMITS.maxTags,
  keyLength: LIMITS.maxTagKeyLength,
  valueProblem: tagValueProblem,
}).meta({
  description:
    'Small labels for listing and metrics. Neither a key nor a value may be `__proto__` (`tags.kind` keys a pause).',
  example: { kind: 'campaign-approved' },
  maxProperties: LIMITS.maxTags,
  propertyNames: { minLength: 1, maxLength: LIMITS.maxTagKeyLength, pattern: NO_CONTROL_PATTERN },
  additionalProperties: { type: 'string', maxLength: LIMITS.maxTagValueLength, pattern: NO_CONTROL_PATTERN },
});

const Metadata = stringMap({
  entries: LIMITS.maxMetadataEntries,
  keyLength: LIMITS.maxMetadataKeyLength,
  valueProblem: (value) =>
    value.length > LIMITS.maxMetadataValueLength
      ? `value must be at most ${LIMITS.maxMetadataValueLength} characters`
      : null,
}).meta({
  description: 'Your own small string data, returned as given.',
  example: { campaign_id: '42' },
  maxProperties: LIMITS.maxMetadataEntries,
  propertyNames: { minLength: 1, maxLength: LIMITS.maxMetadataKeyLength, pattern: NO_CONTROL_PATTERN },
  additionalProperties: { type: 'string', maxLength: LIMITS.maxMetadataValueLength },
});

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
  .meta({
    example: 'campaign:42:status',
    minLength: 1,
    maxLength: LIMITS.maxGroupKeyLength,
    pattern: '^(?!\\s)[^\\u0000-\\u001F\\u007F-\\u009F]*(?<!\\s)$',
  });

const GroupVersion = z
  .int('must be a whole number')
  .min(0, 'must be at least 0')
  .max(Number.MAX_SAFE_INTEGER, 'must be a safe integer');

const Group = z.strictObject({ key: GroupKeySchema, version: GroupVersion }).meta({
  id: 'Group',
  description: 'Freshness guard: the message is not sent once a higher version of its group exists.',
});

/*
 * Local time and quiet hours (docs/design.md §16): the three fields as the enqueue, batch item and
 * reschedule bodies carry them; their rules are localTime.ts's.
 */

/**
 * `time_zone`: a zone a record may hold ({@link isTimeZone}); a new message or a reschedule must spell
 * it as the tz database does ({@link spelledZoneErrors}), a replay of one stored before need not.
 */
const TimeZoneSchema = z
  .string()
  .superRefine((value, ctx) => {
    if (!isTimeZone(value)) ctx.addIssue({ code: 'custom', message: TIME_ZONE_MESSAGE });
  })
  .meta({
    description: 'An IANA time zone name, spelled as the tz database spells it.',
    example: 'Europe/Berlin',
    maxLength: MAX_ZONE_LENGTH,
  });

/** `send_at_local`: a wall-clock time without offset. */
const SendAtLocalSchema = z
  .string()
  .superRefine((value, ctx) => {
    const parsed = parseSendAtLocal(value);
    if (!parsed.ok)
      for (const error of parsed.errors) ctx.addIssue({ code: 'custom', message: error.message });
  })
  .meta({
    description:
      'A wall-clock time in time_zone, without offset. One that does not exist (a spring gap) moves forward by the gap; one that exists twice (an autumn overlap) is the earlier instant.',
    example: '2026-12-03T09:00',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2})?$',
  });

const TimeOfDay = z.string().regex(HH_MM, HH_MM_MESSAGE).meta({ example: '21:00' });

/** `quiet_hours`: `{start, end}` in time_zone, start ≠ end; the window may cross midnight. */
export const QuietHoursSchema = z
  .strictObject({ start: TimeOfDay, end: TimeOfDay.meta({ example: '08:00' }) })
  .superRefine((window, ctx) => {
    if (window.start === window.end)
      ctx.addIssue({ code: 'custom', message: SAME_START_AND_END_MESSAGE, path: ['end'] });
  })
  .meta({
    description:
      'A message that comes due inside [start, end) in time_zone waits until end (crossing midnight when end < start), unless not_after comes first; start must differ from end.',
  });

/**
 * A `time_zone` the API would store, spelled as the tz database spells it ({@link isTimeZoneAsSpelled},
 * decision 0259): a case variant `Intl` reads (`EUROPE/BERLIN`) is refused for a new message and a
 * reschedule, while a replay reads the request as a record admitted before may hold it (decision 0267).
 */
function spelledZoneErrors(body: unknown): FieldError[] {
  const timeZone =
    typeof body === 'object' && body !== null && 'time_zone' in body ? body.time_zone : undefined;
  return typeof timeZone !== 'string' || !isTimeZone(timeZone) || isTimeZoneAsSpelled(timeZone)
    ? []
    : [{ field: '/time_zone', message: TIME_ZONE_MESSAGE }];
}

/** The three fields, spread into each body that carries them. */
export const LOCAL_TIME_FIELDS = {
  send_at_local: SendAtLocalSchema.nullish(),
  time_zone: TimeZoneSchema.nullish(),
  quiet_hours: QuietHoursSchema.nullish(),
};

/** What the fields need of each other and of send_at / delay_seconds: call from the body's superRefine. */
export function localTimeRules(
  body: {
    readonly send_at?: string | null;
    readonly delay_seconds?: number | null;
    readonly send_at_local?: string | null;
    readonly time_zone?: string | null;
    readonly quiet_hours?: QuietHours | null;
  },
  ctx: z.RefinementCtx,
): void {
  const issue = (field: string, message: string) => ctx.addIssue({ code: 'custom', message, path: [field] });
  if (body.send_at_local != null && (body.send_at != null || body.delay_seconds != null))
    issue('send_at_local', 'give send_at_local instead of send_at or delay_seconds, not with them');
  if (body.time_zone == null) {
    if (body.send_at_local != null) issue('time_zone', 'is required with send_at_local');
    else if (body.quiet_hours != null) issue('time_zone', 'is required with quiet_hours');
  }
}

/** The fields every enqueue has, whatever its content: the addresses, then the rest. */
const enqueueAddresses = {
  to: RecipientList,
  cc: RecipientList,
  bcc: RecipientList,
  from: Address.nullish().meta({
    description: 'Defaults to POSTDATE_DEFAULT_FROM; must match POSTDATE_ALLOWED_FROM.',
  }),
  reply_to: Address.nullish(),
};

const enqueueDelivery = {
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
  attachments: AttachmentsSchema.nullish(),
  // Local time and quiet hours (docs/design.md §16 Local time and quiet hours).
  ...LOCAL_TIME_FIELDS,
};

/** The content of an inline message. */
const inlineContent = {
  subject: Subject,
  text: z.string().nullish(),
  html: z.string().nullish(),
};

/** The content of a template message (DESIGN §10): rendered at send time from the pinned version. */
const templateContent = {
  template: TemplateRefSchema,
  data: TemplateDataSchema.nullish().meta({ description: "The template's variables; default `{}`." }),
};

/** What one enqueue must satisfy whatever its form (recipients, times, label sizes). */
function envelopeRules(
  body: {
    to?: readonly string[] | null;
    cc?: readonly string[] | null;
    bcc?: readonly string[] | null;
    send_at?: string | null;
    delay_seconds?: number | null;
    send_at_local?: string | null;
    time_zone?: string | null;
    quiet_hours?: QuietHours | null;
    tags?: Readonly<Record<string, string>> | null;
    metadata?: Readonly<Record<string, string>> | null;
  },
  ctx: z.RefinementCtx,
): void {
  localTimeRules(body, ctx);
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
}

/**
 * The enqueue body as it is validated: one object with both forms' fields, so that every mistake
 * gets its own field error (a template and a subject together, a subject missing) rather than a
 * union's "matches neither". The OpenAPI document shows the two forms as EnqueueBodyDocumentSchema.
 */
export const EnqueueBodySchema = z
  .strictObject({
    ...enqueueAddresses,
    subject: Subject.nullish(),
    text: inlineContent.text,
    html: inlineContent.html,
    ...enqueueDelivery,
    template: TemplateRefSchema.nullish(),
    data: templateContent.data,
  })
  .superRefine((body, ctx) => {
    envelopeRules(body, ctx);
    if (body.template != null) {
      for (const field of ['subject', 'text', 'html'] as const) {
        if (body[field] != null)
          ctx.addIssue({
            code: 'custom',
            message: 'give a template or subject/text/html, not both',
            path: [field],
          });
      }
      return;
    }
    if (body.data != null)
      ctx.addIssue({ code: 'custom', message: 'is only given with a template', path: ['data'] });
    if (body.subject == null) ctx.addIssue({ code: 'custom', message: 'is required', path: ['subject'] });
    if (!body.text && !body.html)
      ctx.addIssue({ code: 'custom', message: 'text or html is required', path: ['text'] });
  })
  .meta({
    description: 'The enqueue body as validated; the OpenAPI document shows it as EnqueueBodyDocumentSchema.',
  });

/** A pair of fields that are never given together (a null counts as not given). */
const NOT_BOTH = (description: string, first: string, second: string) => ({
  description,
  not: {
    required: [first, second],
    properties: { [first]: { not: { type: 'null' } }, [second]: { not: { type: 'null' } } },
  },
});

/**
 * At most one way to give the send time, and the zone that local times need (docs/design.md §16
 * Local time and quiet hours): what JSON Schema can say of localTimeRules and the send_at rule.
 */
const ONE_SEND_TIME = [
  NOT_BOTH('send_at or delay_seconds, not both.', 'send_at', 'delay_seconds'),
  NOT_BOTH('send_at_local instead of send_at, not with it.', 'send_at_local', 'send_at'),
  NOT_BOTH('send_at_local instead of delay_seconds, not with it.', 'send_at_local', 'delay_seconds'),
  {
    description: 'send_at_local and quiet_hours need time_zone.',
    dependentSchemas: Object.fromEntries(
      ['send_at_local', 'quiet_hours'].map((field) => [
        field,
        {
          anyOf: [
            { properties: { [field]: { type: 'null' } } },
            { required: ['time_zone'], properties: { time_zone: { type: 'string' } } },
          ],
        },
      ]),
    ),
  },
];

/** What JSON Schema can say of every enqueue body (the document's `allOf` on each form). */
const ENVELOPE_RULES = [
  {
    description: 'At least one recipient (to, cc or bcc).',
    anyOf: [NON_EMPTY('to'), NON_EMPTY('cc'), NON_EMPTY('bcc')],
  },
  ...ONE_SEND_TIME,
];

const TEXT_OR_HTML = {
  description: 'text or html.',
  anyOf: ['text', 'html'].map((field) => ({
    required: [field],
    properties: { [field]: { type: 'string', minLength: 1 } },
  })),
};

const InlineEnqueueSchema = z
  .strictObject({ ...enqueueAddresses, ...inlineContent, ...enqueueDelivery })
  .meta({
    id: 'InlineEnqueueRequest',
    description: 'An email to send later with its content (DESIGN §3): `text` or `html` or both.',
    allOf: [...ENVELOPE_RULES, TEXT_OR_HTML],
  });

const TemplateEnqueueSchema = z
  .strictObject({ ...enqueueAddresses, ...templateContent, ...enqueueDelivery })
  .meta({
    id: 'TemplateEnqueueRequest',
    description: 'An email to send later, built at send time from a stored template and `data` (DESIGN §10).',
    allOf: ENVELOPE_RULES,
  });

/**
 * The enqueue body for the OpenAPI document: exactly one of the two forms (`oneOf`), built from the
 * same field schemas that EnqueueBodySchema validates with.
 */
export const EnqueueBodyDocumentSchema = z.union([InlineEnqueueSchema, TemplateEnqueueSchema]).meta({
  id: 'EnqueueRequest',
  description: `An email to send later (DESIGN §3): its content inline (\`subject\`, \`text\`, \`html\`), or a stored \`template\` and its \`data\` — not both. At most ${LIMITS.maxRecipients} recipients in to, cc and bcc together, and tags and metadata at most ${LIMITS.maxTagsAndMetadataBytes} bytes of JSON together: JSON Schema cannot say these, the server checks them.`,
  _internal: { unionPreferredType: 'oneOf', refId: 'EnqueueRequest' },
} as Record<string, unknown>);

export const RescheduleBodySchema = z
  .strictObject({ send_at: Timestamp.nullish(), ...LOCAL_TIME_FIELDS })
  .superRefine((body, ctx) => {
    localTimeRules(body, ctx);
    if (body.send_at == null && body.send_at_local == null)
      ctx.addIssue({ code: 'custom', message: 'give send_at or send_at_local', path: ['send_at'] });
  })
  .meta({
    id: 'RescheduleRequest',
    description:
      'A new send time for a scheduled message: `send_at`, or `send_at_local` with `time_zone` (docs/design.md §16). A `time_zone` given replaces the stored one (quiet hours are then read in it); `quiet_hours` given replaces the stored ones.',
    allOf: [
      {
        description: 'send_at or send_at_local.',
        anyOf: ['send_at', 'send_at_local'].map((field) => ({
          required: [field],
          properties: { [field]: { type: 'string' } },
        })),
      },
      ...ONE_SEND_TIME.slice(1),
    ],
  });

export const GroupVersionBodySchema = z
  .strictObject({ version: GroupVersion })
  .meta({ id: 'GroupVersionRequest', description: "Raise a group's version without sending anything." });

// ─── The enqueue request

/**
 * The enqueue request (DESIGN §3): the structural parse by the schema, then the rules that need
 * configuration or the clock (allowed senders, the horizon, "a past send_at means now", `not_after`
 * after the effective `send_at`). The answer is the canonical request or every bad field; nothing
 * here throws on any input.
 */
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
  /** The inline subject; '' for a template message, whose subject is rendered from the template. */
  readonly subject: string;
  readonly text: string | null;
  readonly html: string | null;
  /**
   * The template the message names (DESIGN §10), with the version the client asked for (null: the
   * latest at enqueue time, which the records pin); null or absent for an inline message (absent
   * keeps requests built by hand before templates existed valid).
   */
  readonly template?: TemplateRequestRef | null;
  /** The template's data (`{}` when the request gave none); null or absent for an inline message. */
  readonly data?: Readonly<Record<string, unknown>> | null;
  readonly headers: Readonly<Record<string, string>>;
  /** The `send_at` the client asked for (normalized), or null. Part of the fingerprint. */
  readonly requested_send_at: string | null;
  /** The `delay_seconds` the client asked for, or null. Part of the fingerprint. */
  readonly delay_seconds: number | null;
  /** The effective send time, resolved against the clock: never in the past. NOT part of the fingerprint. */
  readonly send_at: string;
  /**
   * The local time the client asked for instead of `send_at` (normalized to `YYYY-MM-DDTHH:MM:SS`),
   * read in `time_zone` (docs/design.md §16 Local time and quiet hours). Part of the fingerprint; absent
   * when not given, so a request without local time hashes as it did before local time existed.
   */
  readonly send_at_local?: string;
  /** The IANA zone of `send_at_local` and `quiet_hours`; absent when not given. */
  readonly time_zone?: string;
  /** The quiet hours in `time_zone` (start and end, HH:MM); absent when not given. */
  readonly quiet_hours?: QuietHours;
  readonly not_after: string | null;
  readonly group: GroupRef | null;
  readonly on_ambiguous: 'retry' | 'hold';
  readonly tags: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, string>>;
  /**
   * The attachments as the fingerprint covers them (DESIGN §13): an inline file by its name, type,
   * size and SHA-256, an upload by its id. Absent when there are none, so a request without
   * attachments hashes as it did before attachments existed.
   */
  readonly attachments?: readonly RequestedAttachment[];
}

/** A template named by an enqueue: the version is the one asked for, or null for the latest. */
export interface TemplateRequestRef {
  readonly name: string;
  readonly version: number | null;
}

export interface EnqueueContext {
  readonly now: Date;
  /** POSTDATE_ALLOWED_FROM patterns. */
  readonly allowedFrom: readonly string[];
  /** POSTDATE_DEFAULT_FROM. */
  readonly defaultFrom: string;
  /** POSTDATE_MAX_HORIZON_DAYS. */
  readonly maxHorizonDays: number;
  /**
   * The request is read as of a stored message's creation (a replay): its `time_zone` as a record may
   * hold it, a case variant the API took before decision 0259 included (decision 0267).
   */
  readonly zonesAsStored?: boolean;
}

/**
 * What an idempotency fingerprint covers: the canonical request without the effective send time,
 * which depends on the clock (a replay a second later must still match).
 */
export function fingerprintSource(
  request: EnqueueRequest,
): Omit<EnqueueRequest, 'send_at' | 'template' | 'data'> &
  Partial<Pick<EnqueueRequest, 'template' | 'data'>> {
  const { send_at: _effective, template, data, ...rest } = request;
  // An inline request hashes exactly as it did before templates existed: its stored fingerprints
  // still recognise its replays.
  return template == null ? rest : { ...rest, template, data: data ?? {} };
}

/** The fingerprint stored on the body and the state record: SHA-256 of the canonical request minus its clock-derived send time. */
export function requestFingerprint(request: EnqueueRequest): string {
  return fingerprint(fingerprintSource(request));
}

/** Validates an enqueue body against every rule of DESIGN §3. Never throws. */
export function validateEnqueueRequest(body: unknown, ctx: EnqueueContext): Validated<EnqueueRequest> {
  return guarded(() => {
    const parsed = EnqueueBodySchema.safeParse(body, PARSE_CONTEXT);
    const hidden = [...prototypeKeyErrors(body), ...illFormedStringErrors(body), ...templateDataErrors(body)];
    const misspelled = ctx.zonesAsStored === true ? [] : spelledZoneErrors(body);
    if (!parsed.success || hidden.length > 0) {
      const found = parsed.success ? hidden : [...zodErrors(parsed.error), ...hidden];
      return { ok: false, errors: [...found, ...misspelled] };
    }
    const input = parsed.data;
    const errors: FieldError[] = [...misspelled];
    const nowMs = ctx.now.getTime();
    const horizonMs = horizonEndMs(ctx.now, ctx.maxHorizonDays);

    const from = input.from?.trim() || ctx.defaultFrom;
    const fromAddress = parseAddress(from);
    if (!fromAddress.ok) errors.push({ field: '/from', message: fromAddress.reason });
    else if (!isAllowedSender(fromAddress.value.address, ctx.allowedFrom))
      errors.push({ field: '/from', message: 'is not an allowed sender (POSTDATE_ALLOWED_FROM)' });

    let requestedSendAt: string | null = null;
    let sendAtMs = nowMs;
    let sendAtLocal: string | undefined;
    const local = localSendAt(input);
    if (local !== undefined) {
      // The instant the wall time names in the zone (docs/design.md §16): then the horizon and
      // "a past time means now" as for send_at.
      sendAtLocal = local.asked;
      sendAtMs = Math.max(nowMs, local.at.getTime());
      if (local.at.getTime() > horizonMs)
        errors.push({ field: '/send_at_local', message: `must be at most ${ctx.maxHorizonDays} days ahead` });
    } else if (input.send_at != null) {
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
    if (errors.length > 0) return { ok: false, errors };

    return {
      ok: true,
      value: {
        to: trimAll(input.to),
        cc: trimAll(input.cc),
        bcc: trimAll(input.bcc),
        from,
        reply_to: input.reply_to?.trim() || null,
        subject: input.subject ?? '',
        text: input.text || null,
        html: input.html || null,
        // Only a template message carries these: an inline request stays exactly what it was.
        ...(input.template
          ? {
              template: { name: input.template.name, version: input.template.version ?? null },
              data: rawData(body),
            }
          : {}),
        headers: { ...input.headers },
        requested_send_at: requestedSendAt,
        delay_seconds: input.send_at == null ? (input.delay_seconds ?? null) : null,
        send_at: new Date(sendAtMs).toISOString(),
        // Only a message with local time carries these: any other request stays exactly what it was.
        ...(sendAtLocal === undefined ? {} : { send_at_local: sendAtLocal }),
        ...(input.time_zone == null ? {} : { time_zone: input.time_zone }),
        ...(input.quiet_hours == null
          ? {}
          : { quiet_hours: { start: input.quiet_hours.start, end: input.quiet_hours.end } }),
        not_after: notAfter,
        group: input.group ? { key: input.group.key, version: input.group.version } : null,
        on_ambiguous: input.on_ambiguous ?? 'retry',
        tags: { ...input.tags },
        metadata: { ...input.metadata },
        ...(input.attachments && input.attachments.length > 0
          ? { attachments: requestedAttachments(input.attachments) }
          : {}),
      },
    };
  });
}

/**
 * The recipients a new live message may not have (decision 0192): those at the mailbox simulator's
 * domain. Only a test message is answered by the simulator; a live one would go to the relay, which
 * cannot deliver to a reserved `.test` domain, and its bounce would count against the sender's
 * reputation. A rule for new messages only, as the time bounds are: one stored before it replays.
 */
export function simulatorRecipientErrors(request: Pick<EnqueueRequest, 'to' | 'cc' | 'bcc'>): FieldError[] {
  return (['to', 'cc', 'bcc'] as const).flatMap((field) =>
    request[field].flatMap((mailbox, index) => {
      const parsed = parseAddress(mailbox);
      if (!parsed.ok || !isSimulatorDomain(parsed.value.domain)) return [];
      const message = `is a mailbox simulator address (${SIMULATOR_DOMAIN}): only a test key (${TEST_KEY_PREFIX}…) sends to it`;
      return [{ field: `/${field}/${index}`, message }];
    }),
  );
}

/**
 * A schema-checked body's `send_at_local` in its `time_zone`: the time as asked (normalized with
 * seconds, what the fingerprint covers) and the instant it names; undefined when none was given.
 */
function localSendAt(input: {
  readonly send_at_local?: string | null;
  readonly time_zone?: string | null;
}): { readonly asked: string; readonly at: Date } | undefined {
  if (input.send_at_local == null || input.time_zone == null) return undefined;
  const local = parseSendAtLocal(input.send_at_local);
  // The schema parsed it already; a failure here is a defect, which `guarded` turns into a 400.
  if (!local.ok) throw new TypeError('send_at_local passed the schema but does not parse');
  return { asked: formatLocalDateTime(local.value), at: zonedInstant(local.value, input.time_zone) };
}

function trimAll(list: readonly string[] | null | undefined): string[] {
  return (list ?? []).map((address) => address.trim());
}

// ─── The reschedule request

/**
 * The reschedule request (PATCH /v1/messages/{id}): a new send time within the horizon, given as
 * `send_at` or as `send_at_local` in `time_zone`; a zone or quiet hours given replace the stored ones.
 */
export interface RescheduleRequest {
  /** The effective new send time (a past time means now), ISO-8601 UTC with ms. */
  readonly send_at: string;
  /** The local time asked for instead of `send_at` (normalized with seconds), when it was. */
  readonly send_at_local?: string;
  /** The new zone, when the request gave one (docs/design.md §16: a reschedule may change it). */
  readonly time_zone?: string;
  /** The new quiet hours, when the request gave them. */
  readonly quiet_hours?: QuietHours;
}

/** Validates a reschedule body (`send_at`, or `send_at_local` and `time_zone`). Never throws. */
export function validateRescheduleRequest(
  body: unknown,
  ctx: { readonly now: Date; readonly maxHorizonDays: number },
): Validated<RescheduleRequest> {
  return guarded(() => {
    const parsed = RescheduleBodySchema.safeParse(body, PARSE_CONTEXT);
    const misspelled = spelledZoneErrors(body);
    if (!parsed.success || misspelled.length > 0) {
      return { ok: false, errors: [...(parsed.success ? [] : zodErrors(parsed.error)), ...misspelled] };
    }
    const input = parsed.data;
    const local = localSendAt(input);
    const at = local === undefined ? parseZonedTimestamp(input.send_at ?? '') : local.at;
    const field = local === undefined ? '/send_at' : '/send_at_local';
    if (!at) return { ok: false, errors: [{ field, message: 'is invalid' }] };
    if (at.getTime() > horizonEndMs(ctx.now, ctx.maxHorizonDays)) {
      return { ok: false, errors: [{ field, message: `must be at most ${ctx.maxHorizonDays} days ahead` }] };
    }
    return {
      ok: true,
      value: {
        send_at: new Date(Math.max(ctx.now.getTime(), at.getTime())).toISOString(),
        ...(local === undefined ? {} : { send_at_local: local.asked }),
        ...(input.time_zone == null ? {} : { time_zone: input.time_zone }),
        ...(input.quiet_hours == null
          ? {}
          : { quiet_hours: { start: input.quiet_hours.start, end: input.quiet_hours.end } }),
      },
    };
  });
}

// ─── The group requests

/** The group requests (PUT /v1/groups/{key}): the key from the path and the body `{ version }`. */
export interface GroupVersionRequest {
  readonly version: number;
}

/** Validates a group version body `{ version }`. Never throws. */
export function validateGroupVersionRequest(body: unknown): Validated<GroupVersionRequest> {
  return guarded(() => {
    const parsed = GroupVersionBodySchema.safeParse(body, PARSE_CONTEXT);
    if (!parsed.success) return { ok: false, errors: zodErrors(parsed.error) };
    return { ok: true, value: { version: parsed.data.version } };
  });
}

/** Validates a group key taken from a URL path (its one error names the parameter, `key`). Never throws. */
export function validateGroupKey(key: string): Validated<string> {
  return guarded(() => {
    const parsed = GroupKeySchema.safeParse(key, PARSE_CONTEXT);
    if (!parsed.success) {
      return {
        ok: false,
        errors: [{ field: 'key', message: parsed.error.issues[0]?.message ?? 'is invalid' }],
      };
    }
    return { ok: true, value: parsed.data };
  });
}
