import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateCreateWebhook } from '../../lambdas/core/requestSchemas.js';
import {
  type AttemptResult,
  decideAfterAttempt,
  decideCopyAhead,
  decodeWebhookCopy,
  encodeWebhookCopy,
  isCopyOfItsRetry,
  isSubscribed,
  isWebhookDeliveryId,
  KEPT_COPY_BACKOFF,
  keptCopyVisibilitySeconds,
  type RetiredSecret,
  retireOnRotation,
  retryAfterMs,
  signingSecrets,
  WEBHOOK_BACKOFF,
  WEBHOOK_COPY_AHEAD_WAIT_MS,
  WEBHOOK_DUE_SLACK_MS,
  WEBHOOK_RETIRED_SECRETS_MAX,
  WEBHOOK_SECRET_OVERLAP_MS,
  WEBHOOK_TIMEOUT_MS,
  webhookDeliveryId,
  webhookRetryDelayMs,
} from '../../lambdas/core/webhooks.js';

const failure: AttemptResult = { kind: 'response', statusCode: 500 };
const resultArb: fc.Arbitrary<AttemptResult> = fc.oneof(
  fc.integer({ min: 100, max: 599 }).map((statusCode) => ({ kind: 'response', statusCode }) as const),
  fc.constant({ kind: 'timeout' } as const),
  fc.constant({ kind: 'refused', reason: 'x' } as const),
  fc.constant({ kind: 'network', reason: 'ECONNREFUSED' } as const),
);

describe('webhook retries (DESIGN §11)', () => {
  it('waits 10 s for an answer', () => {
    expect(WEBHOOK_TIMEOUT_MS).toBe(10_000);
  });

  it('draws each delay with full jitter under min(cap, base · 2^(n−1)) (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -5, max: 200 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (n, draw) => {
          const delay = webhookRetryDelayMs(n, () => draw);
          const ceiling = Math.min(WEBHOOK_BACKOFF.capMs, WEBHOOK_BACKOFF.baseMs * 2 ** (Math.max(1, n) - 1));
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(ceiling);
          expect(Number.isInteger(delay)).toBe(true);
        },
      ),
    );
    expect(webhookRetryDelayMs(1, () => 0.999_999)).toBeLessThanOrEqual(WEBHOOK_BACKOFF.baseMs);
    expect(webhookRetryDelayMs(3, () => Number.NaN)).toBe(0);
  });

  it('is delivered exactly on a 2xx; otherwise retried until the window ends, failed once it has (property)', () => {
    fc.assert(
      fc.property(
        resultArb,
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 48 * 3_600_000 }),
        fc.integer({ min: 1, max: 72 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (result, attempts, elapsedMs, retryHours, draw) => {
          const windowStartedAt = new Date('2026-12-01T00:00:00.000Z');
          const now = new Date(windowStartedAt.getTime() + elapsedMs);
          const decision = decideAfterAttempt({
            result,
            attempts,
            windowStartedAt,
            now,
            retryHours,
            random: () => draw,
          });
          const ok = result.kind === 'response' && result.statusCode >= 200 && result.statusCode < 300;
          if (ok) {
            expect(decision.kind).toBe('delivered');
            return;
          }
          expect(decision.kind).not.toBe('delivered');
          const windowEnd = windowStartedAt.getTime() + retryHours * 3_600_000;
          // DESIGN §11: retried "for up to" the window: a wait that would end past it ends at its end,
          // so a delivery is failed only once its window is spent: less left than a copy may come early
          // (decision 0325).
          if (windowEnd - now.getTime() >= WEBHOOK_DUE_SLACK_MS) {
            expect(decision.kind).toBe('retry');
            if (decision.kind !== 'retry') return;
            expect(decision.at.getTime()).toBeGreaterThanOrEqual(now.getTime());
            expect(decision.at.getTime()).toBeLessThanOrEqual(windowEnd);
          } else {
            expect(decision.kind).toBe('failed');
          }
        },
      ),
    );
  });

  it('ends failed after the window with a schedule that keeps trying until its very end', () => {
    const start = new Date('2026-12-01T00:00:00.000Z');
    let now = start;
    let attempts = 0;
    for (;;) {
      attempts++;
      const decision = decideAfterAttempt({
        result: failure,
        attempts,
        windowStartedAt: start,
        now,
        retryHours: 24,
        random: () => 0.5,
      });
      if (decision.kind !== 'retry') {
        expect(decision.kind).toBe('failed');
        break;
      }
      now = decision.at;
    }
    expect(now.getTime() - start.getTime()).toBe(24 * 3_600_000);
    expect(attempts).toBeGreaterThan(20);
  });

  it('tries once more at the end of a short window when a high draw would wait past it', () => {
    // A 6-minute window, a 5 s base: after 7 attempts and 2.95 minutes, a draw near 1 of the
    // 320 s ceiling would wait past the end; the delivery is tried at the end, not failed now.
    const start = new Date('2026-12-01T00:00:00.000Z');
    const now = new Date(start.getTime() + 177_000);
    const decision = decideAfterAttempt({
      result: failure,
      attempts: 7,
      windowStartedAt: start,
      now,
      retryHours: 0.1,
      random: () => 0.999,
      retryBaseMs: 5_000,
    });
    expect(decision).toEqual({ kind: 'retry', at: new Date(start.getTime() + 360_000) });
  });
});

