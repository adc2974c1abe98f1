/**
 * What a webhook endpoint receives (DESIGN §11): the document's `webhooks`, one entry per event type
 * the code can emit (EVENT_TYPES, core/messageEvents.ts), each a POST with the Standard Webhooks
 * headers, the event as its body and the answer the delivery function counts as delivered.
 *
 * One entry per type, not one entry with a union body (decision 0216): a generator makes a handler
 * per event and a reader finds each type with when it is sent, while every message event's body is
 * the one `MessageEvent` component narrowed to its type, whose `data` references `Message` (the
 * view without `history`) rather than copying it; the client exports `MessageEvent`,
 * `WebhookTestEvent` and their union `WebhookEvent`, on which a receiver's `switch (event.type)`
 * narrows.
 */
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import * as z from 'zod';
import { CONFIG_SETTINGS } from '../../lambdas/core/configSpec.js';
import {
  EVENT_ID_PATTERN,
  EVENT_STATUSES,
  type EventStatus,
  type EventType,
  eventTypeOf,
  MESSAGE_EVENT_TYPES,
  WEBHOOK_TEST_EVENT_TYPE,
} from '../../lambdas/core/messageEvents.js';
import { MESSAGE_STATUS } from '../../lambdas/core/messageStatus.js';
import { WEBHOOK_BACKOFF, WEBHOOK_TIMEOUT_MS } from '../../lambdas/core/webhooks.js';
import { json, StatusSchema } from './components.js';
import { MessageSchema } from './messageOperations.js';

const EventIdSchema = z.string().regex(EVENT_ID_PATTERN).meta({
  description:
    'The same on every retry of a delivery, and for a message event on every replay of the stream: dedupe on it.',
  example: 'evt_3f1c2a9b8d7e6f5a4b3c2d1e0f9a8b7c',
});

/** The fields every event has (DESIGN §11). */
const eventFields = {
  id: EventIdSchema,
  created_at: z.string().meta({
    format: 'date-time',
    description: 'When the change happened (a message event: the `updated_at` the change wrote).',
  }),
  tenant: z.string().meta({ description: "The tenant's name; a test side's events say `data.test: true`." }),
};

const MessageEventSchema = z
  .object({
    ...eventFields,
    type: z.enum(MESSAGE_EVENT_TYPES as [string, ...string[]]).meta({ id: 'MessageEventType' }),
    data: z
      .intersection(MessageSchema, z.object({ previous_status: z.union([StatusSchema, z.null()]) }))
      .meta({
        description:
          'The message as GET /v1/messages/{id} shows it after the change, without `history`; `previous_status` is its status before, null at acceptance (a new message).',
      }),
  })
  .meta({ id: 'MessageEvent', description: 'A status change of a message (DESIGN §11).' });

const WebhookTestEventSchema = z
  .object({
    ...eventFields,
    type: z.literal(WEBHOOK_TEST_EVENT_TYPE),
    data: z.object({
      webhook_id: z.string().meta({ description: 'The endpoint it was sent to (`whe_…`).' }),
      test: z.boolean().meta({ description: "True when a test side's endpoint was sent it (DESIGN §14)." }),
      message: z.string(),
    }),
  })
  .meta({
    id: 'WebhookTestEvent',
    description: 'Sent by POST /v1/webhooks/{id}/test, to that endpoint only.',
  });

/** When each message event is sent: the status it names (DESIGN §2). */
const SENT_WHEN: Record<EventStatus, string> = {
  [MESSAGE_STATUS.scheduled]: 'A message was accepted, waiting for its `send_at`.',
  [MESSAGE_STATUS.retrying]: 'An attempt failed for now; the message is tried again after a backoff.',
  [MESSAGE_STATUS.sent]: 'The relay accepted the message (250 after DATA).',
  [MESSAGE_STATUS.failed]:
    'The message failed for good (a 5xx for every recipient, invalid content); retryable.',
  [MESSAGE_STATUS.dead]: "The message's attempts are spent on transient failures; retryable.",
  [MESSAGE_STATUS.cancelled]: 'The message was cancelled through the API before a send began.',
  [MESSAGE_STATUS.superseded]: 'A newer version of its group exists; the message is never sent.',
  [MESSAGE_STATUS.expired]: 'Its `not_after` passed before it could be sent.',
  [MESSAGE_STATUS.unknown]:
    'The outcome is ambiguous (the relay may have accepted it) and its policy is `hold`: an operator decides.',
  [MESSAGE_STATUS.suppressed]: 'Every recipient was on the suppression list at send time: nothing was sent.',
};

const webhookHeaders = z.object({
  'webhook-id': EventIdSchema.meta({ description: "The event's `id`, the same on every retry." }),
  'webhook-timestamp': z
    .string()
    .regex(/^[0-9]+$/)
    .meta({
      description:
        'When this attempt was signed, in Unix seconds: refuse one far from your clock (a replay).',
      example: '1764928800',
    }),
  'webhook-signature': z
    .string()
    .regex(/^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$/)
    .meta({
      description:
        '`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` with the secret (its base64 after `whsec_`), one per signing secret, space-separated (two or more within a day of a rotation): accept the request when one matches. Any Standard Webhooks library verifies it.',
    }),
});

const retryHours = CONFIG_SETTINGS.webhookRetryHours.aws;

function webhookOf(type: EventType, summary: string, body: z.ZodType) {
  return {
    method: 'post' as const,
    path: type,
    // `message.sent` → `messageSent`: a generated receiver's handler name.
    operationId: type.replace(/\.(\w)/, (_dot, letter: string) => letter.toUpperCase()),
    summary,
    // No API key: the receiver verifies `webhook-signature` with the endpoint's secret.
    security: [],
    request: { headers: webhookHeaders, body: { content: json(body), required: true } },
    responses: {
      '2XX': {
        description: `Delivered: any 2xx within ${WEBHOOK_TIMEOUT_MS / 1000} s, the whole exchange to the answer's end; its body is not read.`,
      },
      default: {
        description: `Anything else (another status, a 410 too; a 3xx: redirects are not followed; no whole answer within ${WEBHOOK_TIMEOUT_MS / 1000} s) is retried with backoff and jitter, no sooner than the answer's \`Retry-After\` asks (seconds or an HTTP-date, up to ${WEBHOOK_BACKOFF.capMs / 3_600_000} h), the same \`webhook-id\` each time, for POSTDATE_WEBHOOK_RETRY_HOURS (${retryHours}); then the delivery is \`failed\`, listed and retryable through the API.`,
      },
    },
  };
}

/** Adds one `webhooks` entry per event type to the document's registry. */
export function registerWebhookEvents(registry: OpenAPIRegistry): void {
  for (const status of EVENT_STATUSES) {
    const type = eventTypeOf(status);
    registry.registerWebhook(
      webhookOf(
        type,
        SENT_WHEN[status],
        z.intersection(MessageEventSchema, z.object({ type: z.literal(type) })),
      ),
    );
  }
  registry.registerWebhook(
    webhookOf(
      WEBHOOK_TEST_EVENT_TYPE,
      'A test event, on request (POST /v1/webhooks/{id}/test).',
      WebhookTestEventSchema,
    ),
  );
}
