/**
 * GET /openapi.json: the OpenAPI document, generated once per handler and then served as text. It
 * is public, and readable from any origin so that Swagger UI in a browser can load it.
 */
import { buildOpenApiDocument } from '../openapi.js';
import { rawJsonResult } from '../routeOutcome.js';
import type { RouteHandler } from './route.js';

export function openApiRoute(): RouteHandler {
  let document: string | undefined;
  return async function openApi() {
    document ??= JSON.stringify(buildOpenApiDocument());
    const result = rawJsonResult(200, document);
    const headers = { ...result.response.headers, 'access-control-allow-origin': '*' };
    return { ...result, response: { ...result.response, headers } };
  };
}
