import { describe, expect, it } from 'vitest';
import type { ApiStore } from '../../lambdas/ports/ApiStore.js';
import { apiHarness } from './apiHarness.js';
import { enqueueEvent, getEvent, validBody } from './events.js';

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
});
