/**
 * The routes the api handler serves (DESIGN §3), as data, all in this one list: the handler's table,
 * the stack's routes, the local front end and the OpenAPI document (with its test) are all read from
 * it. A route either needs the authorizer's tenant or is public: `/health` (the liveness probe) and
 * `/openapi.json` (so Swagger UI and generators can fetch it, DESIGN §3).
 */

/** The suppression-list routes (DESIGN §12): their handlers are api/routes/suppressions.ts. */
export type SuppressionRouteName = 'listSuppressions' | 'putSuppression' | 'deleteSuppression';

/** The template routes (DESIGN §10): their handlers are api/routes/templates.ts. */
export type TemplateRouteName =
  | 'listTemplates'
  | 'putTemplate'
  | 'getTemplate'
  | 'archiveTemplate'
  | 'getTemplateVersion'
  | 'renderTemplate';

/** The webhook routes (DESIGN §11): their handlers are api/routes/webhooks.ts. */
export type WebhookRouteName =
  | 'createWebhook'
  | 'listWebhooks'
  | 'getWebhook'
  | 'deleteWebhook'
  | 'testWebhook'
  | 'rotateWebhookSecret'
  | 'listWebhookDeliveries'
  | 'retryWebhookDelivery';

export type RouteName =
  | 'enqueue'
  | 'enqueueBatch'
  | 'list'
  | 'get'
  | 'reschedule'
  | 'cancel'
  | 'retry'
  | 'raiseGroup'
  | 'createAttachment'
  | 'health'
  | 'openapi'
  | SuppressionRouteName
  | TemplateRouteName
  | WebhookRouteName;

export interface ApiRoute {
  readonly name: RouteName;
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';
  /** Path template in API Gateway / OpenAPI form: `/v1/messages/{id}`. */
  readonly path: string;
  /** Behind the Lambda authorizer (an API key); false: public, in the stack and the local front end alike. */
  readonly authorized: boolean;
}

export const API_ROUTES: readonly ApiRoute[] = [
  { name: 'enqueue', method: 'POST', path: '/v1/messages', authorized: true },
  { name: 'enqueueBatch', method: 'POST', path: '/v1/messages/batch', authorized: true },
  { name: 'list', method: 'GET', path: '/v1/messages', authorized: true },
  { name: 'get', method: 'GET', path: '/v1/messages/{id}', authorized: true },
  { name: 'reschedule', method: 'PATCH', path: '/v1/messages/{id}', authorized: true },
  { name: 'cancel', method: 'DELETE', path: '/v1/messages/{id}', authorized: true },
  { name: 'retry', method: 'POST', path: '/v1/messages/{id}/retry', authorized: true },
  { name: 'raiseGroup', method: 'PUT', path: '/v1/groups/{key}', authorized: true },
  { name: 'createAttachment', method: 'POST', path: '/v1/attachments', authorized: true },
  { name: 'health', method: 'GET', path: '/health', authorized: false },
  { name: 'openapi', method: 'GET', path: '/openapi.json', authorized: false },
  { name: 'listSuppressions', method: 'GET', path: '/v1/suppressions', authorized: true },
  { name: 'putSuppression', method: 'PUT', path: '/v1/suppressions/{address}', authorized: true },
  { name: 'deleteSuppression', method: 'DELETE', path: '/v1/suppressions/{address}', authorized: true },
  { name: 'listTemplates', method: 'GET', path: '/v1/templates', authorized: true },
  { name: 'putTemplate', method: 'PUT', path: '/v1/templates/{name}', authorized: true },
  { name: 'getTemplate', method: 'GET', path: '/v1/templates/{name}', authorized: true },
  { name: 'archiveTemplate', method: 'DELETE', path: '/v1/templates/{name}', authorized: true },
  {
    name: 'getTemplateVersion',
    method: 'GET',
    path: '/v1/templates/{name}/versions/{version}',
    authorized: true,
  },
  { name: 'renderTemplate', method: 'POST', path: '/v1/templates/{name}/render', authorized: true },
  { name: 'createWebhook', method: 'POST', path: '/v1/webhooks', authorized: true },
  { name: 'listWebhooks', method: 'GET', path: '/v1/webhooks', authorized: true },
  { name: 'getWebhook', method: 'GET', path: '/v1/webhooks/{id}', authorized: true },
  { name: 'deleteWebhook', method: 'DELETE', path: '/v1/webhooks/{id}', authorized: true },
  { name: 'testWebhook', method: 'POST', path: '/v1/webhooks/{id}/test', authorized: true },
  {
    name: 'rotateWebhookSecret',
    method: 'POST',
    path: '/v1/webhooks/{id}/rotate-secret',
    authorized: true,
  },
  { name: 'listWebhookDeliveries', method: 'GET', path: '/v1/webhooks/{id}/deliveries', authorized: true },
  {
    name: 'retryWebhookDelivery',
    method: 'POST',
    path: '/v1/webhooks/{id}/deliveries/{delivery}/retry',
    authorized: true,
  },
];

