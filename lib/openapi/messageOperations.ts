/**
 * The OpenAPI operations of the message routes (DESIGN §3) and the schemas of their answers. The
 * request schemas are the validating ones (lambdas/core/messageSchema.ts); the answers every route
 * can give (401, 403, 429, 5xx, the JSON body's 400/413/415) are added by lib/openapi/openApiDocument.ts.
 */
import * as z from 'zod';
import type { RouteName } from '../../lambdas/core/apiRoutes.js';
import { BatchEnqueueBodyDocumentSchema } from '../../lambdas/core/batchEnqueueSchema.js';
import { MESSAGE_ID_PATTERN } from '../../lambdas/core/ids.js';
import {
  EnqueueBodyDocumentSchema,
  GroupKeySchema,
  GroupVersionBodySchema,
  QuietHoursSchema,
  RescheduleBodySchema,
} from '../../lambdas/core/messageSchema.js';
import { MAX_RECIPIENT_REPLIES, MAX_RECIPIENT_REPLY_LENGTH } from '../../lambdas/core/recipients.js';
import { IDEMPOTENCY_KEY_PATTERN, LIMITS, LIST_LIMIT } from '../../lambdas/core/requestLimits.js';
import {
  EXAMPLE_MESSAGE_ID,
  json,
  jsonResponse,
  type Operation,
  ProblemSchema,
  problemResponse,
  StatusSchema,
} from './components.js';

const LastErrorSchema = z
  .object({
    class: z.enum(['transient', 'permanent', 'config', 'ambiguous']),
    code: z.string().nullable(),
    enhanced_code: z.string().nullable(),
    message: z.string(),
  })
  .meta({ id: 'LastError' });

const RecipientReplySchema = z
  .object({
    position: z.int().meta({
      description: "The recipient's place in the message's recipients: `to`, then `cc`, then `bcc`, from 0.",
    }),
    domain: z.string().meta({ description: "The recipient's domain (the address is not repeated here)." }),
    outcome: z.enum(['deferred', 'rejected']).meta({
      description:
        '`deferred`: a 4xx, the recipient stays pending; `rejected`: a 5xx, never sent to by this message.',
    }),
    code: z.string().nullable(),
    enhanced_code: z.string().nullable(),
    reply: z
      .string()
      .nullable()
      .meta({
        description: `The reply, addresses redacted, at most ${MAX_RECIPIENT_REPLY_LENGTH} characters.`,
      }),
  })
  .meta({ id: 'RecipientReply' });

const AttemptSchema = z
  .object({
    at: z.string().meta({ format: 'date-time' }),
    outcome: z.enum(['sent', 'transient', 'permanent', 'config', 'ambiguous']),
    code: z.string().nullable(),
    enhanced_code: z.string().nullable(),
    reply: z.string().nullable(),
    duration_ms: z.number(),
    rejected_domains: z.array(z.string()).optional().meta({
      description: 'The domains of the recipients the relay rejected for good (5xx) in this attempt.',
    }),
    recipients: z
      .array(RecipientReplySchema)
      .optional()
      .meta({
        description: `The recipients the relay answered on their own (refused at RCPT TO), at most ${MAX_RECIPIENT_REPLIES}, in envelope order. Every other recipient of the attempt had the attempt's own reply: the 250 after DATA, or the failure.`,
      }),
    recipients_omitted: z
      .int()
      .optional()
      .meta({
        description: `Refused recipients beyond the ${MAX_RECIPIENT_REPLIES} listed in \`recipients\`.`,
      }),
    provider_message_id: z.string().optional().meta({
      description: "The relay's own id from its final 250 reply, when it named one in a known shape.",
    }),
    relay: z.string().optional().meta({
      description: 'The relay this attempt went through (`POSTDATE_RELAYS`, or `default`).',
    }),
  })
  .meta({ id: 'Attempt' });

const MessageIdSchema = z.string().regex(MESSAGE_ID_PATTERN).meta({
  description:
    'Opaque and URL-safe, at most 32 characters: 26 lower-case base-32 characters derived from the tenant and the Idempotency-Key.',
  example: EXAMPLE_MESSAGE_ID,
});

