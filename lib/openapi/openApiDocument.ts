/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the same zod schemas that validate
 * requests (lambdas/core/messageSchema.ts) with @asteasolutions/zod-to-openapi. Served at
 * GET /openapi.json and committed as docs/openapi.json (`npm run openapi`); the API tests validate
 * every answer they receive against it (test/api/apiHarness.ts).
 *
 * Each feature's operations live in lib/openapi/<feature>Operations.ts and are spread into
 * OPERATIONS. The answers that do not depend on the operation are added here, per route: the
 * gateway's own (401/403 on a route behind the authorizer, 429, 500, 503, 413 over 10 MB), the
 * function's failures (500, 503 with Retry-After) and, on a route with a JSON body, its 400/413/415.
 * Its `webhooks` are the events an endpoint receives (lib/openapi/webhookEvents.ts).
 */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import * as z from 'zod';
import { API_ROUTES, type ApiRoute, type RouteName } from '../../lambdas/core/apiRoutes.js';
import { CONFIG_SETTINGS } from '../../lambdas/core/configSpec.js';
import { PROBLEM_CONTENT_TYPE } from '../../lambdas/core/problem.js';
import { LIMITS } from '../../lambdas/core/requestLimits.js';
import { ATTACHMENT_OPERATIONS } from './attachmentOperations.js';
import {
  GatewayErrorSchema,
  headersOf,
  json,
  jsonResponse,
  type Operation,
  ProblemSchema,
  problemResponse,
  type ResponseConfig,
  type Responses,
} from './components.js';
import { MESSAGE_OPERATIONS } from './messageOperations.js';
import { SUPPRESSION_OPERATIONS } from './suppressionOperations.js';
import { TEMPLATE_OPERATIONS } from './templatesOperations.js';
import { registerWebhookEvents } from './webhookEvents.js';
import { WEBHOOK_OPERATIONS } from './webhookOperations.js';

export {
  EXAMPLE_MESSAGE_ID,
  type Operation,
  problemResponse,
} from './components.js';

/** One operation per route name; the test checks these against API_ROUTES. */
const OPERATIONS: Record<RouteName, Operation> = {
  ...MESSAGE_OPERATIONS,
  ...ATTACHMENT_OPERATIONS,
  health: {
    summary: 'Liveness (no authentication)',
    responses: { 200: { description: 'Alive.', content: json(z.object({ status: z.literal('ok') })) } },
  },
  openapi: {
    summary: 'This document',
    responses: {
      200: jsonResponse('The OpenAPI 3.1 document.', z.object({}).loose(), {
        headers: ['Access-Control-Allow-Origin'],
      }),
    },
  },
  ...SUPPRESSION_OPERATIONS,
  ...TEMPLATE_OPERATIONS,
  ...WEBHOOK_OPERATIONS,
};

const gateway = { 'application/json': { schema: GatewayErrorSchema } };
const problemBody = { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } };

/** The answers of a route that its operation does not list itself. */
function platformResponses(route: ApiRoute, operation: Operation): Responses {
  const withBody = operation.request?.body !== undefined;
  return {
    ...(withBody
      ? {
          400: problemResponse('The body is empty, not UTF-8 or not JSON, or a field is invalid.'),
          413: {
            description: `The body is larger than ${LIMITS.maxBodyBytes / 1024} KiB (a problem), or than API Gateway's 10 MB (\`{"message": "Request Entity Too Large"}\`).`,
            content: { ...problemBody, ...gateway },
          },
          415: problemResponse('The body is not `application/json` (UTF-8).'),
        }
      : {}),
    ...(route.authorized
      ? {
          401: {
            description:
              'No `Authorization` header: API Gateway answers `{"message": "Unauthorized"}` without calling the authorizer. A problem (`urn:postdate:problem:unauthorized`) only if the function is reached without the authorizer\'s tenant.',
            content: { ...gateway, ...problemBody },
          },
          403: {
            description:
              'The authorizer denied the key (unknown, revoked or malformed): API Gateway answers `{"message": "Forbidden"}`.',
            content: gateway,
          },
        }
      : {}),
    429: {
      description: 'The stage\'s throttle: API Gateway answers `{"message": "Too Many Requests"}`.',
      content: gateway,
    },
    500: {
      description:
        'Something failed on our side: a problem (`urn:postdate:problem:internal`) from the function, or `{"message": "Internal Server Error"}` from API Gateway when the function or the authorizer failed.',
      content: { ...problemBody, ...gateway },
    },
    503: {
      description:
        'Try again: a problem (`urn:postdate:problem:unavailable`, with `Retry-After`) from the function, or `{"message": "Service Unavailable"}` from API Gateway when the function timed out.',
      headers: headersOf(['Retry-After']),
      content: { ...problemBody, ...gateway },
    },
  };
}

/** The operation's own answers, completed: its description wins, the media types and headers add up. */
function allResponses(route: ApiRoute, operation: Operation): Responses {
  const merged: Record<string, ResponseConfig> = { ...operation.responses };
  for (const [status, added] of Object.entries(platformResponses(route, operation))) {
    const own = merged[status];
    merged[status] = own
      ? {
          ...added,
          ...own,
          // The document's versions (3.0/3.1/3.2) each have a HeadersObject; the union of two is one of them.
          headers: { ...plainHeaders(added.headers), ...plainHeaders(own.headers) } as HeadersObject,
          content: { ...added.content, ...own.content },
        }
      : added;
  }
  return merged;
}

type HeadersObject = Exclude<NonNullable<ResponseConfig['headers']>, z.ZodObject>;

function plainHeaders(headers: ResponseConfig['headers']): HeadersObject {
  if (headers instanceof z.ZodObject) throw new TypeError('declare response headers with headersOf()');
  return headers ?? {};
}

/** Where the API answers: the local stack (`npm start`) and a deployed stack's `ApiUrl`. */
const SERVERS: { url: string; description: string; variables: Record<string, { default: string }> }[] = [
  {
    url: 'http://127.0.0.1:{port}',
    description: 'The local stack (`npm start`; POSTDATE_PORT).',
    variables: { port: { default: String(CONFIG_SETTINGS.port.local) } },
  },
  {
    url: 'https://{apiId}.execute-api.{region}.amazonaws.com',
    description: "A deployed stack: its `ApiUrl` output (the HTTP API's `$default` stage).",
    variables: { apiId: { default: 'abc123defg' }, region: { default: 'us-east-1' } },
  },
];

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
      ...(operation.description ? { description: operation.description } : {}),
      security: route.authorized ? [{ [bearer.name]: [] }] : [],
      request: operation.request,
      responses: allResponses(route, operation),
    });
  }
  registerWebhookEvents(registry);
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Postdate',
      version: '1.0.0',
      description:
        'Deferred transactional email that is never lost and never sent twice by accident.\n\nErrors of the service are RFC 9457 problems (`application/problem+json`); answers API Gateway gives itself (a missing or denied key, throttling, a failed function) are `{"message": …}` (`application/json`). A path or method not listed here answers 404 `{"message": "Not Found"}` from API Gateway.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: SERVERS,
  });
}
