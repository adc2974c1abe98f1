/**
 * The typed client's `enqueueBatch` as it retries (DESIGN §3a; docs/decisions/0245): an item whose
 * write failed answers 500/503 inside the batch's 200, and the client sends the batch again as it
 * sends an enqueue's 5xx again — every item carries its key, so the stored ones replay — keeping
 * each item's first answer unless it was such a failure. Against the real api handler on DynamoDB
 * Local behind a real HTTP server, and a scripted server for the limits.
 * Covers lambdas/client/createPostdateClient.ts (enqueueBatch) and retryPolicy.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createPostdateClient } from '../../lambdas/client/index.js';
import { messageIdFor } from '../../lambdas/core/ids.js';
import type { ApiStore } from '../../lambdas/ports/ApiStore.js';
import { apiHarness } from '../api/apiHarness.js';
import { apiEvent, getEvent } from '../api/events.js';
import { type Answer, scriptedServer } from './scriptedServer.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

type Harness = Awaited<ReturnType<typeof apiHarness>>;

/** The api handler behind a real HTTP server: each request becomes its payload 2.0 event. */
async function served(api: Harness): Promise<{ url: string; posts: () => number }> {
  let posts = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      posts += 1;
      const path = new URL(request.url ?? '/', 'http://localhost').pathname;
      const event = apiEvent({
        method: request.method ?? 'GET',
        path,
        routeKey: `${request.method} ${path}`,
        headers: { 'content-type': String(request.headers['content-type']) },
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const result = await api.handle(event);
      response.writeHead(result.statusCode ?? 200, result.headers as Record<string, string>);
      response.end(result.body);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, posts: () => posts };
}

const order = (key: string) => ({
  idempotency_key: key,
  from: 'ops@example.com',
  to: ['ada@example.com'],
  subject: `Order ${key}`,
  text: 'Shipped.',
  delay_seconds: 600,
});

describe('enqueueBatch sends again what failed inside its 200', () => {
  it('resends a batch whose item failed its write (500), and answers that item 202, the others as first answered', async () => {
    const flaky = messageIdFor('acme', 'order-2');
    let failures = 1;
    const api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          putNew: async (record: Parameters<ApiStore['putNew']>[0]) => {
            if (record.pk === `MSG#${flaky}` && record.sk === 'STATE' && failures-- > 0) {
              throw new Error('injected: the table dropped this write');
            }
            return store.putNew(record);
          },
        }),
    });
    const { url, posts } = await served(api);
    const sleeps: number[] = [];
    const client = createPostdateClient({
      baseUrl: url,
      apiKey: 'pd_batch-retry-spec',
      random: () => 0.5,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
    const messages = ['order-0', 'order-1', 'order-2', 'order-3'].map(order);

    const answer = await client.enqueueBatch({ messages });

    expect(answer.results.map((result) => [result.index, result.status, result.replayed])).toEqual([
      [0, 202, false],
      [1, 202, false],
      [2, 202, false],
      [3, 202, false],
    ]);
    expect(answer.results[2]?.message?.id).toBe(flaky);
    expect(posts()).toBe(2);
    expect(sleeps).toEqual([100]);
    expect((await api.call(getEvent(flaky))).status).toBe(200);
  });

  it('stops after maxAttempts and answers the item still failing with its 503; a 4xx item is never a reason to resend', async () => {
    const problem = {
      type: 'urn:postdate:problem:unavailable',
      title: 'Try again',
      status: 503,
      detail: 'Busy.',
    };
    const refused = { type: 'urn:postdate:problem:validation', title: 'Invalid', status: 400, detail: 'No.' };
    const results = (status: number) => [
      { index: 0, status: 400, problem: refused },
      { index: 1, status, ...(status === 503 ? { problem } : {}) },
    ];
    const batch =
      (status: number): Answer =>
      (response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ results: results(status) }));
      };
    const failing = await scriptedServer([batch(503)]);
    const client = createPostdateClient({
      baseUrl: failing.url,
      apiKey: 'pd_batch-retry-spec',
      random: () => 0.5,
      sleep: async () => {},
      retry: { maxAttempts: 3 },
    });
    const answer = await client.enqueueBatch({ messages: [order('a'), order('b')] });
    expect(answer.results.map((result) => result.status)).toEqual([400, 503]);
    expect(failing.seen).toHaveLength(3);
    expect(failing.seen.every((request) => request.body === failing.seen[0]?.body)).toBe(true);

    const refusedOnly = await scriptedServer([batch(202)]);
    const once = createPostdateClient({ baseUrl: refusedOnly.url, apiKey: 'pd_batch-retry-spec' });
    await once.enqueueBatch({ messages: [order('a'), order('b')] });
    expect(refusedOnly.seen).toHaveLength(1);
  });

  it('makes at most maxAttempts requests in all: a resend answered 503 spends the same attempts (decision 0250)', async () => {
    const problem = {
      type: 'urn:postdate:problem:unavailable',
      title: 'Try again',
      status: 503,
      detail: 'Busy.',
    };
    const itemFailed: Answer = (response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ results: [{ index: 0, status: 503, problem }] }));
    };
    const down: Answer = (response) => {
      response.writeHead(503, { 'content-type': 'application/problem+json' });
      response.end(JSON.stringify(problem));
    };
    // The store is struggling: an item's write fails, then the whole request, again and again.
    const server = await scriptedServer([itemFailed, down, down, itemFailed, down, down, itemFailed]);
    const client = createPostdateClient({
      baseUrl: server.url,
      apiKey: 'pd_batch-retry-spec',
      random: () => 0.5,
      sleep: async () => {},
      retry: { maxAttempts: 3 },
    });
    const answer = await client.enqueueBatch({ messages: [order('a')] });
    // The first answer stands for the item still failing; a struggling store gets no more than 3.
    expect(answer.results.map((result) => result.status)).toEqual([503]);
    expect(server.seen).toHaveLength(3);
  });
});
