import { afterEach, describe, expect, it } from 'vitest';
import { createAuthorizerHandler } from '../../lambdas/authorizer/createAuthorizerHandler.js';
import { API_ROUTES } from '../../lambdas/core/apiRoutes.js';
import { isMessageId, messageIdFor } from '../../lambdas/core/ids.js';
import {
  EnqueueBodySchema,
  RELAY_CONTROL_HEADERS,
  RELAY_CONTROL_MESSAGE,
} from '../../lambdas/core/messageSchema.js';
import { buildOpenApiDocument, EXAMPLE_MESSAGE_ID } from '../../lib/openapi/openApiDocument.js';
import { type HttpFrontEnd, startHttpFrontEnd } from '../../local/http/httpFrontEnd.js';
import { assertDocumentedResponse } from '../support/openApiResponses.js';
import { apiHarness, documentedResponseCheck } from './apiHarness.js';
import { apiEvent, validBody } from './events.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

type Json = Record<string, unknown>;

/** The served document as plain JSON. */
const served = JSON.parse(JSON.stringify(buildOpenApiDocument())) as { paths: Record<string, Json> };

/** The operation of a route in the document. */
function operationOf(routeKey: string): Json {
  const [method = '', path = ''] = routeKey.split(' ');
  const operation = served.paths[path]?.[method.toLowerCase()];
  if (operation === undefined) throw new Error(`no operation ${routeKey}`);
  return operation as Json;
}

