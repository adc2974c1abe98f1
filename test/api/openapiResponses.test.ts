/**
 * The response check the API harness runs on every answer (test/support/openApiResponses.ts) must
 * catch an answer the document does not describe, or every API test would pass it silently.
 */
import { describe, expect, it } from 'vitest';
import type { ApiEvent, ApiResult } from '../../lambdas/api/createApiHandler.js';
import { type ObservedResponse, responseChecker } from '../support/openApiResponses.js';
import { apiHarness, documentedHandler, documentedResponseCheck } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent, validBody } from './events.js';

const check = documentedResponseCheck();

/** A real answer of the handler, as the check sees it. */
async function observed(call: Promise<ApiResult>): Promise<ObservedResponse> {
  const result = await call;
  return {
    status: result.statusCode ?? 0,
    headers: (result.headers ?? {}) as Record<string, string>,
    body: result.body,
  };
}

describe('the OpenAPI response check', () => {
  it('passes the real answers: 202, 200 replayed, 200 with history, 404, 405, 400', async () => {
    const api = await apiHarness();
    const accepted = await observed(api.handle(enqueueEvent(validBody())));
    const replayed = await observed(api.handle(enqueueEvent(validBody())));
    const id = (JSON.parse(accepted.body ?? '{}') as { id: string }).id;
    const read = await observed(api.handle(getEvent(id)));
    const enqueue = { method: 'POST', path: '/v1/messages' };
    expect(check(enqueue, accepted)).toEqual([]);
    expect(check(enqueue, replayed)).toEqual([]);
    expect(check({ method: 'GET', path: `/v1/messages/${id}` }, read)).toEqual([]);
    const unknown = await observed(api.handle(apiEvent({ method: 'GET', path: '/v2/elsewhere' })));
    expect(unknown.status).toBe(404);
    expect(check({ method: 'GET', path: '/v2/elsewhere' }, unknown)).toEqual([]);
    const wrongMethod = await observed(api.handle(apiEvent({ method: 'PUT', path: '/v1/messages' })));
    expect(wrongMethod.status).toBe(405);
    expect(check({ method: 'PUT', path: '/v1/messages' }, wrongMethod)).toEqual([]);
    const invalid = await observed(api.handle(enqueueEvent(validBody({ to: [] }), { key: 'k-2' })));
    expect(invalid.status).toBe(400);
    expect(check(enqueue, invalid)).toEqual([]);
  });

  it('passes the batch answers: 200 with new, replayed and refused items; the strict 400; the 413', async () => {
    const api = await apiHarness();
    const batch = { method: 'POST', path: '/v1/messages/batch' };
    const send = (body: unknown) =>
      observed(
        api.handle(apiEvent({ method: 'POST', path: batch.path, routeKey: 'POST /v1/messages/batch', body })),
      );
    const messages = [
      { idempotency_key: 'b-1', ...validBody() },
      { idempotency_key: 'b-2', ...validBody({ to: [] }) },
    ];
    const mixed = await send({ messages });
    expect(mixed.status).toBe(200);
    expect(check(batch, mixed)).toEqual([]);
    const replayed = await send({
      messages: [messages[0], { idempotency_key: 'b-1', ...validBody({ subject: 'x' }) }],
    });
    expect(check(batch, replayed)).toEqual([]);
    const strict = await send({ messages, mode: 'strict' });
    expect(strict.status).toBe(400);
    expect(check(batch, strict)).toEqual([]);
    const large = await send({
      messages: [{ idempotency_key: 'b-3', ...validBody({ text: 'x'.repeat(2_200_000) }) }],
    });
    expect(large.status).toBe(413);
    expect(check(batch, large)).toEqual([]);
  });

  it('catches a body that does not match, an undeclared status, content type or header, and a missing one', async () => {
    const api = await apiHarness();
    const accepted = await observed(api.handle(enqueueEvent(validBody())));
    const enqueue = { method: 'POST', path: '/v1/messages' };
    const message = JSON.parse(accepted.body ?? '{}') as Record<string, unknown>;
    const { location: _, ...withoutLocation } = accepted.headers;
    const wrong: [string, ObservedResponse][] = [
      ['a field missing', { ...accepted, body: JSON.stringify({ ...message, status: undefined }) }],
      ['a field of the wrong type', { ...accepted, body: JSON.stringify({ ...message, attempts: '0' }) }],
      ['an unknown status value', { ...accepted, body: JSON.stringify({ ...message, status: 'lost' }) }],
      ['a body that is not JSON', { ...accepted, body: 'accepted' }],
      ['an undeclared status', { ...accepted, status: 418 }],
      [
        'an undeclared content type',
        { ...accepted, headers: { ...accepted.headers, 'content-type': 'text/plain' } },
      ],
      ['an undeclared header', { ...accepted, headers: { ...accepted.headers, 'x-postdate-debug': '1' } }],
      ['a required header missing', { ...accepted, headers: withoutLocation }],
      [
        'a header of the wrong shape',
        { ...accepted, status: 200, headers: { ...accepted.headers, 'idempotent-replayed': 'yes' } },
      ],
      [
        'a problem where the document says gateway error',
        {
          status: 403,
          headers: { 'content-type': 'application/problem+json' },
          body: JSON.stringify({ type: 'urn:x', title: 'Forbidden', status: 403, detail: 'no' }),
        },
      ],
      [
        'a gateway 401 without its message',
        {
          status: 401,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ error: 'no' }),
        },
      ],
    ];
    for (const [what, response] of wrong) {
      expect(check(enqueue, response), what).not.toEqual([]);
    }
    // An answer to a route the document does not have must be a "no such route".
    expect(check({ method: 'GET', path: '/v2/elsewhere' }, accepted)).not.toEqual([]);
  });

  it('fails the API test that receives an undocumented answer', async () => {
    const undocumented = async (): Promise<ApiResult> => ({
      statusCode: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'x' }),
    });
    const handle = documentedHandler(undocumented);
    await expect(handle(getEvent('abc') as ApiEvent)).rejects.toThrow(/does not match the OpenAPI document/);
  });

  it('checks against the document it is given, not a fixed one', () => {
    const strict = responseChecker({
      openapi: '3.1.0',
      info: { title: 't', version: '1' },
      paths: {
        '/x': {
          get: {
            responses: {
              '200': {
                description: 'ok',
                content: {
                  'application/json': {
                    schema: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } },
                  },
                },
              },
            },
          },
        },
      },
      components: { schemas: {} },
    });
    const answer = (body: unknown) => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(strict({ method: 'GET', path: '/x' }, answer({ n: 1 }))).toEqual([]);
    expect(strict({ method: 'GET', path: '/x' }, answer({ n: 1.5 }))).not.toEqual([]);
  });
});