describe("an answer's Retry-After (Standard Webhooks: taken into account; decision 0243)", () => {
  const now = new Date('2026-12-01T12:00:00.000Z');

  it('reads whole seconds and the three HTTP-date forms, capped at the backoff cap; anything else is none', () => {
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Tue, 01 Dec 2026 12:10:00 GMT', now)).toBe(600_000);
    expect(retryAfterMs('Tuesday, 01-Dec-26 12:10:00 GMT', now)).toBe(600_000);
    expect(retryAfterMs('Tue Dec  1 12:10:00 2026', now)).toBe(600_000);
    expect(retryAfterMs('Tue, 01 Dec 2026 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('86400', now)).toBe(WEBHOOK_BACKOFF.capMs);
    expect(retryAfterMs('9'.repeat(400), now)).toBe(WEBHOOK_BACKOFF.capMs);
    for (const bad of [
      undefined,
      '',
      '-5',
      '1.5',
      '120s',
      '2026-12-01T12:10:00Z',
      'Tue, 01 Dec 2026',
      'soon',
    ])
      expect(retryAfterMs(bad, now), String(bad)).toBeUndefined();
  });

  it('is a floor on the wait, never past the window: asked beyond its end, the last try is at the end', () => {
    const decide = (retryAfter: string, elapsedMs = 0) =>
      decideAfterAttempt({
        result: { kind: 'response', statusCode: 503, retryAfter },
        attempts: 1,
        windowStartedAt: new Date(now.getTime() - elapsedMs),
        now,
        retryHours: 24,
        random: () => 0.5,
      });
    expect(decide('120')).toEqual({ kind: 'retry', at: new Date(now.getTime() + 120_000) });
    // Less than the backoff's own draw (2.5 s): the backoff's.
    expect(decide('1')).toEqual({ kind: 'retry', at: new Date(now.getTime() + 2_500) });
    const tenMinutesLeft = 24 * 3_600_000 - 600_000;
    expect(decide('3600', tenMinutesLeft)).toEqual({ kind: 'retry', at: new Date(now.getTime() + 600_000) });
  });

  it('changes only when a retry is made, never whether (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 599 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 0, max: 30 * 3_600_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (statusCode, seconds, attempts, elapsedMs, draw) => {
          const input = {
            attempts,
            windowStartedAt: new Date(now.getTime() - elapsedMs),
            now,
            retryHours: 24,
            random: () => draw,
          };
          const plain = decideAfterAttempt({ ...input, result: { kind: 'response', statusCode } });
          const asked = decideAfterAttempt({
            ...input,
            result: { kind: 'response', statusCode, retryAfter: String(seconds) },
          });
          expect(asked.kind).toBe(plain.kind);
          if (asked.kind !== 'retry' || plain.kind !== 'retry') return;
          const windowEnd = input.windowStartedAt.getTime() + 24 * 3_600_000;
          const floor = Math.min(now.getTime() + Math.min(seconds * 1000, WEBHOOK_BACKOFF.capMs), windowEnd);
          expect(asked.at.getTime()).toBe(Math.max(plain.at.getTime(), floor));
        },
      ),
    );
  });
});

