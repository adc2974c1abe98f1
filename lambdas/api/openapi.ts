/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the same zod schemas that validate
 * requests (lambdas/core/requestSchemas.ts) with @asteasolutions/zod-to-openapi. Served at
 * GET /openapi.json; a test checks its paths and methods against API_ROUTES.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { API_ROUTES, type RouteName } from '../core/apiRoutes.js';
import { MESSAGE_STATUSES } from '../core/messageStatus.js';
import {
  EnqueueBodySchema,
  GroupKeySchema,
  GroupVersionBodySchema,
  RescheduleBodySchema,
} from '../core/requestSchemas.js';
import { WEBHOOK_OPERATIONS } from './openapi/webhookOperations.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';

const StatusSchema = z.enum(MESSAGE_STATUSES as [string, ...string[]]).meta({ id: 'MessageStatus' });

const LastErrorSchema = z
  .object({
    class: z.enum(['transient', 'permanent', 'config', 'ambiguous']),
    code: z.string().nullable(),
    enhanced_code: z.string().nullable(),
    message: z.string(),
  })
  .meta({ id: 'LastError' });

const AttemptSchema = z
  .object({
    at: z.string().meta({ format: 'date-time' }),
    outcome: z.enum(['sent', 'transient', 'permanent', 'config', 'ambiguous']),
    code: z.string().nullable(),
    enhanced_code: z.string().nullable(),
    reply: z.string().nullable(),
    duration_ms: z.number(),
    rejected_domains: z.array(z.string()).optional(),
  })
  .meta({ id: 'Attempt' });

const MessageSchema = z
  .object({
    id: z.string().meta({ example: '01JDQ1T8Z6J5V1Y5M6Z8K4W2QX' }),
    status: StatusSchema,
    send_at: z.string().meta({ format: 'date-time' }),
    not_after: z.string().meta({ format: 'date-time' }).nullable(),
    created_at: z.string().meta({ format: 'date-time' }),
    updated_at: z.string().meta({ format: 'date-time' }),
    attempts: z.int().meta({
      description: 'SMTP transactions in which the relay saw the message (not queue receives).',
    }),
    last_error: LastErrorSchema.nullable(),
    recipients: z
      .object({ accepted: z.int(), pending: z.int(), rejected: z.int(), suppressed: z.int() })
      .meta({
        description:
          'Recipients one by one: accepted by the relay (never sent again), pending (deferred with a 4xx, retried), rejected for good (5xx).',
      }),
    group: z.object({ key: z.string(), version: z.int() }).nullable(),
    tags: z.record(z.string(), z.string()),
    metadata: z.record(z.string(), z.string()),
    rev: z.int(),
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

const GroupHeadSchema = z
  .object({ key: z.string(), version: z.int(), updated_at: z.string().meta({ format: 'date-time' }) })
  .meta({ id: 'GroupHead' });

const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.int(),
    detail: z.string(),
    errors: z
      .array(
        z.object({
          field: z.string().meta({
            description:
              'A JSON Pointer into the body (`/to/2`), `body`, a header name or a query/path parameter.',
          }),
          message: z.string(),
        }),
      )
      .optional(),
    current_status: StatusSchema.optional().meta({
      description: 'On a 409: the status the message has now.',
    }),
  })
  .meta({ id: 'Problem' });

const json = (schema: z.ZodType) => ({ 'application/json': { schema } });
const problemResponse = (description: string) => ({
  description,
  content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } },
});
const idParam = z.object({ id: z.string().meta({ description: 'The message id.' }) });

type Operation = Pick<RouteConfig, 'summary' | 'request' | 'responses'>;

const common = {
  400: problemResponse('Invalid request: `errors` names each field.'),
  401: problemResponse('Missing or invalid API key.'),
};

