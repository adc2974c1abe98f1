import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../lambdas/api/openapi.js';
import { API_ROUTES } from '../../lambdas/core/apiRoutes.js';
import {
  EnqueueBodySchema,
  RELAY_CONTROL_HEADERS,
  RELAY_CONTROL_MESSAGE,
} from '../../lambdas/core/messageSchema.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent } from './events.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

describe('the OpenAPI document', () => {
  it('describes exactly the routes the handler serves', () => {
    const document = buildOpenApiDocument();
    const documented = Object.entries(document.paths ?? {})
      .flatMap(([path, item]) =>
        METHODS.filter((method) => (item as Record<string, unknown>)[method] !== undefined).map(
          (method) => `${method.toUpperCase()} ${path}`,
        ),
      )
      .sort();
    expect(documented).toEqual(API_ROUTES.map((route) => `${route.method} ${route.path}`).sort());
  });

  it('is OpenAPI 3.1 with the request schemas generated from the validating zod schemas', () => {
    const document = buildOpenApiDocument();
    expect(document.openapi).toBe('3.1.0');
    // Two forms (DESIGN §3, §10): exactly one of inline content or a template, together the fields
    // the validating schema knows.
    const schemas = document.components?.schemas ?? {};
    const enqueue = schemas.EnqueueRequest as { oneOf: { $ref: string }[] };
    expect(enqueue.oneOf.map((ref) => ref.$ref)).toEqual([
      '#/components/schemas/InlineEnqueueRequest',
      '#/components/schemas/TemplateEnqueueRequest',
    ]);
    const forms = ['InlineEnqueueRequest', 'TemplateEnqueueRequest'].map(
      (name) => schemas[name] as { properties: Record<string, unknown>; additionalProperties: unknown },
    );
    const documented = new Set(forms.flatMap((form) => Object.keys(form.properties)));
    expect([...documented].sort()).toEqual(Object.keys(EnqueueBodySchema.shape).sort());
    expect(Object.keys(forms[0]?.properties ?? {})).not.toContain('template');
    expect(Object.keys(forms[1]?.properties ?? {})).not.toContain('subject');
    // Strict objects: unknown fields are rejected, and the document says so.
    for (const form of forms) expect(form.additionalProperties).toBe(false);
  });

  it('describes the refusal of every relay-control header, on the headers field and the 400', () => {
    const document = buildOpenApiDocument();
    const enqueue = document.components?.schemas?.InlineEnqueueRequest as {
      properties: Record<string, { description?: string }>;
    };
    const description = enqueue.properties.headers?.description ?? '';
    expect(description).toContain(RELAY_CONTROL_MESSAGE);
    for (const name of RELAY_CONTROL_HEADERS.names) expect(description).toContain(name);
    for (const prefix of RELAY_CONTROL_HEADERS.prefixes) expect(description).toContain(`${prefix}*`);
    const enqueueItem = (document.paths?.['/v1/messages'] ?? {}) as Record<
      string,
      { responses?: Record<string, { description?: string }> }
    >;
    expect(enqueueItem.post?.responses?.['400']?.description).toContain('relay');
  });

  it('marks every route but /health as needing the API key', () => {
    const document = buildOpenApiDocument();
    for (const route of API_ROUTES) {
      const item = (document.paths?.[route.path] ?? {}) as Record<string, { security?: unknown[] }>;
      const operation = item[route.method.toLowerCase()];
      expect(operation?.security?.length ?? 0, route.name).toBe(route.authorized ? 1 : 0);
    }
  });

  it('is served at GET /openapi.json', async () => {
    const api = await apiHarness();
    const response = await api.call(
      apiEvent({ method: 'GET', path: '/openapi.json', routeKey: 'GET /openapi.json' }),
    );
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.json).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument())));
  });
});
