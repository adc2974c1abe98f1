/**
 * Webhook delivery where something half-works (DESIGN §3, §11): a receiver that answers its headers
 * and never ends its body, a queue that refuses a copy, a retry whose write never lands, a queue
 * body that cannot be decoded. Real parts: DynamoDB Local, the SQS emulator, node http servers.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebhookQueue, WebhookStore } from '../../lambdas/ports/Webhooks.js';
import { eventually } from '../support/eventually.js';
import { startReceiver, webhookHarness } from './webhookHarness.js';

const servers: Server[] = [];
const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

async function receiver(...args: Parameters<typeof startReceiver>) {
  const started = await startReceiver(...args);
  receivers.push(started);
  return started;
}

/** A queue that refuses every copy while `refusing()` holds (as SQS does in an outage). */
function refusingQueue(refusing: () => boolean) {
  return (queue: WebhookQueue): WebhookQueue => ({
    send: async (copies) =>
      refusing() ? { failed: copies, error: new Error('the queue is unavailable') } : queue.send(copies),
  });
}

/** A store whose `method` throws while `broken()` holds: the write never lands. */
function breakingStore(method: keyof WebhookStore, broken: () => boolean) {
  return (store: WebhookStore): WebhookStore =>
    new Proxy(store, {
      get(target, key) {
        if (key === method && broken())
          return async () => {
            throw new Error('the write never landed');
          };
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
}

const deliveriesOf = async (harness: Awaited<ReturnType<typeof webhookHarness>>, id: string) =>
  (await harness.call({ method: 'GET', path: `/v1/webhooks/${id}/deliveries` })).json.items as {
    id: string;
    status: string;
    attempts: number;
  }[];

/** A receiver that sends `200` and a first chunk of body, and then never ends it. */
async function neverEndingReceiver() {
  const sockets: { closed: boolean }[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('still writing');
    });
  });
  server.on('connection', (socket: Socket) => {
    const entry = { closed: false };
    sockets.push(entry);
    socket.on('close', () => {
      entry.closed = true;
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, sockets };
}

async function subscribeTo(harness: Awaited<ReturnType<typeof webhookHarness>>, url: string) {
  const created = await harness.call({ method: 'POST', path: '/v1/webhooks', body: { url } });
  expect(created.status).toBe(201);
  return created.json.id as string;
}

describe('a receiver that never ends its answer (DESIGN §11: 2xx within 10 s)', () => {
  it('closes the socket when the time is up and retries the delivery', async () => {
    const harness = await webhookHarness({ timeoutMs: 500 });
    const hook = await neverEndingReceiver();
    const id = await subscribeTo(harness, hook.url);
    expect((await harness.call({ method: 'POST', path: `/v1/webhooks/${id}/test` })).status).toBe(202);

    // Each retry after the endpoint's breaker interval (at most 10 min), so that it is POSTed again.
    for (let round = 0; round < 3; round++) {
      await harness.pump({ rounds: 1 });
      harness.clock.advance(15 * 60_000);
    }
    await eventually('three connections', () => hook.sockets.length >= 3, { withinMs: 20_000 });
    await eventually('every receiver socket closed', () => hook.sockets.every((socket) => socket.closed), {
      withinMs: 20_000,
    });

    const [delivery] = (await harness.call({ method: 'GET', path: `/v1/webhooks/${id}/deliveries` })).json
      .items;
    expect(delivery).toMatchObject({ status: 'pending', attempts: 3 });
    expect(delivery.history.map((attempt: { error: string | null }) => attempt.error)).toEqual([
      'timeout',
      'timeout',
      'timeout',
    ]);
  }, 60_000);
});

describe('the test event (POST /v1/webhooks/{id}/test)', () => {
  it('leaves nothing pending when the queue refuses it, and answers 503', async () => {
    let refusing = true;
    const harness = await webhookHarness({ apiQueue: refusingQueue(() => refusing) });
    const hook = await receiver();
    const id = await subscribeTo(harness, hook.url());
    const refused = await harness.call({ method: 'POST', path: `/v1/webhooks/${id}/test` });
    expect(refused.status).toBe(503);
    expect(refused.json.type).toBe('urn:postdate:problem:unavailable');
    expect((await deliveriesOf(harness, id)).filter((delivery) => delivery.status === 'pending')).toEqual([]);

    refusing = false;
    expect((await harness.call({ method: 'POST', path: `/v1/webhooks/${id}/test` })).status).toBe(202);
    await harness.pump();
    expect(hook.received).toHaveLength(1);
    expect((await deliveriesOf(harness, id)).map((delivery) => delivery.status)).toEqual(['delivered']);
  });

  it('delivers a copy that arrives before its delivery is written', async () => {
    let harness: Awaited<ReturnType<typeof webhookHarness>> | undefined;
    let early = 0;
    // The copy is on the queue before the record: the delivery function sees it first.
    const racing = (store: WebhookStore): WebhookStore =>
      new Proxy(store, {
        get(target, key) {
          const value = Reflect.get(target, key, target) as unknown;
          if (key !== 'putDelivery' || typeof value !== 'function') return value;
          return async (...args: unknown[]) => {
            early += await (harness?.pump({ rounds: 1 }) ?? 0);
            return value.apply(target, args);
          };
        },
      });
    harness = await webhookHarness({ apiStore: racing });
    const hook = await receiver();
    const id = await subscribeTo(harness, hook.url());
    expect((await harness.call({ method: 'POST', path: `/v1/webhooks/${id}/test` })).status).toBe(202);
    expect(early).toBe(1);
    await harness.pump();
    expect(hook.received).toHaveLength(1);
    expect((await deliveriesOf(harness, id)).map((delivery) => delivery.status)).toEqual(['delivered']);
  });
});

describe('a manual retry (POST …/deliveries/{delivery}/retry)', () => {
  it('whose write never lands: its copy is dropped, not dead-lettered, and a later retry works', async () => {
    let healthy = false;
    let brokenWrites = false;
    const harness = await webhookHarness({
      retryHours: 1,
      apiStore: breakingStore('retryDelivery', () => brokenWrites),
    });
    const hook = await receiver(() => (healthy ? 200 : 503));
    const id = await subscribeTo(harness, hook.url());
    await harness.call({ method: 'POST', path: `/v1/webhooks/${id}/test` });
    await harness.pump();
    const [failed] = await deliveriesOf(harness, id);
    expect(failed?.status).toBe('failed');
    const seen = hook.received.length;

    healthy = true;
    brokenWrites = true;
    const retry = await harness.call({
      method: 'POST',
      path: `/v1/webhooks/${id}/deliveries/${failed?.id}/retry`,
    });
    expect(retry.status).toBeGreaterThanOrEqual(500);
    // The copy waits a bounded time for its write, then goes: the queue empties by itself.
    const rounds = await harness.pump({ rounds: 150 });
    expect(rounds).toBeLessThan(150);
    expect(hook.received.length).toBe(seen);
    expect((await deliveriesOf(harness, id))[0]).toMatchObject({
      status: 'failed',
      attempts: failed?.attempts,
    });

    brokenWrites = false;
    const again = await harness.call({
      method: 'POST',
      path: `/v1/webhooks/${id}/deliveries/${failed?.id}/retry`,
    });
    expect(again.status).toBe(202);
    await harness.pump();
    expect((await deliveriesOf(harness, id))[0]).toMatchObject({ status: 'delivered' });
  }, 60_000);
});

describe('a copy kept after a failure of our own (a read, a write or the queue failed)', () => {
  it('comes back after a short backoff, not after the queue visibility timeout of six minutes', async () => {
    let broken = true;
    const harness = await webhookHarness({
      deliveryStore: breakingStore('getDelivery', () => broken),
      queueVisibilitySeconds: 360,
    });
    const hook = await receiver();
    const id = await subscribeTo(harness, hook.url());
    await harness.call({ method: 'POST', path: `/v1/webhooks/${id}/test` });
    const first = await harness.receive();
    expect(first).toHaveLength(1);
    const kept = await harness.deliver({ Records: first });
    expect(kept.batchItemFailures).toHaveLength(1);

    broken = false;
    // Left alone, SQS would hand it back after 360 s; the backoff of a first receive is seconds.
    const again = await eventually(
      'the kept copy to come back',
      async () => {
        const records = await harness.receive();
        return records.length > 0 ? records : undefined;
      },
      { withinMs: 30_000, everyMs: 250 },
    );
    expect(again[0]?.attributes.ApproximateReceiveCount).toBe('2');
    const delivered = await harness.deliver({ Records: again });
    expect(delivered.batchItemFailures).toEqual([]);
    expect(hook.received).toHaveLength(1);
  }, 60_000);
});

describe('a queue body that cannot be decoded', () => {
  it('is reported as a failure, so the redrive policy dead-letters it', async () => {
    const harness = await webhookHarness();
    const record = (messageId: string, body: string) => ({ messageId, body }) as SQSRecord;
    const answer = await harness.deliver({
      Records: [record('m-garbage', '{not json'), record('m-wrong', JSON.stringify({ v: 2, id: 'x' }))],
    });
    expect(answer.batchItemFailures.map((failure) => failure.itemIdentifier).sort()).toEqual([
      'm-garbage',
      'm-wrong',
    ]);
  });
});
