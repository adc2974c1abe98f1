/**
 * The api's request bodies beside a message's (messageSchema.ts) and a template's
 * (templateRequests.ts), as zod schemas (they also generate the OpenAPI document) and their
 * validations: a message's attachments and the declaration of an upload (DESIGN §13), a webhook
 * endpoint (§11), a suppression (§12). Only the api parses requests, so only the api loads zod; the
 * rules these schemas apply are pure functions and constants in the rooms of their ideas
 * (attachments.ts, webhooks.ts, suppressions.ts), which every function may use (decision 0131).
 * Nothing here throws on any input, and no error message echoes a value.
 */
import * as z from 'zod';
import {
  ATTACHMENT_ID_PATTERN,
  ATTACHMENT_LIMITS,
  type AttachmentSizeLimits,
  BASE64,
  contentTypeProblem,
  filenameProblem,
  maxUploadBytes,
  type UploadDeclaration,
} from './attachments.js';
import { EVENT_TYPES, type EventType } from './messageEvents.js';
import { guarded, illFormedStringErrors, PARSE_CONTEXT, type Validated, zodErrors } from './problem.js';
import { SUPPRESSION_REASONS, type SuppressionReason } from './suppressions.js';
import { WEBHOOK_LIMITS } from './webhooks.js';

// ─── Attachments (DESIGN §13)

