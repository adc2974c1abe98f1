import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { messageIdFor } from '../../lambdas/core/ids.js';
import type { ApiStore } from '../../lambdas/ports/ApiStore.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent, validBody } from './events.js';

/** DynamoDB's answer to a hot partition, as the SDK throws it once its own retries are spent. */
function throttled(): ProvisionedThroughputExceededException {
  return new ProvisionedThroughputExceededException({
    message: 'The level of configured provisioned throughput for the table was exceeded.',
    $metadata: { httpStatusCode: 400, attempts: 3 },
  });
}

/** A request to AWS that timed out (the SDK's socket timeout): it may have reached the table. */
function timedOut(): Error {
  return Object.assign(new Error('Connection timed out after 3000 ms'), { name: 'TimeoutError' });
}

/**
 * Failures DynamoDB Local cannot be made to produce on demand (endless contention, an outage) are
 * injected by wrapping the real store; everything else stays real.
 */
describe('when the table fails', () => {
  it('answers 503 with Retry-After after ten lost races in a row, having written nothing (grouped: a transaction)', async () => {
    const waits: number[] = [];
    const api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          writeEnqueue: async () => ({ kind: 'contended' as const }),
        }),
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    const response = await api.call(
      enqueueEvent(validBody({ group: { key: 'g', version: 1 } }), { key: 'contended' }),
    );
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(await api.scanAll()).toEqual([]);
    // It backed off between attempts (jittered, growing), without sleeping on the real clock here.
    expect(waits).toHaveLength(10);
    expect(waits.every((ms) => ms >= 5)).toBe(true);
  });

  it('answers 503 when a conditional put keeps meeting a transaction on the same item (ungrouped)', async () => {
    const api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          putNew: async () => ({ kind: 'contended' as const }),
        }),
      sleep: async () => {},
    });
    const response = await api.call(enqueueEvent(validBody(), { key: 'contended-put' }));
    expect(response.status).toBe(503);
    expect(await api.scanAll()).toEqual([]);
  });

  it('answers a generic 500 problem on an unexpected error, and logs its name but not the request', async () => {
    const api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          showMessage: async () => {
            throw Object.assign(new Error('Requested resource not found'), {
              name: 'ResourceNotFoundException',
            });
          },
        }),
    });
    const response = await api.call(getEvent('01JDQ1T8Z6J5V1Y5M6Z8K4W2QX'));
    expect(response.status).toBe(500);
    expect(response.json).toEqual({
      type: 'urn:postdate:problem:internal',
      title: 'Internal error',
      status: 500,
      detail: 'Something went wrong on our side.',
    });
    const errors = api.logs.filter((line) => line.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.attributes).toMatchObject({
      route: 'get',
      error: { name: 'ResourceNotFoundException' },
    });
  });

  it('answers 503 with Retry-After when DynamoDB is throttling the enqueue, having written nothing, and warns', async () => {
    const api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          putNew: async () => {
            throw throttled();
          },
        }),
    });
    const response = await api.call(enqueueEvent(validBody(), { key: 'hot-partition' }));
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.json).toMatchObject({ type: 'urn:postdate:problem:unavailable', status: 503 });
    expect(await api.scanAll()).toEqual([]);
    // Not an error of ours: a warning an operator can count, naming what AWS said.
    expect(api.logs.filter((line) => line.level === 'error')).toEqual([]);
    expect(api.logs.find((line) => line.level === 'warn')?.attributes).toMatchObject({
      route: 'enqueue',
      error: { name: 'ProvisionedThroughputExceededException' },
    });
  });

  it('answers 503 on any route when AWS timed out or throttled a read, not a 500', async () => {
    const api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          showMessage: async () => {
            throw timedOut();
          },
        }),
    });
    const response = await api.call(getEvent('01JDQ1T8Z6J5V1Y5M6Z8K4W2QX'));
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
  });

  it('answers a throttled batch item 503, as a single enqueue of it would, and the batch 503 when every item was', async () => {
    let throttledPk: string | 'every' = `MSG#${messageIdFor('acme', 'throttle-b')}`;
    const api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          putNew: async (record: Parameters<ApiStore['putNew']>[0]) => {
            if (throttledPk === 'every' || record.pk === throttledPk) throw throttled();
            return store.putNew(record);
          },
        }),
    });
    const batch = (keys: readonly string[]) =>
      api.call(
        apiEvent({
          method: 'POST',
          path: '/v1/messages/batch',
          routeKey: 'POST /v1/messages/batch',
          body: { messages: keys.map((key) => ({ idempotency_key: key, ...validBody() })) },
        }),
      );
    const some = await batch(['throttle-a', 'throttle-b', 'throttle-c']);
    expect(some.status).toBe(200);
    const results = some.json.results as { status: number; problem?: { type: string } }[];
    expect(results.map((result) => result.status)).toEqual([202, 503, 202]);
    expect(results[1]?.problem?.type).toBe('urn:postdate:problem:unavailable');

    throttledPk = 'every';
    const none = await batch(['throttle-d', 'throttle-e']);
    expect(none.status).toBe(503);
    expect(none.headers['retry-after']).toBe('1');
  });

  it("in a strict batch whose items all judged valid, a write throttled is that item's 503, and the same batch again settles it with the others replayed", async () => {
    let throttledPk: string | undefined = `MSG#${messageIdFor('acme', 'strict-b')}`;
    const api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          putNew: async (record: Parameters<ApiStore['putNew']>[0]) => {
            if (record.pk === throttledPk) throw throttled();
            return store.putNew(record);
          },
        }),
    });
    const keys = ['strict-a', 'strict-b', 'strict-c'];
    const batch = () =>
      api.call(
        apiEvent({
          method: 'POST',
          path: '/v1/messages/batch',
          routeKey: 'POST /v1/messages/batch',
          // A header the batch does not need (DESIGN §3a): each item keeps its own key.
          headers: { 'idempotency-key': 'the-whole-batch' },
          body: { mode: 'strict', messages: keys.map((key) => ({ idempotency_key: key, ...validBody() })) },
        }),
      );
    type Results = { status: number; message?: { id: string }; problem?: { type: string } }[];

    const first = await batch();
    expect(first.status).toBe(200);
    const cut = first.json.results as Results;
    expect(cut.map((result) => result.status)).toEqual([202, 503, 202]);
    expect(cut[1]?.problem?.type).toBe('urn:postdate:problem:unavailable');
    expect((await api.call(getEvent(messageIdFor('acme', 'strict-b')))).status).toBe(404);

    throttledPk = undefined;
    const again = (await batch()).json.results as Results;
    expect(again.map((result) => result.status)).toEqual([200, 202, 200]);
    expect(again.map((result) => result.message?.id)).toEqual(keys.map((key) => messageIdFor('acme', key)));
    expect((await api.call(getEvent(messageIdFor('acme', 'the-whole-batch')))).status).toBe(404);
  });
});
