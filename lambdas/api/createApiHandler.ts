/**
 * The HTTP API (DESIGN §3) as a function of its dependencies: API Gateway HTTP API payload 2.0 in,
 * structured result out. This is the router: it resolves the route (404, 405 with `Allow`), wants
 * the authorizer's tenant on an authorized route (401), runs the route's module (routes/*.ts), and
 * turns whatever a route throws into a problem (503 when a retry may succeed, else 500: failureProblem). Every error is
 * `application/problem+json`.
 *
 * Logs carry the route, the status, the tenant, the message id and problem types: never an
 * address, a subject, a body, a header value or the Idempotency-Key.
 */

import { type ApiRoute, type RouteName, resolveRoute } from '../core/apiRoutes.js';
import { errorForLog } from '../core/errorForLog.js';
import { problem } from '../core/problem.js';
import { createTemplateRenderer } from '../core/templateRenderer.js';
import type { ApiStore } from '../ports/ApiStore.js';
import type { AttachmentStore } from '../ports/AttachmentStore.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { Log } from '../ports/Log.js';
import type { TemplateStore } from '../ports/TemplateStore.js';
import {
  type ApiConfig,
  type ApiEvent,
  type ApiResult,
  failureProblem,
  jsonResult,
  type Outcome,
  problemResult,
  type RouteDependencies,
  type RouteHandler,
  rawJsonResult,
  tenantOf,
} from './route.js';
import { createAttachmentRoute } from './routes/attachments.js';
import { enqueueRoute } from './routes/enqueue.js';
import { enqueueBatchRoute } from './routes/enqueueBatch.js';
import {
  cancelMessageRoute,
  getMessageRoute,
  listMessagesRoute,
  raiseGroupRoute,
  rescheduleMessageRoute,
  retryMessageRoute,
} from './routes/messages.js';
import { suppressionRoutes } from './routes/suppressions.js';
import { templateRoutes } from './routes/templates.js';
import { type WebhookRouteDependencies, webhookRouteHandlers } from './routes/webhooks.js';

export type { ApiEvent, ApiResult, AuthorizerContext } from './route.js';

/** The few logger methods the handler uses (Powertools Logger satisfies it). */

export interface ApiHandlerDependencies {
  readonly store: ApiStore;
  /** Stored templates (DESIGN §10); the handler compiles each version once (a bounded cache). */
  readonly templates: TemplateStore;
  readonly config: ApiConfig;
  readonly now: () => Date;
  readonly random: () => number;
  readonly logger: Log;
  /** Waits between enqueue attempts after a contended transaction; defaults to a timer. */
  readonly sleep?: (milliseconds: number) => Promise<void>;
  /** The webhook routes' store and queue; without them those routes answer 404. */
  readonly webhooks?: WebhookRouteDependencies;
  /** The send queue, when the api puts an immediate message's copy itself (POSTDATE_API_IMMEDIATE_COPY). */
  readonly immediateCopies?: DispatchQueue;
  /** The attachments' bucket (DESIGN §13); without it an enqueue with attachments is refused. */
  readonly attachments?: AttachmentStore;
}

/**
 * GET /openapi.json: the OpenAPI document generated at build time (`npm run openapi` writes
 * docs/openapi.json from lib/openapi/; test/api/openapiDocument.test.ts fails when it is stale),
 * imported as JSON so that esbuild bundles it and the generator stays out of the function; imported
 * on the first request for it, so that code splitting keeps its 123 KB out of what a cold start loads
 * (decision 0114). Serialized once per handler and then served as text. It is public, and readable
 * from any origin so that Swagger UI in a browser can load it.
 */
function openApiRoute(): RouteHandler {
  let text: string | undefined;
  return async function openApi() {
    text ??= JSON.stringify((await import('../../docs/openapi.json', { with: { type: 'json' } })).default);
    const result = rawJsonResult(200, text);
    const headers = { ...result.response.headers, 'access-control-allow-origin': '*' };
    return { ...result, response: { ...result.response, headers } };
  };
}

/** The handlers by route name (GET /health answers without touching the store); the record's type makes a route of API_ROUTES without a module a type error. */
function routeHandlers(deps: RouteDependencies): Readonly<Record<RouteName, RouteHandler>> {
  return {
    health: async () => jsonResult(200, { status: 'ok' }),
    openapi: openApiRoute(),
    enqueue: enqueueRoute(deps),
    enqueueBatch: enqueueBatchRoute(deps),
    get: getMessageRoute(deps),
    list: listMessagesRoute(deps),
    reschedule: rescheduleMessageRoute(deps),
    cancel: cancelMessageRoute(deps),
    retry: retryMessageRoute(deps),
    raiseGroup: raiseGroupRoute(deps),
    createAttachment: createAttachmentRoute(deps),
    ...suppressionRoutes(deps),
    ...templateRoutes(deps),
    ...webhookRouteHandlers(deps.webhooks),
  };
}

export function createApiHandler(deps: ApiHandlerDependencies): (event: ApiEvent) => Promise<ApiResult> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const renderer = createTemplateRenderer((ref) =>
    deps.templates.getVersion(ref.tenant, ref.name, ref.version),
  );
  const routes = routeHandlers({ ...deps, sleep, renderer });

  return async function handleApiRequest(event: ApiEvent): Promise<ApiResult> {
    const method = event.requestContext?.http?.method ?? 'GET';
    const resolution = resolveRoute({
      method,
      routeKey: event.routeKey,
      path: event.rawPath ?? event.requestContext?.http?.path ?? '/',
      pathParameters: event.pathParameters,
    });
    if (resolution.kind === 'not-found') {
      return answer(null, null, problemResult(problem('notFound', 'No such route.')));
    }
    if (resolution.kind === 'method-not-allowed') {
      const allow = resolution.allow.join(', ');
      return answer(
        null,
        null,
        problemResult(problem('methodNotAllowed', `This path accepts ${allow}.`), { allow }),
      );
    }
    const { route, params } = resolution;
    const tenant = tenantOf(event);
    if (route.authorized && tenant === null) {
      return answer(route, null, problemResult(problem('unauthorized', 'A valid API key is required.')));
    }
    try {
      const result = await routes[route.name]({ tenant: tenant ?? '', params, event });
      return answer(route, tenant, result);
    } catch (error) {
      const failure = failureProblem(error, 'request');
      // Worth a retry (contention, AWS throttling or a timeout): the client is told when; the
      // operator sees a warning to count, not an error of ours.
      const retryable = failure.status === 503;
      deps.logger[retryable ? 'warn' : 'error'](retryable ? 'request unavailable' : 'request failed', {
        route: route.name,
        tenant,
        error: errorForLog(error),
      });
      return answer(route, tenant, problemResult(failure, retryable ? { 'retry-after': '1' } : {}));
    }
  };

  function answer(route: ApiRoute | null, tenant: string | null, result: Outcome): ApiResult {
    deps.logger.info('request', {
      route: route?.name ?? 'unmatched',
      tenant,
      status: result.statusCode,
      ...result.log,
    });
    return result.response;
  }
}
