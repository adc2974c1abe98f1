import { API_ROUTES } from '../../lambdas/core/apiRoutes.js';

/**
 * The routes of the HTTP API (DESIGN §3) as API Gateway HTTP API route keys. API Gateway matches a
 * request to one of them (a literal segment beats a `{param}`), invokes the Lambda authorizer for
 * every route that needs it, and answers 404 `{"message":"Not Found"}` itself when nothing matches.
 */
export interface HttpRoute {
  /** `METHOD /path/{param}`, exactly as API Gateway puts it in `routeKey`. */
  readonly routeKey: string;
  /** Whether the Lambda authorizer guards the route. */
  readonly authorized: boolean;
}

/** The api handler's own route table (lambdas/api/apiRoutes.ts), as API Gateway route keys. */
export const HTTP_ROUTES: readonly HttpRoute[] = API_ROUTES.map((route) => ({
  routeKey: `${route.method} ${route.path}`,
  authorized: route.authorized,
}));

export interface RouteMatch {
  readonly route: HttpRoute;
  /** Decoded path parameters; absent when the route has none (as in the real event). */
  readonly pathParameters: Record<string, string> | undefined;
}

/** Finds the route for a method and an encoded path; a literal segment wins over a parameter. */
export function matchRoute(
  method: string,
  encodedPath: string,
  routes: readonly HttpRoute[] = HTTP_ROUTES,
): RouteMatch | undefined {
  const segments = encodedPath.split('/').slice(1);
  let best: { match: RouteMatch; literals: number } | undefined;
  for (const route of routes) {
    const [routeMethod, routePath = ''] = route.routeKey.split(' ');
    if (routeMethod !== method.toUpperCase()) continue;
    const pattern = routePath.split('/').slice(1);
    if (pattern.length !== segments.length) continue;
    const parameters: Record<string, string> = {};
    let literals = 0;
    const matches = pattern.every((part, index) => {
      const segment = segments[index] ?? '';
      const parameter = /^\{(\w+)\}$/.exec(part)?.[1];
      if (parameter === undefined) {
        literals += 1;
        return part === segment;
      }
      if (segment === '') return false;
      parameters[parameter] = safeDecode(segment);
      return true;
    });
    if (!matches || (best && best.literals >= literals)) continue;
    const pathParameters = Object.keys(parameters).length > 0 ? parameters : undefined;
    best = { match: { route, pathParameters }, literals };
  }
  return best?.match;
}

/** `decodeURIComponent` that keeps a malformed escape as it came. */
export function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
