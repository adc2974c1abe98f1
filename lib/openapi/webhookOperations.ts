/**
 * The OpenAPI operations of the webhook routes (DESIGN §3, §11), spread into OPERATIONS
 * (lib/openapi/openApiDocument.ts), which adds the answers every route shares (401/403, 429, 5xx and, with a
 * JSON body, 400/413/415). The request body is the schema that validates it (core/requestSchemas.ts).
 */
import * as z from 'zod';
import type { WebhookRouteName } from '../../lambdas/core/apiRoutes.js';
import { EVENT_TYPES } from '../../lambdas/core/messageEvents.js';
import { CreateWebhookBodySchema } from '../../lambdas/core/requestSchemas.js';
import { WEBHOOK_FAILED_COUNT_CAP, WEBHOOK_STALLED_AFTER_MS } from '../../lambdas/core/webhookOperator.js';
import { WEBHOOK_DELIVERY_STATUSES, WEBHOOK_LIMITS } from '../../lambdas/core/webhooks.js';
import { json, jsonResponse, type Operation, problemResponse as problem } from './components.js';

const EventTypeSchema = z.enum(EVENT_TYPES as [string, ...string[]]).meta({ id: 'EventType' });
const DeliveryStatusSchema = z
  .enum(WEBHOOK_DELIVERY_STATUSES as [string, ...string[]])
  .meta({ id: 'WebhookDeliveryStatus' });

const dateTime = () => z.string().meta({ format: 'date-time' });

const WebhookSchema = z
  .object({
    id: z.string().meta({ example: 'whe_01JE0000000000000000000000' }),
    url: z.string(),
    events: z.array(EventTypeSchema).nullable().meta({ description: 'null: every event type.' }),
    description: z.string().nullable(),
    created_at: dateTime(),
  })
  .meta({ id: 'Webhook' });

const CreatedWebhookSchema = WebhookSchema.extend({
  secret: z.string().meta({
    description: 'The signing secret, `whsec_` + base64 of 32 bytes: shown here once, never again.',
  }),
}).meta({ id: 'CreatedWebhook' });

const RotatedWebhookSchema = CreatedWebhookSchema.extend({
  previous_secret_expires_at: dateTime().meta({
    description:
      'Until then deliveries carry a signature with the secret this rotation retired too (and with each secret retired in the 24 h before it, until its own day ends).',
  }),
}).meta({ id: 'RotatedWebhook' });

const WebhookWithCountsSchema = WebhookSchema.extend({
  deliveries: z
    .object({
      failed: z.int().meta({
        description: `Every failed delivery the endpoint keeps (each can be retried), counted up to ${WEBHOOK_FAILED_COUNT_CAP}: ${WEBHOOK_FAILED_COUNT_CAP} means that many or more.`,
      }),
      pending: z.int().meta({ description: 'Pending among the `recent` deliveries.' }),
      delivered: z.int().meta({ description: 'Delivered among the `recent` deliveries.' }),
      recent: z.int().meta({
        description:
          "How many of the endpoint's newest deliveries `pending` and `delivered` count: the newest of each of its 128 partitions, about its newest 128 (fewer when it has kept fewer).",
      }),
    })
    .meta({
      description:
        'Each count is a bounded read, however many deliveries the endpoint keeps: every delivery is not counted.',
    }),
}).meta({ id: 'WebhookWithCounts' });

const WebhookListSchema = z.object({ items: z.array(WebhookSchema) }).meta({ id: 'WebhookList' });

const DeliverySchema = z
  .object({
    id: z.string(),
    webhook_id: z.string(),
    event_id: z.string().meta({ description: 'The `webhook-id` header of every attempt.' }),
    event_type: EventTypeSchema,
    status: DeliveryStatusSchema,
    attempts: z.int(),
    next_attempt_at: dateTime().nullable().meta({ description: 'Set while pending.' }),
    created_at: dateTime(),
    updated_at: dateTime(),
    delivered_at: dateTime().nullable(),
    history: z
      .array(
        z.object({
          at: dateTime(),
          status_code: z.int().nullable(),
          error: z
            .string()
            .nullable()
            .meta({
              description:
                '`timeout`, `refused: …` or `network: …`; null for an answer. `deferred: …` on the last ' +
                'entry of a delivery that ended `failed` while its endpoint was deferred (it stalled ' +
                'lately): no POST was made then.',
            }),
          duration_ms: z.number(),
        }),
      )
      .meta({ description: `The attempts, oldest first (the newest ${WEBHOOK_LIMITS.maxHistory}).` }),
  })
  .meta({ id: 'WebhookDelivery' });