export const MessageSchema = z
  .object({
    id: MessageIdSchema,
    status: StatusSchema,
    send_at: z.string().meta({ format: 'date-time', description: 'The instant the message is due.' }),
    send_at_local: z.string().nullable().meta({
      description:
        '`send_at` on the wall clock of `time_zone` (`YYYY-MM-DDTHH:MM:SS`): when the message goes there, so a local time given in a spring gap shows as moved forward. Null without a `time_zone`.',
      example: '2026-12-03T09:00:00',
    }),
    time_zone: z.string().nullable().meta({
      description: 'The IANA zone of `send_at_local` and `quiet_hours`; null when none was given.',
      example: 'Europe/Berlin',
    }),
    quiet_hours: QuietHoursSchema.nullable(),
    not_after: z.string().meta({ format: 'date-time' }).nullable(),
    created_at: z.string().meta({ format: 'date-time' }),
    updated_at: z.string().meta({ format: 'date-time' }),
    attempts: z.int().meta({
      description: 'SMTP transactions in which the relay saw the message (not queue receives).',
    }),
    last_error: LastErrorSchema.nullable(),
    provider_message_id: z.string().nullable().meta({
      description:
        "The relay's own id (queue id) from the final 250 reply of the last accepted attempt, the attempt `relay` names; what an operator quotes to that provider. Null when that reply named none, or before any attempt was accepted.",
      example: '01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000',
    }),
    relay: z.string().nullable().meta({
      description:
        'The relay of the attempt `provider_message_id` comes from (DESIGN §15: `POSTDATE_RELAYS` names them; `default` when only `SMTP_*` is set): the last accepted attempt, or before any was accepted the last attempt. Null before any attempt.',
      example: 'default',
    }),
    recipients: z
      .object({ accepted: z.int(), pending: z.int(), rejected: z.int(), suppressed: z.int() })
      .meta({
        description:
          'Recipients one by one: accepted by the relay (never sent again), pending (deferred with a 4xx, retried), rejected for good (5xx), suppressed (on the suppression list at send time: left out, DESIGN §12).',
      }),
    template: z.object({ name: z.string(), version: z.int() }).nullable().meta({
      description: 'A template message: its template and the version it was pinned to (DESIGN §10).',
    }),
    attachments: z
      .array(
        z.object({
          filename: z.string(),
          content_type: z.string(),
          size: z.int().meta({ description: 'Bytes, decoded.' }),
          sha256: z.string().meta({ description: 'SHA-256 of the bytes, hex.' }),
        }),
      )
      .meta({ description: 'The attachments (DESIGN §13); the bytes themselves are never returned.' }),
    group: z.object({ key: z.string(), version: z.int() }).nullable(),
    tags: z.record(z.string(), z.string()),
    metadata: z.record(z.string(), z.string()),
    rev: z.int(),
    test: z.boolean().meta({
      description:
        "Enqueued with a test key (`pd_test_…`, DESIGN §14): it ran through everything but the relay, and its outcome is the mailbox simulator's. False for a live message.",
    }),
    history: z.array(AttemptSchema).optional().meta({ description: 'Only on GET /v1/messages/{id}.' }),
  })
  .meta({ id: 'Message' });

