import { describe, expect, it } from 'vitest';
import {
  createPostdateClient,
  PostdateClientError,
  PostdateNetworkError,
  PostdateProblemError,
} from '../../lambdas/client/index.js';
import { eventually } from '../support/eventually.js';
import { type Answer, accepted, MESSAGE, problemAnswer, scriptedServer } from './scriptedServer.js';

async function start(answers: readonly Answer[], options: { readonly timeoutMs?: number } = {}) {
  const scripted = await scriptedServer(answers);
  const sleeps: number[] = [];
  const client = createPostdateClient({
    baseUrl: `${scripted.url}/`,
    apiKey: 'pd_retry-spec',
    random: () => 0.5,
    // Record each wait instead of sleeping through it (no test sleeps on the real clock).
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    retry: { baseDelayMs: 100, maxDelayMs: 1_000 },
    ...options,
  });
  return { ...scripted, client, sleeps };
}

const REQUEST = { to: ['ada@example.com'], subject: 'Hi', text: 'Hello.' };

describe('the client against a server that fails first', () => {
  it('retries a 503 with the same Idempotency-Key and body after its Retry-After, then returns the 202', async () => {
    const { client, seen, sleeps } = await start([problemAnswer(503, { 'retry-after': '2' }), accepted]);
    const result = await client.enqueue(REQUEST, { idempotencyKey: 'order-7-confirmation' });
    expect(result).toEqual({ message: MESSAGE, idempotencyKey: 'order-7-confirmation', replayed: false });
    expect(seen).toHaveLength(2);
    expect(seen.map((request) => request.idempotencyKey)).toEqual([
      'order-7-confirmation',
      'order-7-confirmation',
    ]);
    expect(seen[1]?.body).toBe(seen[0]?.body);
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual(REQUEST);
    expect(seen.every((request) => request.authorization === 'Bearer pd_retry-spec')).toBe(true);
    expect(seen.every((request) => request.method === 'POST' && request.url === '/v1/messages')).toBe(true);
    expect(sleeps).toEqual([2_000]);
  });

  it('generates a key when none is given, and keeps it across retries of a 429 and a 500 (backoff with jitter)', async () => {
    const { client, seen, sleeps } = await start([problemAnswer(429), problemAnswer(500), accepted]);
    const result = await client.enqueue(REQUEST);
    expect(result.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen.map((request) => request.idempotencyKey)).toEqual([
      result.idempotencyKey,
      result.idempotencyKey,
      result.idempotencyKey,
    ]);
    // Full jitter with random() = 0.5: half of 100 ms, then half of 200 ms.
    expect(sleeps).toEqual([50, 100]);
  });

  it('retries a connection reset with the same key', async () => {
    const reset: Answer = (_response, request) => request.socket.destroy();
    const { client, seen } = await start([reset, accepted]);
    const result = await client.enqueue(REQUEST, { idempotencyKey: 'k-reset' });
    expect(result.message.id).toBe('m-1');
    expect(seen.map((request) => request.idempotencyKey)).toEqual(['k-reset', 'k-reset']);
  });

  it('stops after maxAttempts and throws the last problem, typed, with its key and Retry-After', async () => {
    const { client, seen } = await start([problemAnswer(503, { 'retry-after': '1' })]);
    const error = await client
      .enqueue(REQUEST, { idempotencyKey: 'k-down' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PostdateProblemError);
    expect(error).toMatchObject({
      type: 'urn:test:503',
      status: 503,
      errors: [],
      retryAfterMs: 1_000,
      idempotencyKey: 'k-down',
    });
    expect(seen).toHaveLength(4);
  });

  it('does not retry a 4xx: a 400 is thrown at once with its field errors', async () => {
    const errors = [{ field: '/to', message: 'at least one recipient' }];
    const { client, seen } = await start([problemAnswer(400, {}, { errors })]);
    const error = await client.enqueue(REQUEST).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PostdateProblemError);
    expect(error).toMatchObject({ status: 400, type: 'urn:test:400', errors });
    expect(seen).toHaveLength(1);
  });

  it("turns a gateway's plain {message} answer into a problem of type about:blank", async () => {
    const gateway: Answer = (response) => {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ message: 'Unauthorized' }));
    };
    const { client } = await start([gateway]);
    const error = await client.get('m-1').catch((caught: unknown) => caught);
    expect(error).toMatchObject({ type: 'about:blank', status: 401, detail: 'Unauthorized', errors: [] });
  });

  it('retries a cancel after a 503 and a reschedule after a reset (twice is once), but a manual retry only after its 429', async () => {
    const cancel = await start([problemAnswer(503, { 'retry-after': '1' }), accepted]);
    await expect(cancel.client.cancel('m-1')).resolves.toMatchObject({ id: 'm-1' });
    expect(cancel.seen.map((request) => request.method)).toEqual(['DELETE', 'DELETE']);
    const reset: Answer = (_response, request) => request.socket.destroy();
    const moved = await start([reset, accepted]);
    const sendAt = '2026-12-02T09:00:00Z';
    await expect(moved.client.reschedule('m-1', { send_at: sendAt })).resolves.toMatchObject({ id: 'm-1' });
    expect(moved.seen.map((request) => JSON.parse(request.body))).toEqual([
      { send_at: sendAt },
      { send_at: sendAt },
    ]);
    const once = await start([problemAnswer(503), accepted]);
    await expect(once.client.retry('m-1')).rejects.toMatchObject({ status: 503 });
    expect(once.seen).toHaveLength(1);
    const throttled = await start([problemAnswer(429), accepted]);
    await expect(throttled.client.retry('m-1')).resolves.toMatchObject({ id: 'm-1' });
    expect(throttled.seen).toHaveLength(2);
  });

  it('never repeats a template PUT after a 503 or a reset (each PUT stores a new version, DESIGN §3, §10), but does retry its 429', async () => {
    const template = { subject: 'Hi {{name}}', text: 'Hello {{name}}' };
    const failed = await start([problemAnswer(503), accepted]);
    await expect(failed.client.putTemplate('hello', template)).rejects.toMatchObject({ status: 503 });
    expect(failed.seen).toHaveLength(1);
    const reset: Answer = (_response, request) => request.socket.destroy();
    const lost = await start([reset, accepted]);
    await expect(lost.client.putTemplate('hello', template)).rejects.toBeInstanceOf(PostdateNetworkError);
    expect(lost.seen).toHaveLength(1);
    const throttled = await start([problemAnswer(429), accepted]);
    await expect(throttled.client.putTemplate('hello', template)).resolves.toMatchObject({ id: 'm-1' });
    expect(throttled.seen).toHaveLength(2);
  });

  it('never repeats a webhook POST through `http` after a 503 because it carries an Idempotency-Key the API ignores there', async () => {
    // Two endpoints for one URL would each be sent every event (DESIGN §11): the key keeps only an enqueue.
    const failed = await start([problemAnswer(503), accepted]);
    const answer = await failed.client.http.POST('/v1/webhooks', {
      body: { url: 'https://hooks.example.com/postdate' },
      headers: { 'Idempotency-Key': 'hook-1' },
    });
    expect(answer.response.status).toBe(503);
    expect(failed.seen.map((request) => `${request.method} ${request.url}`)).toEqual(['POST /v1/webhooks']);
  });

  it('repeats a group PUT and a suppression PUT after a 503: doing either twice is doing it once', async () => {
    const group = await start([problemAnswer(503), accepted]);
    await group.client.raiseGroup('campaign:42', { version: 3 });
    expect(group.seen.map((request) => request.url)).toEqual([
      '/v1/groups/campaign%3A42',
      '/v1/groups/campaign%3A42',
    ]);
    const suppression = await start([problemAnswer(503), accepted]);
    await suppression.client.putSuppression('ada@example.com', {});
    expect(suppression.seen).toHaveLength(2);
  });

  it('repeats a template render after a 503 or a reset: a preview stores and sends nothing (decision 0220)', async () => {
    const rendered: Answer = (response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ subject: 'Hi Ada', text: 'Hello Ada', html: null }));
    };
    const failed = await start([problemAnswer(503), rendered]);
    await expect(failed.client.renderTemplate('hello', { data: { name: 'Ada' } })).resolves.toMatchObject({
      subject: 'Hi Ada',
    });
    expect(failed.seen.map((request) => request.url)).toEqual([
      '/v1/templates/hello/render',
      '/v1/templates/hello/render',
    ]);
    const reset: Answer = (_response, request) => request.socket.destroy();
    const lost = await start([reset, rendered]);
    await expect(lost.client.renderTemplate('hello', { data: {} })).resolves.toMatchObject({
      text: 'Hello Ada',
    });
    expect(lost.seen).toHaveLength(2);
  });

  it('throws a PostdateNetworkError naming the key when nothing ever answers', async () => {
    const scripted = await scriptedServer([]);
    const { url } = scripted;
    await new Promise((resolve) => scripted.server.close(resolve));
    const client = createPostdateClient({ baseUrl: url, apiKey: 'pd_x', sleep: async () => {} });
    const error = await client
      .enqueue(REQUEST, { idempotencyKey: 'k-gone' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PostdateNetworkError);
    expect(error).toMatchObject({ idempotencyKey: 'k-gone' });
    expect((error as Error).cause).toBeDefined();
  });

  it('gives each attempt a timeout: an enqueue whose answer never comes, or stops halfway, is sent again with the same key', async () => {
    const silent: Answer = () => {};
    const halfway: Answer = (response) => {
      response.writeHead(202, { 'content-type': 'application/json' });
      response.write('{"id":');
    };
    const { client, seen } = await start([silent, halfway, accepted], { timeoutMs: 1_000 });
    const result = await client.enqueue(REQUEST, { idempotencyKey: 'k-slow' });
    expect(result.message.id).toBe('m-1');
    expect(seen.map((request) => request.idempotencyKey)).toEqual(['k-slow', 'k-slow', 'k-slow']);
  });

  it('ends a timed-out attempt for the server too: its connection is closed, not left open beside the retry', async () => {
    let closed = 0;
    const silent: Answer = (response) => {
      response.on('close', () => {
        closed += 1;
      });
    };
    // The timeout is the second attempt's too: 1 s, as the others here, not 300 ms, which one 400 ms
    // stall of the event loop (a loaded machine's) overran with the 202 waiting (decisions 0044, 0284).
    const { client, seen } = await start([silent, accepted], { timeoutMs: 1_000 });
    await client.get('m-1');
    expect(seen).toHaveLength(2);
    await eventually('the timed-out attempt closed at the server', () => closed === 1, { withinMs: 5_000 });
  });

  it('throws a timed-out template PUT as a PostdateNetworkError caused by the timeout, never sending it again', async () => {
    const silent: Answer = () => {};
    const { client, seen } = await start([silent, accepted], { timeoutMs: 1_000 });
    const error = await client
      .putTemplate('hello', { subject: 'Hi', text: 'Hello' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PostdateNetworkError);
    expect((error as Error).cause).toMatchObject({ name: 'TimeoutError' });
    expect(seen).toHaveLength(1);
  });

  it('never puts an address of the path in a network error: the caller logs its message (decision 0270)', async () => {
    const reset: Answer = (_response, request) => request.socket.destroy();
    const { client } = await start([reset]);
    for (const call of [
      () => client.deleteSuppression('ada.lovelace@example.com'),
      () => client.putSuppression('ada.lovelace@example.com', {}),
    ]) {
      const error = await call().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PostdateNetworkError);
      expect((error as Error).message).toMatch(/^(DELETE|PUT) \/v1\/suppressions\/<redacted> got no answer/);
      expect(`${(error as Error).message} ${String((error as Error).cause)}`).not.toMatch(/lovelace|%40/);
    }
  });

  it('never puts the API key in what it throws, even a key that is no valid header value', async () => {
    const { url } = await start([accepted]);
    const error = await (async () =>
      createPostdateClient({ baseUrl: url, apiKey: 'pd_top\u0000secret' }).get('m-1'))().catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(PostdateClientError);
    const thrown = error as Error;
    expect(`${thrown.message} ${JSON.stringify(thrown)} ${String(thrown.cause)}`).not.toContain('secret');
  });

  it('throws a typed error, the parse failure as its cause, when a 2xx answer is no JSON (a baseUrl that is a web site)', async () => {
    const page: Answer = (response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end('<!doctype html><title>Welcome</title>');
    };
    const { client } = await start([page]);
    const error = await client.get('m-1').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PostdateClientError);
    expect((error as Error).cause).toBeInstanceOf(SyntaxError);
  });

  it('throws a typed error, not a problem, when a 2xx answer has no body at all (no answer of the API)', async () => {
    const empty: Answer = (response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '0' });
      response.end();
    };
    const { client } = await start([empty]);
    const error = await client.get('m-1').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PostdateClientError);
    expect(error).not.toBeInstanceOf(PostdateProblemError);
    expect((error as Error).message).toContain('200');
  });

  it('refuses, when it is made, a baseUrl that is no http(s) URL (a host without https://), typed', () => {
    for (const baseUrl of ['abc123.execute-api.eu-west-1.amazonaws.com', '', 'ftp://example.com/']) {
      expect(() => createPostdateClient({ baseUrl, apiKey: 'pd_x' })).toThrow(PostdateClientError);
    }
    expect(() => createPostdateClient({ baseUrl: 'api.example.com', apiKey: 'pd_x' })).toThrow(/baseUrl/);
  });
});