const DeliveryListSchema = z
  .object({
    items: z.array(DeliverySchema),
    next_cursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` for the next page; null at the end.' }),
  })
  .meta({ id: 'WebhookDeliveryList' });

const idParam = z.object({ id: z.string().meta({ description: 'The webhook endpoint id (`whe_…`).' }) });
const notFound = problem('No such webhook endpoint for this tenant.');

export const WEBHOOK_OPERATIONS: Record<WebhookRouteName, Operation> = {
  createWebhook: {
    summary: "Subscribe an endpoint to this tenant's events",
    request: { body: { content: json(CreateWebhookBodySchema), required: true } },
    responses: {
      201: jsonResponse('Created; `secret` is shown this once.', CreatedWebhookSchema, {
        headers: ['Location'],
      }),
      400: problem('Invalid request (a URL the policy refuses included): `errors` names each field.'),
      404: problem('Webhooks are not set up on this deployment.'),
      409: problem(`The tenant has ${WEBHOOK_LIMITS.maxEndpointsPerTenant} endpoints already.`),
    },
  },
  listWebhooks: {
    summary: "This tenant's webhook endpoints",
    responses: {
      200: { description: 'The endpoints.', content: json(WebhookListSchema) },
      400: problem('A query parameter (the listing takes none): `errors` names it.'),
      404: problem('Webhooks are not set up on this deployment.'),
    },
  },
  getWebhook: {
    summary: 'One webhook endpoint with its delivery counts',
    request: { params: idParam },
    responses: {
      200: { description: 'The endpoint.', content: json(WebhookWithCountsSchema) },
      404: notFound,
    },
  },
  deleteWebhook: {
    summary: 'Remove a webhook endpoint (its queued deliveries stop)',
    request: { params: idParam },
    responses: {
      200: { description: 'Removed.', content: json(z.object({ id: z.string(), deleted: z.literal(true) })) },
      404: notFound,
    },
  },
  testWebhook: {
    summary: 'Deliver a `webhook.test` event now',
    request: { params: idParam },
    responses: {
      202: { description: 'The delivery, queued.', content: json(DeliverySchema) },
      404: notFound,
    },
  },
  rotateWebhookSecret: {
    summary: 'A new signing secret; the previous one keeps signing beside it for 24 h',
    request: { params: idParam },
    responses: {
      200: jsonResponse('The new `secret`, shown this once.', RotatedWebhookSchema),
      404: notFound,
    },
  },
  listWebhookDeliveries: {
    summary: "An endpoint's deliveries and their attempts, newest first",
    request: {
      params: idParam,
      query: z.object({
        status: DeliveryStatusSchema.optional(),
        limit: z
          .int()
          .min(1)
          .max(WEBHOOK_LIMITS.listMax)
          .optional()
          .meta({ description: 'Deliveries per page.', default: WEBHOOK_LIMITS.listDefault }),
        cursor: z.string().optional().meta({
          description:
            "The previous page's `next_cursor`, with the same key (tenant, test or live), endpoint and `status`.",
        }),
      }),
    },
    responses: {
      200: { description: 'A page of deliveries.', content: json(DeliveryListSchema) },
      400: problem(
        'An invalid `status`, `limit` or `cursor`, or a parameter the listing does not take: `errors` names each.',
      ),
      404: notFound,
    },
  },
  retryWebhookDelivery: {
    summary: 'Deliver a failed delivery again (a new retry window)',
    description: `Takes a \`failed\` delivery, or a \`pending\` one whose \`next_attempt_at\` is more than ${WEBHOOK_STALLED_AFTER_MS / 3_600_000} hours past (its copy went to the webhook dead-letter queue or was lost).`,
    request: {
      params: idParam.extend({ delivery: z.string().meta({ description: 'The delivery id (`dlv_…`).' }) }),
    },
    responses: {
      202: { description: 'Pending again (rev + 1).', content: json(DeliverySchema) },
      404: problem('No such endpoint or delivery.'),
      409: problem(
        'The delivery is delivered, or pending and not long overdue; `delivery_status` says which, and `retryable_at` from when a pending one can be retried (null for a delivered one).',
      ),
    },
  },
};
