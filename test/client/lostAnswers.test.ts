/**
 * The typed client's retries against the real api of the local stack (DESIGN §3, §4), through a
 * real HTTP proxy that misbehaves on purpose: an enqueue whose 202 is lost on the way back (the api
 * stored it; the caller saw a reset), the same key sent by ten callers at once, a 503 with
 * Retry-After in front of a GET. What counts is the stack's SMTP sink (a real smtp-server): one mail
 * per key, whatever the network did. The review is docs/decisions/0270.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostdateClient, type PostdateClient, paginate } from '../../lambdas/client/index.js';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';

const run = Date.now().toString(36);
let stack: LocalStack;
let postdate: PostdateClient;

/** What the proxy does with the next requests, in order; then it forwards as it is. */
type Trick = 'drop-after-answer' | '503-retry-after';
let tricks: Trick[] = [];
const forwarded: string[] = [];
let proxy: Server;
let proxyUrl: string;

beforeAll(async () => {
  const config = loadConfig({ POSTDATE_API_KEY: 'pd_lost-answers-spec-0001' }, 'local');
  stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  postdate = createPostdateClient({ baseUrl: stack.apiUrl, apiKey: stack.apiKey });
  const target = new URL(stack.apiUrl);
  proxy = createServer((incoming, outgoing) => {
    const trick = tricks.shift();
    if (trick === '503-retry-after') {
      incoming.resume();
      outgoing.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' });
      outgoing.end(JSON.stringify({ type: 'about:blank', title: 'Busy', status: 503, detail: 'Busy.' }));
      return;
    }
    forwarded.push(`${incoming.method} ${incoming.url}`);
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname.replace(/\/$/, '')}${incoming.url}`,
        method: incoming.method,
        headers: { ...incoming.headers, host: target.host },
      },
      (answer) => {
        if (trick === 'drop-after-answer') {
          // The api answered (and stored); the caller never hears it.
          answer.resume();
          answer.on('end', () => incoming.socket.destroy());
          return;
        }
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/`;
}, 90_000);

afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await stack?.stop();
});

function mailsFor(id: string): number {
  return (stack.smtpSink?.messages() ?? []).filter((mail) => mail.postdateId === id).length;
}

async function sentOnce(id: string): Promise<void> {
  await eventually('the message sent', async () => (await postdate.get(id)).status === 'sent', {
    withinMs: 60_000,
    everyMs: 250,
  });
  expect(mailsFor(id)).toBe(1);
}

describe('the client when the network loses what the api said', () => {
  it('an enqueue whose 202 is lost is sent again with its key and answered as the replay: one message, one mail', async () => {
    const client = createPostdateClient({ baseUrl: proxyUrl, apiKey: stack.apiKey });
    tricks = ['drop-after-answer'];
    forwarded.length = 0;
    const key = `lost-202-${run}`;
    const result = await client.enqueue(
      { to: ['ada@example.com'], subject: 'Lost answer', text: 'Once.' },
      { idempotencyKey: key },
    );
    expect(forwarded).toEqual(['POST /v1/messages', 'POST /v1/messages']);
    expect(result).toMatchObject({ idempotencyKey: key, replayed: true });
    const listed = await postdate.list({ limit: 100 });
    expect(listed.items.filter((message) => message.id === result.message.id)).toHaveLength(1);
    await sentOnce(result.message.id);
  }, 90_000);

  it('ten callers with the same key and body at once get the same message, none a 409 or a second mail', async () => {
    const key = `same-key-${run}`;
    const request = { to: ['grace@example.com'], subject: 'At once', text: 'Once.' };
    const results = await Promise.all(
      Array.from({ length: 10 }, () => postdate.enqueue(request, { idempotencyKey: key })),
    );
    const ids = new Set(results.map((result) => result.message.id));
    expect(ids.size).toBe(1);
    expect(results.filter((result) => !result.replayed)).toHaveLength(1);
    await sentOnce([...ids][0] ?? '');
  }, 90_000);

  it('a GET answered 503 with Retry-After waits that long and is asked again', async () => {
    const waits: number[] = [];
    const client = createPostdateClient({
      baseUrl: proxyUrl,
      apiKey: stack.apiKey,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    const { message } = await postdate.enqueue(
      { to: ['alan@example.com'], subject: 'Later', text: 'Later.', delay_seconds: 3_600 },
      { idempotencyKey: `get-503-${run}` },
    );
    tricks = ['503-retry-after'];
    forwarded.length = 0;
    expect(await client.get(message.id)).toMatchObject({ id: message.id, status: 'scheduled' });
    expect(waits).toEqual([1_000]);
    expect(forwarded).toEqual([`GET /v1/messages/${message.id}`]);
  }, 30_000);

  it('paginate walks every paged listing to its end by next_cursor, two at a time: suppressions, templates', async () => {
    const addresses = [0, 1, 2, 3, 4].map((i) => `paged-${run}-${i}@example.com`);
    for (const address of addresses) await postdate.putSuppression(address, {});
    const names = [0, 1, 2].map((i) => `paged-${run}-${i}`);
    for (const name of names) await postdate.putTemplate(name, { subject: 'Hi', text: 'Hello.' });
    const suppressed: string[] = [];
    for await (const entry of paginate((cursor) =>
      postdate.listSuppressions({ limit: 2, ...(cursor === undefined ? {} : { cursor }) }),
    )) {
      suppressed.push(entry.address);
    }
    expect(suppressed.filter((address) => address.startsWith(`paged-${run}-`)).sort()).toEqual(addresses);
    const templates: string[] = [];
    for await (const template of paginate((cursor) =>
      postdate.listTemplates({ limit: 2, ...(cursor === undefined ? {} : { cursor }) }),
    )) {
      templates.push(template.name);
    }
    expect(templates.filter((name) => name.startsWith(`paged-${run}-`)).sort()).toEqual(names);
  }, 30_000);
});
