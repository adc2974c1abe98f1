import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  hasFailedItems,
  mayRetry,
  mergeBatchResults,
  parseRetryAfter,
  retryDelayMs,
} from '../../lambdas/client/retryPolicy.js';

const policy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1_000, maxRetryAfterMs: 10_000 };
const enqueue = { method: 'POST', path: '/v1/messages', hasIdempotencyKey: true };

describe('the client retry policy', () => {
  it('retries 429, 5xx and network errors of a keyed request, and nothing else', () => {
    for (const status of [429, 500, 502, 503, 504]) {
      expect(mayRetry(enqueue, { kind: 'status', status, retryAfterMs: null })).toBe(true);
    }
    expect(mayRetry(enqueue, { kind: 'network' })).toBe(true);
    for (const status of [200, 202, 400, 401, 403, 404, 409, 413, 415, 422]) {
      expect(mayRetry(enqueue, { kind: 'status', status, retryAfterMs: null })).toBe(false);
    }
  });

  it('retries GET, a batch enqueue, the idempotent PUTs, a reschedule, a cancel and a render like a keyed request; everything else only after a 429', () => {
    // A reschedule sets an absolute time and a cancel ends the message: twice is once (decision 0196).
    const repeatable = [
      ['GET', '/v1/messages/m-1'],
      ['POST', '/v1/messages/batch'],
      ['PUT', '/v1/groups/campaign%3A42'],
      ['PUT', '/prod/v1/suppressions/ada%40example.com'],
      ['PATCH', '/prod/v1/messages/m-1'],
      ['DELETE', '/v1/messages/m-1'],
      ['POST', '/prod/v1/templates/hello/render'],
    ];
    for (const [method = '', path = ''] of repeatable) {
      expect(mayRetry({ method, path, hasIdempotencyKey: false }, { kind: 'network' })).toBe(true);
    }
    // A template PUT stores previous + 1 each time (DESIGN §3, §10): a lost answer repeated stores two.
    const once = [
      ['PUT', '/v1/templates/hello'],
      ['PUT', '/v1/anything-new/x'],
      ['POST', '/v1/messages/m-1/retry'],
      ['DELETE', '/v1/webhooks/w-1'],
      ['POST', '/v1/webhooks'],
    ];
    for (const [method = '', path = ''] of once) {
      const request = { method, path, hasIdempotencyKey: false };
      expect(mayRetry(request, { kind: 'network' })).toBe(false);
      expect(mayRetry(request, { kind: 'status', status: 503, retryAfterMs: null })).toBe(false);
      expect(mayRetry(request, { kind: 'status', status: 429, retryAfterMs: null })).toBe(true);
    }
  });

  it('counts an Idempotency-Key only where the API answers a replay: the enqueue (DESIGN §3); elsewhere it is ignored and decides nothing', () => {
    // A caller used to APIs that honour the header on every POST may send it with any call through
    // `http`: the API reads it on POST /v1/messages alone, so a second manual retry, webhook or template
    // version would be made.
    expect(mayRetry({ ...enqueue, path: '/prod/v1/messages' }, { kind: 'network' })).toBe(true);
    const ignored = [
      ['POST', '/v1/messages/m-1/retry'],
      ['POST', '/v1/webhooks'],
      ['POST', '/prod/v1/webhooks/w-1/rotate-secret'],
      ['POST', '/v1/webhooks/w-1/deliveries/d-1/retry'],
      ['PUT', '/v1/templates/hello'],
    ];
    for (const [method = '', path = ''] of ignored) {
      const request = { method, path, hasIdempotencyKey: true };
      expect([method, path, mayRetry(request, { kind: 'network' })]).toEqual([method, path, false]);
      expect(mayRetry(request, { kind: 'status', status: 503, retryAfterMs: null })).toBe(false);
      expect(mayRetry(request, { kind: 'status', status: 429, retryAfterMs: null })).toBe(true);
    }
  });

  it('backs off exponentially with full jitter under the cap', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), fc.double({ min: 0, max: 1, noNaN: true }), (retry, r) => {
        const delay = backoffDelayMs(retry, policy, () => r);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry));
        expect(Number.isInteger(delay)).toBe(true);
      }),
    );
    expect([0, 1, 2, 3, 4].map((retry) => backoffDelayMs(retry, policy, () => 1))).toEqual([
      100, 200, 400, 800, 1_000,
    ]);
    expect(backoffDelayMs(0, policy, () => Number.NaN)).toBe(0);
    // One draw a delay: the value checked is the value used (a seeded source gives 0.5 here, not 0).
    const draws = [0.5, 0];
    expect(backoffDelayMs(0, policy, () => draws.shift() ?? 1)).toBe(50);
    expect(draws).toEqual([0]);
  });

  it('honours Retry-After as given, and stops when it is longer than the policy waits or attempts are used up', () => {
    const failure = (retryAfterMs: number | null) => ({ kind: 'status', status: 503, retryAfterMs }) as const;
    expect(retryDelayMs({ request: enqueue, failure: failure(2_000), attempt: 1, policy }, () => 0)).toBe(
      2_000,
    );
    expect(
      retryDelayMs({ request: enqueue, failure: failure(20_000), attempt: 1, policy }, () => 0),
    ).toBeNull();
    expect(retryDelayMs({ request: enqueue, failure: failure(null), attempt: 1, policy }, () => 0.5)).toBe(
      50,
    );
    expect(
      retryDelayMs({ request: enqueue, failure: failure(null), attempt: 4, policy }, () => 0.5),
    ).toBeNull();
    expect(DEFAULT_RETRY_POLICY.maxAttempts).toBeGreaterThan(1);
  });

  it('reads Retry-After as delay-seconds or an HTTP-date', () => {
    const now = new Date('2026-12-01T12:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Tue, 01 Dec 2026 12:00:05 GMT', now)).toBe(5_000);
    expect(parseRetryAfter('Tue, 01 Dec 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(null, now)).toBeNull();
  });

  it("resends a batch only for an item whose write failed, and keeps every other item's first answer", () => {
    expect(hasFailedItems([{ status: 202 }, { status: 400 }, { status: 413 }, { status: 422 }])).toBe(false);
    expect(hasFailedItems([{ status: 200 }, { status: 503 }])).toBe(true);
    expect(hasFailedItems([{ status: 500 }])).toBe(true);
    const first = [
      { index: 0, status: 202, note: 'stored' },
      { index: 1, status: 500, note: 'failed' },
      { index: 2, status: 422, note: 'reused' },
      { index: 3, status: 503, note: 'busy' },
    ];
    const again = [
      { index: 0, status: 200, note: 'replay' },
      { index: 1, status: 202, note: 'stored now' },
      { index: 2, status: 422, note: 'reused again' },
      { index: 3, status: 503, note: 'still busy' },
    ];
    expect(mergeBatchResults(first, again).map((result) => result.note)).toEqual([
      'stored',
      'stored now',
      'reused',
      'still busy',
    ]);
  });
});
