/**
 * GET /openapi.json: the OpenAPI document generated at build time (`npm run openapi` writes
 * docs/openapi.json from lambdas/api/openapi.ts; test/api/openapiDocument.test.ts fails when it is
 * stale), imported as JSON so that esbuild inlines it and the generator stays out of the function
 * (issue 21: a lighter api bundle). Serialized once per handler and then served as text. It is
 * public, and readable from any origin so that Swagger UI in a browser can load it.
 */
import document from '../../../docs/openapi.json' with { type: 'json' };
import type { RouteHandler } from '../route.js';
import { rawJsonResult } from '../route.js';

export function openApiRoute(): RouteHandler {
  let text: string | undefined;
  return async function openApi() {
    text ??= JSON.stringify(document);
    const result = rawJsonResult(200, text);
    const headers = { ...result.response.headers, 'access-control-allow-origin': '*' };
    return { ...result, response: { ...result.response, headers } };
  };
}