const MessageListSchema = z
  .object({
    items: z.array(MessageSchema),
    next_cursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` for the next page; null at the end.' }),
  })
  .meta({ id: 'MessageList' });

const BatchResultSchema = z
  .object({
    index: z.int().min(0).meta({ description: "The item's place in `messages`, from 0." }),
    status: z.int().meta({
      description:
        'What a single POST /v1/messages of this item would have answered: 202 new, 200 replay, 400/413/422 refused; 500/503 when its write failed (retry the batch: the stored items replay).',
    }),
    replayed: z.boolean().optional().meta({ description: 'With a message: true when it is a replay (200).' }),
    // The components themselves ($ref): a `.meta` here would inline a copy of each.
    message: MessageSchema.optional(),
    problem: ProblemSchema.optional(),
  })
  .meta({
    id: 'BatchResult',
    description:
      "One item's answer: for a 2xx its `message`, otherwise its `problem`, whose `detail` and `errors` name fields of the batch (`/messages/3/to`).",
    example: {
      index: 3,
      status: 400,
      problem: {
        type: 'urn:postdate:problem:validation',
        title: 'The request is invalid',
        status: 400,
        detail: 'One field is invalid: /messages/3/to/0.',
        errors: [{ field: '/messages/3/to/0', message: 'must be an email address (local@domain)' }],
      },
    },
  });

const BatchResponseSchema = z
  .object({ results: z.array(BatchResultSchema).meta({ description: 'One per item, in request order.' }) })
  .meta({ id: 'BatchEnqueueResponse' });

const GroupHeadSchema = z
  .object({ key: z.string(), version: z.int(), updated_at: z.string().meta({ format: 'date-time' }) })
  .meta({ id: 'GroupHead' });

const idParam = z.object({
  id: MessageIdSchema.meta({
    description: 'The message id. One that is not a possible id answers 404, as an unknown one does.',
  }),
});

const notFound = problemResponse(
  "No such message for this tenant (another tenant's id included, and one whose retention ran out, even before DynamoDB deletes it).",
);

export const MESSAGE_OPERATIONS = {
  enqueue: {
    summary: 'Enqueue a message',
    description: [
      'Stores the message once per Idempotency-Key and sends it at `send_at` (or after `delay_seconds`, or at `send_at_local` in `time_zone`; none = now). With `quiet_hours`, a message that comes due inside them — first time, after a retry, an outage or a pause — waits for their end, unless `not_after` comes first.',
      '',
      'The request schema encodes what JSON Schema can: at least one recipient, `text` or `html`, not both `send_at` and `delay_seconds`, the caps on `tags`, `metadata` and `headers`, no CR or LF in header material. Checked only by the server (400 with `errors`):',
      '',
      `- at most ${LIMITS.maxRecipients} recipients in \`to\`, \`cc\` and \`bcc\` together;`,
      '- every address is an RFC 5322 mailbox; `from` matches POSTDATE_ALLOWED_FROM;',
      '- other control characters in header material; reserved and relay-control header names; a header given twice;',
      '- `send_at` (or `send_at_local`) at most POSTDATE_MAX_HORIZON_DAYS ahead, `not_after` after `send_at`;',
      '- `time_zone` an IANA zone the server knows, `send_at_local` a real calendar date and time, `quiet_hours` start ≠ end;',
      `- \`tags\` and \`metadata\` together at most ${LIMITS.maxTagsAndMetadataBytes} bytes of JSON.`,
      '',
      `A body over ${LIMITS.maxBodyBytes / 1024} KiB as JSON, inline attachments' \`content\` not counted, is a 413, as are inline attachments too large in all and a message too large with its attachments (see 413).`,
    ].join('\n'),
    request: {
      headers: z.object({
        'Idempotency-Key': z.string().regex(IDEMPOTENCY_KEY_PATTERN).meta({
          description:
            '1–255 printable ASCII characters, bare or as a Structured Field string (`"…"`, its quotes not counted): the same key and body answer the same message until its retention runs out (`POSTDATE_RETENTION_DAYS` after it ended); from then the key names a new message.',
          example: 'campaign-42-approved',
        }),
      }),
      body: { content: json(EnqueueBodyDocumentSchema), required: true },
    },
    responses: {
      202: jsonResponse('Accepted and stored.', MessageSchema, { headers: ['Location'] }),
      200: jsonResponse('A replay of the same key and body: the original message.', MessageSchema, {
        headers: ['Location', 'Idempotent-Replayed'],
      }),
      400: problemResponse(
        'Invalid request: `errors` names each field. A missing or invalid Idempotency-Key is a 400 too. A header that controls the relay (X-SES-*, X-SMTPAPI, …: see `headers`) is refused here.',
      ),
      413: problemResponse(
        `The body is over ${LIMITS.maxBodyBytes / 1024} KiB as JSON beside its inline attachments' \`content\` (\`errors\` names \`body\`); or its inline attachments are over POSTDATE_INLINE_ATTACHMENT_MAX_KB decoded in all, or the whole message with its attachments as base64 over POSTDATE_MAX_MESSAGE_MB (\`errors\` names \`/attachments\`). Over API Gateway's 10 MB: \`{"message": "Request Entity Too Large"}\`.`,
      ),
      422: problemResponse(
        'The Idempotency-Key was used with a different body; or the template cannot be used (missing, archived, no such version) or the message does not render with its data (`errors` names each variable or field).',
      ),
    },
  },
  enqueueBatch: {
    summary: 'Enqueue up to 100 messages, each under its own idempotency key',
    description: [
      `Up to ${LIMITS.maxBatchMessages} enqueue bodies, each with its own \`idempotency_key\` (no Idempotency-Key header): each item is atomic on its own, exactly as a POST /v1/messages with that key, with its own schedule, template or content. Replaying a whole batch (after a timeout) answers the stored items as replays and enqueues nothing twice.`,
      '',
      '- `mode: "permissive"` (default): every valid item is enqueued; each other one is reported in its result.',
      '- `mode: "strict"`: every item is judged first; if one is invalid nothing is enqueued and the answer is a 400 whose `errors` name each failing item (`/messages/3/to`).',
      '',
      `A key given twice in one batch is two single enqueues in request order: the later item answers 200 replayed for the same body, 422 for another (202 when the earlier one was refused). The whole body is at most ${LIMITS.maxBatchBodyBytes / 1024 / 1024} MiB, each item at most ${LIMITS.maxBodyBytes / 1024} KiB as JSON beside its inline attachments' content, as a single enqueue (that item's 413).`,
    ].join('\n'),
    request: { body: { content: json(BatchEnqueueBodyDocumentSchema), required: true } },
    responses: {
      200: jsonResponse('One result per item, in request order.', BatchResponseSchema),
      400: problemResponse(
        'The envelope is invalid (`messages` empty or over 100 items, an unknown `mode` or field), or in strict mode an item is: `errors` names each field (`/messages/3/to`) and nothing was enqueued.',
      ),
      413: problemResponse(
        `The body is larger than ${LIMITS.maxBatchBodyBytes / 1024 / 1024} MiB (a problem), or than API Gateway's 10 MB.`,
      ),
    },
  },
  list: {
    summary: 'List messages, newest first',
    request: {
      query: z.object({
        status: StatusSchema.optional(),
        limit: z
          .int()
          .min(LIST_LIMIT.min)
          .max(LIST_LIMIT.max)
          .optional()
          .meta({ description: 'Messages per page.', default: LIST_LIMIT.default }),
        cursor: z.string().optional().meta({
          description:
            "The previous page's `next_cursor`, with the same key (tenant, test or live) and `status`.",
        }),
      }),
    },
    responses: {
      200: jsonResponse('A page of messages.', MessageListSchema),
      400: problemResponse(
        'An invalid `status`, `limit` or `cursor`, or a parameter the listing does not take: `errors` names each.',
      ),
    },
  },
  get: {
    summary: 'Get a message with its attempt history',
    request: { params: idParam },
    responses: {
      200: jsonResponse('The message.', MessageSchema),
      404: notFound,
      501: problemResponse(
        'The message was written by a newer outbox helper than this stack can read (`newer-writer`: a newer `layout` or an unknown status, decision 0166): it waits, unsent, until the stack is upgraded.',
      ),
    },
  },
  reschedule: {
    summary: 'Reschedule a scheduled message',
    request: { params: idParam, body: { content: json(RescheduleBodySchema), required: true } },
    responses: {
      200: jsonResponse('Rescheduled (rev + 1).', MessageSchema),
      400: problemResponse(
        "Invalid request: `errors` names each field (`send_at` or `send_at_local` beyond the horizon or not before the message's `not_after`, an unknown `time_zone`).",
      ),
      404: notFound,
      409: problemResponse('The message is no longer scheduled (`current_status` says what it is).'),
    },
  },
  cancel: {
    summary: 'Cancel a scheduled or retrying message',
    request: { params: idParam },
    responses: {
      200: jsonResponse('Cancelled.', MessageSchema),
      404: notFound,
      409: problemResponse('The message is sending or terminal (`current_status` says what it is).'),
    },
  },
  retry: {
    summary: 'Retry a failed, dead or unknown message',
    request: { params: idParam },
    responses: {
      202: jsonResponse('Scheduled again now (rev + 1).', MessageSchema),
      404: notFound,
      409: problemResponse(
        'The message is not failed, dead or unknown (`status-conflict`, `current_status` says what it is); or its attachments are no longer stored (`attachments-gone`, `errors` names each: `/attachments/1`), so a retry could only fail it again: enqueue a new message with the files. Nothing was changed.',
      ),
    },
  },
  raiseGroup: {
    summary: "Raise a group's version without sending",
    request: {
      params: z.object({ key: GroupKeySchema }),
      body: { content: json(GroupVersionBodySchema), required: true },
    },
    responses: {
      200: jsonResponse('The group head after the raise.', GroupHeadSchema),
      400: problemResponse('An invalid group key or version: `errors` names each.'),
    },
  },
} satisfies Partial<Record<RouteName, Operation>>;