/** One operation per route name; the test checks these against API_ROUTES. */
const OPERATIONS: Record<RouteName, Operation> = {
  enqueue: {
    summary: 'Enqueue a message',
    request: {
      headers: z.object({
        'Idempotency-Key': z
          .string()
          .min(1)
          .max(255)
          .meta({ description: '1–255 printable ASCII characters.' }),
      }),
      body: { content: json(EnqueueBodySchema), required: true },
    },
    responses: {
      202: { description: 'Accepted and stored.', content: json(MessageSchema) },
      200: {
        description:
          'A replay of the same key and body: the original message, header `Idempotent-Replayed: true`.',
        content: json(MessageSchema),
      },
      ...common,
      400: problemResponse(
        'Invalid request: `errors` names each field. A header that controls the relay (X-SES-*, X-SMTPAPI, …: see `headers`) is refused here.',
      ),
      413: problemResponse('The body is larger than 256 KiB.'),
      415: problemResponse('The body is not application/json.'),
      422: problemResponse('The Idempotency-Key was used with a different body.'),
    },
  },
  list: {
    summary: 'List messages, newest first',
    request: {
      query: z.object({
        status: StatusSchema.optional(),
        limit: z.string().optional().meta({ description: '1–100, default 20.' }),
        cursor: z.string().optional(),
      }),
    },
    responses: { 200: { description: 'A page of messages.', content: json(MessageListSchema) }, ...common },
  },
  get: {
    summary: 'Get a message with its attempt history',
    request: { params: idParam },
    responses: {
      200: { description: 'The message.', content: json(MessageSchema) },
      401: common[401],
      404: problemResponse('No such message for this tenant.'),
    },
  },
  reschedule: {
    summary: 'Reschedule a scheduled message',
    request: { params: idParam, body: { content: json(RescheduleBodySchema), required: true } },
    responses: {
      200: { description: 'Rescheduled (rev + 1).', content: json(MessageSchema) },
      ...common,
      404: problemResponse('No such message.'),
      409: problemResponse('The message is no longer scheduled.'),
    },
  },
  cancel: {
    summary: 'Cancel a scheduled or retrying message',
    request: { params: idParam },
    responses: {
      200: { description: 'Cancelled.', content: json(MessageSchema) },
      401: common[401],
      404: problemResponse('No such message.'),
      409: problemResponse('The message is sending or terminal.'),
    },
  },
  retry: {
    summary: 'Retry a failed, dead or unknown message',
    request: { params: idParam },
    responses: {
      202: { description: 'Scheduled again now (rev + 1).', content: json(MessageSchema) },
      401: common[401],
      404: problemResponse('No such message.'),
      409: problemResponse('The message is not failed, dead or unknown.'),
    },
  },
  raiseGroup: {
    summary: "Raise a group's version without sending",
    request: {
      params: z.object({ key: GroupKeySchema }),
      body: { content: json(GroupVersionBodySchema), required: true },
    },
    responses: {
      200: { description: 'The group head after the raise.', content: json(GroupHeadSchema) },
      ...common,
    },
  },
  health: {
    summary: 'Liveness (no authentication)',
    responses: { 200: { description: 'Alive.', content: json(z.object({ status: z.literal('ok') })) } },
  },
  openapi: {
    summary: 'This document',
    responses: { 200: { description: 'The OpenAPI 3.1 document.', content: json(z.object({}).loose()) } },
  },
  ...WEBHOOK_OPERATIONS,
};

/** Builds the OpenAPI 3.1 document (pure; the handler caches the result). */
export function buildOpenApiDocument(): ReturnType<OpenApiGeneratorV31['generateDocument']> {
  const registry = new OpenAPIRegistry();
  const bearer = registry.registerComponent('securitySchemes', 'apiKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'A Postdate API key: `Authorization: Bearer pd_…`.',
  });
  for (const route of API_ROUTES) {
    const operation = OPERATIONS[route.name];
    registry.registerPath({
      method: route.method.toLowerCase() as 'get' | 'post' | 'patch' | 'delete' | 'put',
      path: route.path,
      operationId: route.name,
      summary: operation.summary,
      security: route.authorized ? [{ [bearer.name]: [] }] : [],
      request: operation.request,
      responses: operation.responses,
    });
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Postdate',
      version: '1.0.0',
      description: 'Deferred transactional email that is never lost and never sent twice by accident.',
    },
  });
}