function responseOf(routeKey: string, status: number) {
  const responses = operationOf(routeKey).responses as Record<string, Json>;
  return responses[String(status)] as
    | { content?: Record<string, unknown>; headers?: Record<string, { required?: boolean }> }
    | undefined;
}

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

  it('marks every route but /health and /openapi.json as needing the API key', () => {
    expect(API_ROUTES.filter((route) => !route.authorized).map((route) => route.name)).toEqual([
      'health',
      'openapi',
    ]);
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

describe('the OpenAPI document tells the truth about the answers (issue 17 §3)', () => {
  const running: HttpFrontEnd[] = [];
  afterEach(async () => {
    while (running.length > 0) await running.pop()?.stop();
  });

  it("documents 401 and 403 as API Gateway's {message} on every authorized route, and 429/500/503 everywhere", () => {
    for (const route of API_ROUTES) {
      const key = `${route.method} ${route.path}`;
      for (const status of route.authorized ? [401, 403] : []) {
        expect(Object.keys(responseOf(key, status)?.content ?? {}), `${key} ${status}`).toContain(
          'application/json',
        );
      }
      if (!route.authorized) expect(responseOf(key, 401), key).toBeUndefined();
      expect(Object.keys(responseOf(key, 429)?.content ?? {}), key).toEqual(['application/json']);
      for (const status of [500, 503]) {
        expect(Object.keys(responseOf(key, status)?.content ?? {}).sort(), `${key} ${status}`).toEqual([
          'application/json',
          'application/problem+json',
        ]);
      }
      expect(responseOf(key, 503)?.headers?.['Retry-After']?.required, key).toBe(false);
    }
  });

  it('documents 400, 413 and 415 on every route that reads a JSON body', () => {
    const withBody = API_ROUTES.filter((route) => operationOf(`${route.method} ${route.path}`).requestBody);
    expect(withBody.map((route) => route.name).sort()).toEqual(
      expect.arrayContaining(['enqueue', 'raiseGroup', 'reschedule']),
    );
    for (const route of withBody) {
      const key = `${route.method} ${route.path}`;
      for (const status of [400, 413, 415])
        expect(responseOf(key, status)?.content, `${key} ${status}`).toHaveProperty([
          'application/problem+json',
        ]);
    }
  });

  it('declares Location on the enqueue answers and Idempotent-Replayed on the replay', () => {
    expect(responseOf('POST /v1/messages', 202)?.headers?.Location?.required).toBe(true);
    expect(responseOf('POST /v1/messages', 200)?.headers?.Location?.required).toBe(true);
    expect(responseOf('POST /v1/messages', 200)?.headers?.['Idempotent-Replayed']?.required).toBe(true);
  });

  it('describes a key given twice in one batch as two single enqueues in order (DESIGN §3a), not a 400', () => {
    const description = String(operationOf('POST /v1/messages/batch').description);
    expect(description).not.toMatch(/key already given earlier in the same batch is a 400/);
    expect(description).toMatch(/twice in one batch/);
    expect(description).toMatch(/200 replayed/);
    expect(description).toMatch(/422/);
  });

  it("gives a batch result the Message and Problem components themselves, and an example whose fields are the batch's (/messages/3/…)", () => {
    const schemas = (served as unknown as { components: { schemas: Record<string, Json> } }).components
      .schemas;
    const result = schemas.BatchResult as { properties: Record<string, Json>; example?: Json };
    expect(result.properties.message).toEqual({ $ref: '#/components/schemas/Message' });
    expect(result.properties.problem).toEqual({ $ref: '#/components/schemas/Problem' });
    const example = result.example as { index: number; problem: { detail: string; errors: Json[] } };
    const fields = example.problem.errors.map((error) => String(error.field));
    expect(fields.every((field) => field.startsWith(`/messages/${example.index}/`))).toBe(true);
    expect(example.problem.detail).toContain(fields[0]);
  });

  it("describes the enqueue's 413 as DESIGN §3 and §13 bound it: the body beside inline attachments, their total, the whole message", () => {
    const tooLarge = responseOf('POST /v1/messages', 413) as { description?: string } | undefined;
    const description = tooLarge?.description ?? '';
    expect(description).toMatch(/inline attachments/);
    expect(description).toContain('POSTDATE_INLINE_ATTACHMENT_MAX_KB');
    expect(description).toContain('POSTDATE_MAX_MESSAGE_MB');
    expect(String(operationOf('POST /v1/messages').description)).not.toMatch(
      /A body over 256 KiB is a 413\./,
    );
  });

  it("describes every count of a message's recipients, suppressed included (DESIGN §3, §12)", () => {
    const schemas = (buildOpenApiDocument().components?.schemas ?? {}) as Record<string, Json>;
    const properties = (schemas.Message?.properties ?? {}) as Record<string, { description?: string }>;
    const recipients = properties.recipients;
    for (const count of ['accepted', 'pending', 'rejected', 'suppressed'])
      expect(recipients?.description).toContain(count);
  });

  it('has limit as an integer from 1 to 100 (default 20)', () => {
    const parameters = operationOf('GET /v1/messages').parameters as { name: string; schema: Json }[];
    expect(parameters.find((parameter) => parameter.name === 'limit')?.schema).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 20,
    });
  });

  it('gives a real message id as the example: the id tenant local gets for the docs key', () => {
    expect(EXAMPLE_MESSAGE_ID).toBe(messageIdFor('local', 'campaign-42-approved'));
    expect(isMessageId(EXAMPLE_MESSAGE_ID)).toBe(true);
    const document = JSON.parse(JSON.stringify(buildOpenApiDocument())) as {
      components: { schemas: { Message: { properties: { id: { example: string; pattern: string } } } } };
    };
    const id = document.components.schemas.Message.properties.id;
    expect(id.example).toBe(EXAMPLE_MESSAGE_ID);
    expect(new RegExp(id.pattern).test(EXAMPLE_MESSAGE_ID)).toBe(true);
  });

  it('names the servers: the local stack on its default port and a deployed stack', () => {
    const servers = buildOpenApiDocument().servers ?? [];
    expect(servers[0]).toMatchObject({
      url: 'http://127.0.0.1:{port}',
      variables: { port: { default: '3000' } },
    });
    expect(servers[1]?.url).toBe('https://{apiId}.execute-api.{region}.amazonaws.com');
  });

  it('is served without a key, by the handler and by the local front end (which never asks the authorizer)', async () => {
    const api = await apiHarness();
    const direct = await api.call(apiEvent({ method: 'GET', path: '/openapi.json', tenant: null }));
    expect(direct.status).toBe(200);

    let authorizerCalls = 0;
    const frontEnd = await startHttpFrontEnd({
      port: 0,
      api: (event) => api.handle(event as Parameters<typeof api.handle>[0]),
      authorizer: async () => {
        authorizerCalls += 1;
        return { isAuthorized: false };
      },
    });
    running.push(frontEnd);
    const response = await fetch(`${frontEnd.url}/openapi.json`, {
      headers: { origin: 'https://editor.example' },
    });
    expect(response.status).toBe(200);
    // A browser on another origin (Swagger UI) may read it: a simple GET needs no preflight.
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument())));
    expect(authorizerCalls).toBe(0);
  });

  it('answers like API Gateway when the key is missing (401) or denied (403), as the document says', async () => {
    const api = await apiHarness();
    const authorizer = createAuthorizerHandler({
      lookup: async () => null,
      now: () => new Date(),
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
    });
    const frontEnd = await startHttpFrontEnd({
      port: 0,
      api: (event) => api.handle(event as Parameters<typeof api.handle>[0]),
      authorizer,
    });
    running.push(frontEnd);
    const check = documentedResponseCheck();
    const answers: { path: string; headers: Record<string, string>; status: number; message: string }[] = [
      { path: '/v1/messages', headers: {}, status: 401, message: 'Unauthorized' },
      {
        path: '/v1/messages',
        headers: { authorization: 'Bearer pd_unknown' },
        status: 403,
        message: 'Forbidden',
      },
      { path: '/v1/nothing-here', headers: {}, status: 404, message: 'Not Found' },
    ];
    for (const expected of answers) {
      const response = await fetch(`${frontEnd.url}${expected.path}`, { headers: expected.headers });
      const body = await response.text();
      expect(response.status).toBe(expected.status);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(JSON.parse(body)).toEqual({ message: expected.message });
      assertDocumentedResponse(
        check,
        { method: 'GET', path: expected.path },
        { status: response.status, headers: Object.fromEntries(response.headers), body },
      );
    }
  });

  it('answers an enqueue through the local front end as documented: 202 with Location, then 200 replayed', async () => {
    const api = await apiHarness();
    const frontEnd = await startHttpFrontEnd({
      port: 0,
      api: (event) => api.handle(event as Parameters<typeof api.handle>[0]),
      authorizer: async () => ({ isAuthorized: true, context: { tenant: 'acme', key_id: 'key_test' } }),
    });
    running.push(frontEnd);
    const check = documentedResponseCheck();
    const body = JSON.stringify(validBody());
    for (const status of [202, 200]) {
      const response = await fetch(`${frontEnd.url}/v1/messages`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer pd_x',
          'content-type': 'application/json',
          'idempotency-key': 'k-1',
        },
        body,
      });
      const text = await response.text();
      expect(response.status).toBe(status);
      assertDocumentedResponse(
        check,
        { method: 'POST', path: '/v1/messages' },
        { status: response.status, headers: Object.fromEntries(response.headers), body: text },
      );
    }
  });
});
