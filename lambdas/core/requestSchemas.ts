/**
 * The request bodies of DESIGN §3 as zod 4 schemas: structure, types, limits and the rules that need
 * neither configuration nor the clock. The same schemas generate the OpenAPI document
 * (lambdas/api/openapi.ts), so what is documented is what is checked.
 */
import { z } from 'zod';
import { parseAddress } from './addresses.js';
import {
  controlCharacterProblem,
  headerNameProblem,
  headerValueProblem,
  RELAY_CONTROL_HEADERS,
  RELAY_CONTROL_MESSAGE,
} from './headerSafety.js';
import { LIMITS } from './requestLimits.js';
import { TemplateDataSchema, TemplateRefSchema } from './templateRequests.js';
import { parseZonedTimestamp } from './timestamps.js';

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
    tags?: Readonly<Record<string, string>> | null;
    metadata?: Readonly<Record<string, string>> | null;
  },
  ctx: z.RefinementCtx,
): void {
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
  .meta({ id: 'EnqueueRequest', description: 'An email to send later (DESIGN §3).' });

const InlineEnqueueSchema = z
  .strictObject({ ...enqueueAddresses, ...inlineContent, ...enqueueDelivery })
  .meta({
    id: 'InlineEnqueueRequest',
    description: 'An email to send later with its content (DESIGN §3): `text` or `html` or both.',
  });

const TemplateEnqueueSchema = z
  .strictObject({ ...enqueueAddresses, ...templateContent, ...enqueueDelivery })
  .meta({
    id: 'TemplateEnqueueRequest',
    description: 'An email to send later, built at send time from a stored template and `data` (DESIGN §10).',
  });

/**
 * The enqueue body for the OpenAPI document: exactly one of the two forms (`oneOf`), built from the
 * same field schemas that EnqueueBodySchema validates with.
 */
export const EnqueueBodyDocumentSchema = z.union([InlineEnqueueSchema, TemplateEnqueueSchema]).meta({
  id: 'EnqueueRequest',
  description:
    'An email to send later (DESIGN §3): its content inline (`subject`, `text`, `html`), or a stored `template` and its `data` — not both.',
  _internal: { unionPreferredType: 'oneOf', refId: 'EnqueueRequest' },
} as Record<string, unknown>);

export const RescheduleBodySchema = z
  .strictObject({ send_at: Timestamp })
  .meta({ id: 'RescheduleRequest', description: 'A new send time for a scheduled message.' });

export const GroupVersionBodySchema = z
  .strictObject({ version: GroupVersion })
  .meta({ id: 'GroupVersionRequest', description: "Raise a group's version without sending anything." });
