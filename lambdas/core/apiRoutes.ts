/**
 * The routes the api handler serves (DESIGN §3), as data: the OpenAPI document and its test are
 * checked against this list. A route either needs the authorizer's tenant or is public: `/health`
 * (the liveness probe) and `/openapi.json` (so Swagger UI and generators can fetch it, DESIGN §3).
 */

import { SUPPRESSION_ROUTES, type SuppressionRouteName } from './suppressionRoutes.js';
import { TEMPLATE_ROUTES, type TemplateRouteName } from './templateRoutes.js';
import { WEBHOOK_API_ROUTES, type WebhookRouteName } from './webhookApiRoutes.js';

export type RouteName =
  | SuppressionRouteName
  | 'enqueue'
  | 'list'
  | 'get'
  | 'reschedule'
  | 'cancel'
  | 'retry'
  | 'raiseGroup'
  | 'health'
  | 'openapi'
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
  { name: 'list', method: 'GET', path: '/v1/messages', authorized: true },
  { name: 'get', method: 'GET', path: '/v1/messages/{id}', authorized: true },
  { name: 'reschedule', method: 'PATCH', path: '/v1/messages/{id}', authorized: true },
  { name: 'cancel', method: 'DELETE', path: '/v1/messages/{id}', authorized: true },
  { name: 'retry', method: 'POST', path: '/v1/messages/{id}/retry', authorized: true },
  { name: 'raiseGroup', method: 'PUT', path: '/v1/groups/{key}', authorized: true },
  { name: 'health', method: 'GET', path: '/health', authorized: false },
  { name: 'openapi', method: 'GET', path: '/openapi.json', authorized: false },
  ...SUPPRESSION_ROUTES,
  ...TEMPLATE_ROUTES,
  ...WEBHOOK_API_ROUTES,
];

export type RouteResolution =
  | { readonly kind: 'matched'; readonly route: ApiRoute; readonly params: Readonly<Record<string, string>> }
  | { readonly kind: 'method-not-allowed'; readonly allow: readonly string[] }
  | { readonly kind: 'not-found' };

/**
 * Resolves a request. With explicit routes API Gateway has already matched (`routeKey` names one of
 * ours and `pathParameters` are decoded); behind a `$default` route the handler matches the path
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
      params[name] = segment;
    }
  }
  return params;
}