export type RouteResolution =
  | { readonly kind: 'matched'; readonly route: ApiRoute; readonly params: Readonly<Record<string, string>> }
  | { readonly kind: 'method-not-allowed'; readonly allow: readonly string[] }
  | { readonly kind: 'not-found' };

/**
 * Resolves a request. With explicit routes API Gateway has already matched (`routeKey` names one of
 * ours and `pathParameters` are decoded); behind a `$default` route the handler matches the raw path
 * itself, so an unknown path is a 404 and a known path with another method a 405 with `Allow`.
 */
export function resolveRoute(input: {
  method: string;
  routeKey: string | undefined;
  path: string;
  pathParameters: Readonly<Record<string, string | undefined>> | undefined;
}): RouteResolution {
  const method = input.method.toUpperCase();
  const byKey = API_ROUTES.find((route) => `${route.method} ${route.path}` === input.routeKey);
  if (byKey) {
    const params: Record<string, string> = {};
    for (const name of parameterNames(byKey.path)) {
      const value = input.pathParameters?.[name];
      if (value === undefined || value === '') return { kind: 'not-found' };
      params[name] = value;
    }
    return { kind: 'matched', route: byKey, params };
  }
  const candidates = API_ROUTES.map((route) => ({ route, params: matchPath(route.path, input.path) })).filter(
    (candidate): candidate is { route: ApiRoute; params: Record<string, string> } =>
      candidate.params !== null,
  );
  if (candidates.length === 0) return { kind: 'not-found' };
  // A literal segment beats a parameter (as in API Gateway).
  const sameMethod = candidates
    .filter((candidate) => candidate.route.method === method)
    .sort((a, b) => Object.keys(a.params).length - Object.keys(b.params).length)[0];
  if (sameMethod) return { kind: 'matched', route: sameMethod.route, params: sameMethod.params };
  return {
    kind: 'method-not-allowed',
    allow: [...new Set(candidates.map((candidate) => candidate.route.method))],
  };
}

function parameterNames(template: string): string[] {
  return [...template.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? '');
}

function matchPath(template: string, path: string): Record<string, string> | null {
  const pattern = template.split('/');
  const segments = path.split('/');
  if (pattern.length !== segments.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const part = pattern[i] ?? '';
    const segment = segments[i] ?? '';
    const name = /^\{(\w+)\}$/.exec(part)?.[1];
    if (name === undefined) {
      if (part !== segment) return null;
    } else {
      if (segment === '') return null;
      // Decoded, as API Gateway decodes `pathParameters` for an explicit route (a client escapes the
      // `@` and `+` of an address): the routes read one form whichever way they were matched.
      params[name] = decodedSegment(segment);
    }
  }
  return params;
}

/** A raw path segment percent-decoded; one with a malformed escape stays as it came. */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