describe('webhook ids, copies and requests', () => {
  it('gives one event to one endpoint one delivery id, sortable by the event time', () => {
    const a = webhookDeliveryId('whe_01JE0000000000000000000000', 'evt_1', Date.UTC(2026, 11, 1));
    expect(webhookDeliveryId('whe_01JE0000000000000000000000', 'evt_1', Date.UTC(2026, 11, 1))).toBe(a);
    expect(webhookDeliveryId('whe_01JE0000000000000000000001', 'evt_1', Date.UTC(2026, 11, 1))).not.toBe(a);
    const later = webhookDeliveryId('whe_01JE0000000000000000000000', 'evt_0', Date.UTC(2026, 11, 2));
    expect(later > a).toBe(true);
    expect(isWebhookDeliveryId(a)).toBe(true);
  });

  it('round-trips a copy and refuses anything else', () => {
    const copy = {
      v: 1,
      endpoint: 'whe_01JE0000000000000000000000',
      delivery: webhookDeliveryId('whe_01JE0000000000000000000000', 'evt_1', 0),
      rev: 2,
      seq: 3,
    } as const;
    expect(decodeWebhookCopy(encodeWebhookCopy(copy))).toEqual(copy);
    expect(decodeWebhookCopy('{')).toBeNull();
    expect(decodeWebhookCopy(JSON.stringify({ ...copy, rev: 0 }))).toBeNull();
    expect(decodeWebhookCopy(JSON.stringify({ ...copy, extra: 1 }))).toBeNull();
  });

  it.each([
    ['not JSON', '{'],
    ['null', 'null'],
    ['an array', '[]'],
    ['a string', '"copy"'],
    ['a number', '1'],
  ])('refuses a copy that is %s', (_what, body) => {
    expect(decodeWebhookCopy(body)).toBeNull();
  });

  const validCopy = {
    v: 1,
    endpoint: 'whe_01JE0000000000000000000000',
    delivery: webhookDeliveryId('whe_01JE0000000000000000000000', 'evt_1', 0),
    rev: 1,
    seq: 0,
  };
  it.each<[string, Record<string, unknown>]>([
    ['another version', { v: 2 }],
    ['the version as text', { v: '1' }],
    ['no version', { v: undefined }],
    ['an endpoint id of another form', { endpoint: 'whe_01je0000000000000000000000' }],
    ['a delivery id of another form', { delivery: 'dlv_1' }],
    ['an endpoint id that is not text', { endpoint: 1 }],
    ['no delivery', { delivery: undefined }],
    ['revision 0', { rev: 0 }],
    ['a fractional revision', { rev: 1.5 }],
    ['a revision as text', { rev: '1' }],
    ['a revision past the safe integers', { rev: 2 ** 53 }],
    ['a negative attempt', { seq: -1 }],
    ['a fractional attempt', { seq: 0.5 }],
    ['no attempt', { seq: undefined }],
    ['a null queue time', { issued_at: null }],
    ['a negative queue time', { issued_at: -1 }],
    ['a fractional queue time', { issued_at: 1.5 }],
    ['a retry id of another form', { retry: 'ABC' }],
    ['a retry id that is not text', { retry: 1 }],
    ['a field of its own', { note: 'x' }],
    ['a __proto__ key', JSON.parse('{"__proto__": 1}') as Record<string, unknown>],
  ])('refuses a copy with %s', (_what, change) => {
    expect(decodeWebhookCopy(JSON.stringify({ ...validCopy, ...change }))).toBeNull();
  });

  it('refuses a copy whose count is too large to be a number', () => {
    // JSON.parse reads 1e999 as Infinity, which is no integer.
    expect(decodeWebhookCopy(JSON.stringify(validCopy).replace('"seq":0', '"seq":1e999'))).toBeNull();
  });

  it('reads back exactly the fields of a copy, the queue time and the retry only when it has them', () => {
    expect(decodeWebhookCopy(JSON.stringify(validCopy))).toStrictEqual(validCopy);
    expect(decodeWebhookCopy(JSON.stringify({ ...validCopy, issued_at: 0 }))).toStrictEqual({
      ...validCopy,
      issued_at: 0,
    });
    const retried = { ...validCopy, issued_at: 0, retry: 'a'.repeat(32) };
    expect(decodeWebhookCopy(JSON.stringify(retried))).toStrictEqual(retried);
  });

  it("takes, for a revision a manual retry wrote, only that retry's copies (two retries at once: one goes on)", () => {
    const ours = 'a'.repeat(32);
    expect(isCopyOfItsRetry({ retry: ours }, ours)).toBe(true);
    expect(isCopyOfItsRetry({ retry: 'b'.repeat(32) }, ours)).toBe(false);
    expect(isCopyOfItsRetry({}, ours)).toBe(false);
    // No retry wrote this revision: the chain's copies, and one queued before this rule, go on.
    expect(isCopyOfItsRetry({}, null)).toBe(true);
    expect(isCopyOfItsRetry({ retry: ours }, null)).toBe(true);
  });

  it('of any number of retries at once, the copies of exactly one go on: the one whose write landed (property)', () => {
    const retryId = fc.stringMatching(/^[0-9a-f]{32}$/);
    fc.assert(
      fc.property(
        fc.uniqueArray(retryId, { minLength: 1, maxLength: 6 }),
        fc.nat(),
        fc.nat({ max: 4 }),
        (retries, winner, chainLength) => {
          const landed = retries[winner % retries.length] ?? null;
          // Each retry queued its copy, and the winner's chain queued more copies carrying its id.
          const copies = [
            ...retries.map((retry) => ({ retry })),
            ...Array.from({ length: chainLength }, () => ({ retry: landed ?? undefined })),
          ];
          const taken = copies.filter((copy) => isCopyOfItsRetry(copy, landed));
          expect(taken).toHaveLength(1 + chainLength);
          expect(taken.every((copy) => copy.retry === landed)).toBe(true);
        },
      ),
    );
  });

  it('lets a copy queued before its write wait for it a bounded time, and no other copy', () => {
    const base = {
      v: 1,
      endpoint: 'whe_01JE0000000000000000000000',
      delivery: webhookDeliveryId('whe_01JE0000000000000000000000', 'evt_1', 0),
      rev: 2,
      seq: 0,
    } as const;
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 45 }),
        fc.integer({ min: -1000, max: 10 * WEBHOOK_COPY_AHEAD_WAIT_MS }),
        (issuedAt, age) => {
          const now = new Date(issuedAt + age);
          expect(decideCopyAhead(base, now)).toEqual({ kind: 'stale' });
          const decision = decideCopyAhead({ ...base, issued_at: issuedAt }, now);
          if (age >= WEBHOOK_COPY_AHEAD_WAIT_MS) expect(decision).toEqual({ kind: 'stale' });
          else {
            expect(decision.kind).toBe('wait');
            // Each wait is short, so a write that lands is followed within seconds.
            if (decision.kind === 'wait') expect(decision.delaySeconds).toBeGreaterThanOrEqual(1);
            if (decision.kind === 'wait') expect(decision.delaySeconds).toBeLessThanOrEqual(5);
          }
        },
      ),
    );
    expect(decodeWebhookCopy(encodeWebhookCopy({ ...base, issued_at: 5 }))).toEqual({
      ...base,
      issued_at: 5,
    });
  });

  it('validates POST /v1/webhooks and subscriptions', () => {
    expect(validateCreateWebhook({ url: 'https://example.com/hook' })).toEqual({
      ok: true,
      value: { url: 'https://example.com/hook', events: null, description: null },
    });
    const bad = validateCreateWebhook({ url: '', events: ['message.sending'], other: 1 });
    expect(bad.ok).toBe(false);
    if (!bad.ok)
      expect(bad.errors.map((error) => error.field).sort()).toEqual(['/events/0', '/other', '/url']);
    expect(isSubscribed(null, 'message.sent')).toBe(true);
    expect(isSubscribed(['message.failed'], 'message.sent')).toBe(false);
  });
});

