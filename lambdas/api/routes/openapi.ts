/** GET /openapi.json: the OpenAPI document, generated once per handler and then served as text. */
import { buildOpenApiDocument } from '../openapi.js';
import { rawJsonResult } from '../routeOutcome.js';
import type { RouteHandler } from './route.js';

export function openApiRoute(): RouteHandler {
  let document: string | undefined;
  return async function openApi() {
    document ??= JSON.stringify(buildOpenApiDocument());
    return rawJsonResult(200, document);
  };
}
