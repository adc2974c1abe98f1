/**
 * The pieces of the OpenAPI document that every group of operations shares: the problem and the
 * gateway-error bodies, the response headers, and small builders (`json`, `problemResponse`). A
 * feature's operations (`lib/openapi/<feature>Operations.ts`) import these and are spread into
 * `OPERATIONS` (lib/openapi/openApiDocument.ts); the answers every route can give (401, 403, 429, 5xx, and the
 * body errors of a route with a JSON body) are added there, so an operation lists only its own.
 */
import type { ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
import * as z from 'zod';
import { messageIdFor } from '../../lambdas/core/ids.js';
import { MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import { PROBLEM_CONTENT_TYPE } from '../../lambdas/core/problem.js';

export type { ResponseConfig } from '@asteasolutions/zod-to-openapi';

/** What an operation declares: the route's method, path and security come from API_ROUTES. */
export interface Operation extends Pick<RouteConfig, 'summary' | 'description' | 'request'> {
  readonly responses: Responses;
}

/** Responses by status code (`'200'`, `'404'`, …). */
export type Responses = Record<string, ResponseConfig>;

type HeaderName = 'Location' | 'Idempotent-Replayed' | 'Retry-After' | 'Access-Control-Allow-Origin';

interface HeaderDeclaration {
  readonly description: string;
  readonly required: boolean;
  readonly schema: { type: 'string'; enum?: string[]; pattern?: string; example?: string };
}

/**
 * A real message id, as the API makes them (lambdas/core/ids.ts): the one tenant `local` (the key
 * `npm start` seeds) gets for the docs' Idempotency-Key `campaign-42-approved`.
 */
export const EXAMPLE_MESSAGE_ID = messageIdFor('local', 'campaign-42-approved');

export const StatusSchema = z.enum(MESSAGE_STATUSES as [string, ...string[]]).meta({ id: 'MessageStatus' });

/** RFC 9457: the body of every error Postdate's function answers. Extension members are allowed. */
export const ProblemSchema = z
  .object({
    type: z.string().meta({ description: 'A URN naming the problem (docs/api.md, "Errors").' }),
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
  .meta({
    id: 'Problem',
    description: 'An RFC 9457 problem (`application/problem+json`).',
    example: {
      type: 'urn:postdate:problem:validation',
      title: 'The request is invalid',
      status: 400,
      detail: 'One field is invalid: /to/0.',
      errors: [{ field: '/to/0', message: 'must be an email address (local@domain)' }],
    },
  });

/**
 * The body of an answer API Gateway gives itself, before or instead of the function: a missing
 * key (401), a denied key (403), the stage's throttle (429), a body over 10 MB (413), the function
 * failing or timing out (500, 503). It is `application/json`, not a problem.
 */
export const GatewayErrorSchema = z.object({ message: z.string() }).meta({
  id: 'GatewayError',
  description:
    'An answer of API Gateway itself (not of Postdate\'s function): `{"message": "Unauthorized"}`, `"Forbidden"`, `"Too Many Requests"`, `"Request Entity Too Large"`, `"Internal Server Error"`, `"Service Unavailable"`, `"Not Found"`.',
  example: { message: 'Unauthorized' },
});

export const json = (schema: z.ZodType) => ({ 'application/json': { schema } });

/** The response headers Postdate sends, each declared once and referenced where it is sent. */
export const RESPONSE_HEADERS: Readonly<Record<HeaderName, HeaderDeclaration>> = {
  Location: {
    description:
      'The resource the answer is about: `/v1/messages/{id}`, a template version `/v1/templates/{name}/versions/{version}`, or a webhook endpoint `/v1/webhooks/{id}`.',
    required: true,
    schema: { type: 'string', example: `/v1/messages/${EXAMPLE_MESSAGE_ID}` },
  },
  'Idempotent-Replayed': {
    description: 'Present, `true`, when this answers a replay of an earlier request with the same key.',
    required: true,
    schema: { type: 'string', enum: ['true'] },
  },
  'Retry-After': {
    description:
      "Seconds to wait before retrying (sent with the function's own 503; the gateway's 503 and 429 do not send it).",
    required: false,
    schema: { type: 'string', pattern: '^[0-9]+$', example: '1' },
  },
  'Access-Control-Allow-Origin': {
    description: 'Any origin may read the document (Swagger UI in a browser, generators).',
    required: true,
    schema: { type: 'string', enum: ['*'] },
  },
};

/** A response whose body is a problem; `headers` are names of RESPONSE_HEADERS. */
export function problemResponse(
  description: string,
  options: { headers?: readonly HeaderName[] } = {},
): ResponseConfig {
  return {
    description,
    ...(options.headers ? { headers: headersOf(options.headers) } : {}),
    content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } },
  };
}

/** A JSON response; `headers` are names of RESPONSE_HEADERS. */
export function jsonResponse(
  description: string,
  schema: z.ZodType,
  options: { headers?: readonly HeaderName[] } = {},
): ResponseConfig {
  return {
    description,
    ...(options.headers ? { headers: headersOf(options.headers) } : {}),
    content: json(schema),
  };
}

/** Fresh copies (the generator must not share one object between responses). */
export function headersOf(names: readonly HeaderName[]): NonNullable<ResponseConfig['headers']> {
  return Object.fromEntries(
    names.map((name) => [name, { ...RESPONSE_HEADERS[name], schema: { ...RESPONSE_HEADERS[name].schema } }]),
  );
}