describe('a webhook copy kept after a failure of the function itself', () => {
  it('comes back after 5 s doubling with each receive, at most the queue visibility timeout, never at once', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (receives, draw) => {
          const seconds = keptCopyVisibilitySeconds(receives, () => draw);
          const ceiling = Math.min(
            KEPT_COPY_BACKOFF.capSeconds,
            KEPT_COPY_BACKOFF.baseSeconds * 2 ** (receives - 1),
          );
          expect(Number.isInteger(seconds)).toBe(true);
          expect(seconds).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
          expect(seconds).toBeLessThanOrEqual(ceiling);
          expect(seconds).toBeGreaterThan(0);
        },
      ),
    );
    expect(keptCopyVisibilitySeconds(1, () => 1)).toBe(5);
    expect(keptCopyVisibilitySeconds(2, () => 1)).toBe(10);
    expect(keptCopyVisibilitySeconds(30, () => 1)).toBe(360);
    // A receive count SQS did not give, or a bad draw, is read as the first receive and the lowest draw.
    expect(keptCopyVisibilitySeconds(Number.NaN, () => Number.NaN)).toBe(3);
  });
});

describe('rotated secrets (DESIGN §3: the old one keeps signing beside the new one for 24 h)', () => {
  const HOUR = 3_600_000;
  /** Rotations at the given hours from t0, each retiring the secret before it; the endpoint after them. */
  const rotatedAt = (hours: readonly number[]) => {
    let endpoint: { secret: string; retiredSecrets: readonly RetiredSecret[] } = {
      secret: 's0',
      retiredSecrets: [],
    };
    hours.forEach((hour, index) => {
      endpoint = {
        secret: `s${index + 1}`,
        retiredSecrets: retireOnRotation(endpoint, new Date(hour * HOUR)),
      };
    });
    return endpoint;
  };

  it('signs with every secret retired less than 24 h ago, up to the bound, the current one first', () => {
    fc.assert(
      fc.property(
        fc
          .array(fc.integer({ min: 0, max: 96 }), { maxLength: 12 })
          .map((hours) => hours.sort((a, b) => a - b)),
        fc.integer({ min: 0, max: 130 }),
        (hours, at) => {
          const endpoint = rotatedAt(hours);
          const now = new Date(Math.max(at, hours.at(-1) ?? 0) * HOUR);
          const signing = signingSecrets(endpoint, now);
          // Secret i (from 0) was retired by rotation i, at hours[i], and signs for a day after it.
          const live = hours
            .map((hour, index) => ({ secret: `s${index}`, hour }))
            .filter(({ hour }) => now.getTime() < hour * HOUR + WEBHOOK_SECRET_OVERLAP_MS)
            .reverse();
          // The bound keeps the newest retired ones; it is met only by more rotations in a day than it.
          const expected = live.slice(0, WEBHOOK_RETIRED_SECRETS_MAX).map(({ secret }) => secret);
          expect(signing).toEqual([endpoint.secret, ...expected]);
        },
      ),
    );
  });

  it('keeps a secret retired twice in a day signing until its own day is over', () => {
    const endpoint = rotatedAt([0, 1]);
    expect(signingSecrets(endpoint, new Date(23 * HOUR))).toEqual(['s2', 's1', 's0']);
    expect(signingSecrets(endpoint, new Date(24 * HOUR))).toEqual(['s2', 's1']);
    expect(signingSecrets(endpoint, new Date(25 * HOUR))).toEqual(['s2']);
  });
});
