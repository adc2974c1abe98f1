/**
 * The OpenAPI operations of the webhook routes (DESIGN §3, §11), spread into OPERATIONS
 * (lambdas/api/openapi.ts). Request schemas are the validating ones (core/webhooks.ts).
 */
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { EVENT_TYPES } from '../../core/messageEvents.js';
import type { WebhookRouteName } from '../../core/webhookApiRoutes.js';
import { CreateWebhookBodySchema, WEBHOOK_DELIVERY_STATUSES, WEBHOOK_LIMITS } from '../../core/webhooks.js';
import { PROBLEM_CONTENT_TYPE } from '../problem.js';

type Operation = Pick<RouteConfig, 'summary' | 'request' | 'responses'>;

const json = (schema: z.ZodType) => ({ 'application/json': { schema } });
const problem = (description: string) => ({
  description,
  content: {
    [PROBLEM_CONTENT_TYPE]: {
      schema: z.object({ type: z.string(), title: z.string(), status: z.number() }).loose(),
    },
  },
});

const EventTypeSchema = z.enum(EVENT_TYPES as [string, ...string[]]).meta({ id: 'EventType' });
const DeliveryStatusSchema = z
  .enum(WEBHOOK_DELIVERY_STATUSES as [string, ...string[]])
  .meta({ id: 'WebhookDeliveryStatus' });

const WebhookSchema = z
  .object({
    id: z.string().meta({ example: 'whe_01JE0000000000000000000000' }),
    url: z.string(),
    events: z.array(EventTypeSchema).nullable().meta({ description: 'null: every event type.' }),
    description: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'Webhook' });

const CreatedWebhookSchema = WebhookSchema.extend({
  secret: z.string().meta({ description: 'The signing secret, `whsec_…`: shown here once, never again.' }),
}).meta({ id: 'CreatedWebhook' });

const WebhookWithCountsSchema = WebhookSchema.extend({
  deliveries: z.object({ pending: z.number(), delivered: z.number(), failed: z.number() }),
}).meta({ id: 'WebhookWithCounts' });

const DeliverySchema = z
  .object({
    id: z.string(),
    webhook_id: z.string(),
    event_id: z.string(),
    event_type: EventTypeSchema,
    status: DeliveryStatusSchema,
    attempts: z.number(),
    next_attempt_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    delivered_at: z.string().nullable(),
    history: z.array(
      z.object({
        at: z.string(),
        status_code: z.number().nullable(),
        error: z
          .string()
          .nullable()
          .meta({ description: '`timeout`, `refused: …` or `network: …`; null for an answer.' }),
        duration_ms: z.number(),
      }),
    ),
  })
  .meta({ id: 'WebhookDelivery' });

const idParam = z.object({ id: z.string().meta({ description: 'The webhook endpoint id.' }) });
const unauthorized = problem('Missing or invalid API key.');
const notFound = problem('No such webhook endpoint for this tenant.');

export const WEBHOOK_OPERATIONS: Record<WebhookRouteName, Operation> = {
  createWebhook: {
    summary: "Subscribe an endpoint to this tenant's events",
    request: { body: { content: json(CreateWebhookBodySchema), required: true } },
    responses: {
      201: { description: 'Created; `secret` is shown this once.', content: json(CreatedWebhookSchema) },
      400: problem('Invalid request (a URL the policy refuses included): `errors` names each field.'),
      401: unauthorized,
      409: problem(`The tenant has ${WEBHOOK_LIMITS.maxEndpointsPerTenant} endpoints already.`),
    },
  },
  listWebhooks: {
    summary: "This tenant's webhook endpoints",
    responses: {
      200: { description: 'The endpoints.', content: json(z.object({ items: z.array(WebhookSchema) })) },
      401: unauthorized,
    },
  },
  getWebhook: {
    summary: 'One webhook endpoint with its delivery counts',
    request: { params: idParam },
    responses: {
      200: { description: 'The endpoint.', content: json(WebhookWithCountsSchema) },
      401: unauthorized,
      404: notFound,
    },
  },
  deleteWebhook: {
    summary: 'Remove a webhook endpoint (its queued deliveries stop)',
    request: { params: idParam },
    responses: {
      200: { description: 'Removed.', content: json(z.object({ id: z.string(), deleted: z.literal(true) })) },
      401: unauthorized,
      404: notFound,
    },
  },
  testWebhook: {
    summary: 'Deliver a `webhook.test` event now',
    request: { params: idParam },
    responses: {
      202: { description: 'The delivery, queued.', content: json(DeliverySchema) },
      401: unauthorized,
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
          .string()
          .optional()
          .meta({ description: `1–${WEBHOOK_LIMITS.listMax}, default ${WEBHOOK_LIMITS.listDefault}.` }),
        cursor: z.string().optional(),
      }),
    },
    responses: {
      200: {
        description: 'A page of deliveries.',
        content: json(z.object({ items: z.array(DeliverySchema), next_cursor: z.string().nullable() })),
      },
      400: problem('Invalid query: `errors` names each field.'),
      401: unauthorized,
      404: notFound,
    },
  },
  retryWebhookDelivery: {
    summary: 'Deliver a failed delivery again (a new retry window)',
    request: {
      params: idParam.extend({ delivery: z.string().meta({ description: 'The delivery id.' }) }),
    },
    responses: {
      202: { description: 'Pending again (rev + 1).', content: json(DeliverySchema) },
      401: unauthorized,
      404: problem('No such endpoint or delivery.'),
      409: problem('The delivery is not failed.'),
    },
  },
};