const Filename = z
  .string()
  .superRefine((value, ctx) => {
    const problem = filenameProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({
    description:
      'The name the recipient sees: no CR, LF or other control character, no / or \\, no RFC 2047 encoded-word; non-ASCII is sent RFC 2231-encoded. Executable types (.exe, .bat, .js, .jar, .msi, …) are refused.',
    example: 'invoice-2026-12.pdf',
  });

const ContentType = z
  .string()
  .superRefine((value, ctx) => {
    const problem = contentTypeProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ description: 'A media type without parameters, not multipart/*.', example: 'application/pdf' });

/** One inline attachment of an enqueue: the bytes as base64. */
export const InlineAttachmentSchema = z
  .strictObject({
    filename: Filename,
    content_type: ContentType.nullish().meta({
      description: 'Derived from the extension when absent (application/octet-stream when unknown).',
    }),
    content: z
      .string()
      .min(1, 'must not be empty')
      .regex(BASE64, 'must be base64 (RFC 4648, padded, no whitespace)')
      .meta({ description: 'The bytes, base64 (RFC 4648, padded, no whitespace).' }),
  })
  .meta({ id: 'InlineAttachment' });

/** One attachment uploaded first through `POST /v1/attachments`. */
export const AttachmentReferenceSchema = z
  .strictObject({
    attachment_id: z
      .string()
      .regex(ATTACHMENT_ID_PATTERN, 'must be an id from POST /v1/attachments')
      .meta({ example: 'att_01jf6y8m3v3x1z6d2qk4n8r5tw' }),
  })
  .meta({ id: 'AttachmentReference' });

/** The enqueue's `attachments` (DESIGN §3, §13). */
export const AttachmentsSchema = z
  .array(z.union([InlineAttachmentSchema, AttachmentReferenceSchema]))
  .max(ATTACHMENT_LIMITS.maxAttachments, `must have at most ${ATTACHMENT_LIMITS.maxAttachments} attachments`)
  .meta({
    description:
      'Inline (base64, up to POSTDATE_INLINE_ATTACHMENT_MAX_KB decoded in all) or uploaded first (`attachment_id`).',
  });

/** `POST /v1/attachments`: what the upload will be; the pre-signed PUT enforces size and type. */
export const AttachmentUploadSchema = z
  .strictObject({
    filename: Filename,
    content_type: ContentType,
    size: z.int().min(1, 'must be at least 1 byte').meta({ description: 'The exact size in bytes.' }),
  })
  .meta({ id: 'AttachmentUploadRequest' });

/**
 * Validates a `POST /v1/attachments` body: the filename and type as an inline attachment's (DESIGN
 * §13), the size at most what fits a message by itself (`POSTDATE_MAX_MESSAGE_MB`). Never throws.
 */
export function validateAttachmentUpload(
  body: unknown,
  limits: AttachmentSizeLimits,
): Validated<UploadDeclaration> {
  return guarded(() => {
    const parsed = AttachmentUploadSchema.safeParse(body, PARSE_CONTEXT);
    const hidden = illFormedStringErrors(body);
    if (!parsed.success || hidden.length > 0)
      return { ok: false, errors: parsed.success ? hidden : [...zodErrors(parsed.error), ...hidden] };
    const largest = maxUploadBytes(limits);
    if (parsed.data.size > largest) {
      return {
        ok: false,
        errors: [
          {
            field: '/size',
            message: `must be at most ${largest} bytes: the file alone, base64-encoded, must fit POSTDATE_MAX_MESSAGE_MB (${limits.maxMessageBytes / (1024 * 1024)} MB)`,
          },
        ],
      };
    }
    // The type as declared, not lower-cased: the upload URL signs it, and SigV4 compares the PUT's
    // header exactly (uploadMismatch and contentTypeFor ignore its case).
    const { filename, content_type, size } = parsed.data;
    return { ok: true, value: { filename, content_type, size } };
  });
}

// ─── Webhooks (DESIGN §11)

/** `POST /v1/webhooks`. `events` absent or null: every event type. */
export const CreateWebhookBodySchema = z
  .strictObject({
    url: z
      .string()
      .min(1)
      .max(WEBHOOK_LIMITS.maxUrlLength)
      .meta({ description: 'Where events are POSTed: `https` in AWS; locally `http` to loopback too.' }),
    events: z
      .array(z.enum(EVENT_TYPES as [EventType, ...EventType[]]))
      .min(1)
      .nullish()
      .meta({ description: 'The event types to deliver; absent: all of them.' }),
    description: z.string().max(WEBHOOK_LIMITS.maxDescriptionLength).nullish(),
  })
  .meta({ id: 'CreateWebhookBody' });

export interface CreateWebhookRequest {
  readonly url: string;
  readonly events: readonly EventType[] | null;
  readonly description: string | null;
}

export function validateCreateWebhook(body: unknown): Validated<CreateWebhookRequest> {
  const parsed = CreateWebhookBodySchema.safeParse(body, PARSE_CONTEXT);
  if (!parsed.success) return { ok: false, errors: zodErrors(parsed.error) };
  const events = parsed.data.events ? [...new Set(parsed.data.events)] : null;
  return {
    ok: true,
    value: { url: parsed.data.url, events, description: parsed.data.description ?? null },
  };
}

// ─── Suppressions (DESIGN §12)

export const SuppressionReasonSchema = z
  .enum(SUPPRESSION_REASONS as [SuppressionReason, ...SuppressionReason[]])
  .meta({ id: 'SuppressionReason' });

/** The body of PUT /v1/suppressions/{address}: optional, `{}` or `{ "reason": … }`. */
export const SuppressionBodySchema = z
  .strictObject({
    reason: SuppressionReasonSchema.optional().meta({ description: 'Defaults to `manual`.' }),
  })
  .meta({ id: 'SuppressionRequest', description: "Add an address to this tenant's suppression list." });

export interface SuppressionRequest {
  /** The reason given; undefined when the body gave none (a new entry is then `manual`). */
  readonly reason: SuppressionReason | undefined;
}

/**
 * Validates the PUT body; an absent body (undefined) means `{}`, anything else must be a JSON object
 * (`null` too is refused, naming `body`). Never throws.
 */
export function validateSuppressionRequest(body: unknown): Validated<SuppressionRequest> {
  return guarded(() => {
    const parsed = SuppressionBodySchema.safeParse(body === undefined ? {} : body, PARSE_CONTEXT);
    if (!parsed.success) return { ok: false, errors: zodErrors(parsed.error) };
    return { ok: true, value: { reason: parsed.data.reason } };
  });
}
