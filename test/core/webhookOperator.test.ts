/**
 * Which deliveries a manual retry takes (DESIGN §11: "then the delivery is `failed`, listed and
 * retryable through the API"): a failed one, or a pending one whose copy is not coming — its next
 * attempt more than WEBHOOK_STALLED_AFTER_MS past — and never a delivered one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  mayRetryDelivery,
  stalledBefore,
  stalledRetryFrom,
  WEBHOOK_STALLED_AFTER_MS,
} from '../../lambdas/core/webhookOperator.js';
import { WEBHOOK_DELIVERY_STATUSES } from '../../lambdas/core/webhooks.js';

const NOW = new Date('2026-12-03T12:00:00.000Z');
const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs).toISOString();

describe('mayRetryDelivery', () => {
  it('takes a failed delivery, a pending one long overdue, and nothing else', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...WEBHOOK_DELIVERY_STATUSES),
        fc.option(fc.integer({ min: -30 * 86_400_000, max: 30 * 86_400_000 })),
        (status, offset) => {
          const nextAttemptAt = offset === null ? null : at(offset);
          const expected =
            status === 'failed' ||
            (status === 'pending' && offset !== null && offset < -WEBHOOK_STALLED_AFTER_MS);
          expect(mayRetryDelivery({ status, nextAttemptAt }, NOW)).toBe(expected);
        },
      ),
    );
  });

  it('draws the line at the bound: a copy just inside it may still come', () => {
    expect(mayRetryDelivery({ status: 'pending', nextAttemptAt: at(-WEBHOOK_STALLED_AFTER_MS) }, NOW)).toBe(
      false,
    );
    expect(
      mayRetryDelivery({ status: 'pending', nextAttemptAt: at(-WEBHOOK_STALLED_AFTER_MS - 1) }, NOW),
    ).toBe(true);
    expect(mayRetryDelivery({ status: 'pending', nextAttemptAt: 'not a time' }, NOW)).toBe(false);
    expect(stalledBefore(NOW).toISOString()).toBe(at(-WEBHOOK_STALLED_AFTER_MS));
  });
});

describe('stalledRetryFrom', () => {
  it('says from when a pending delivery can be retried: the first moment mayRetryDelivery takes it', () => {
    fc.assert(
      fc.property(fc.integer({ min: -30 * 86_400_000, max: 30 * 86_400_000 }), (offset) => {
        const delivery = { status: 'pending', nextAttemptAt: at(offset) } as const;
        const from = stalledRetryFrom(delivery);
        expect(from?.toISOString()).toBe(at(offset + WEBHOOK_STALLED_AFTER_MS));
        if (from === null) return;
        expect(mayRetryDelivery(delivery, from)).toBe(false);
        expect(mayRetryDelivery(delivery, new Date(from.getTime() + 1))).toBe(true);
      }),
    );
  });

  it('is null for a failed delivery (retryable now), a delivered one (never) and a pending one without a time', () => {
    expect(stalledRetryFrom({ status: 'failed', nextAttemptAt: null })).toBeNull();
    expect(stalledRetryFrom({ status: 'delivered', nextAttemptAt: at(0) })).toBeNull();
    expect(stalledRetryFrom({ status: 'pending', nextAttemptAt: null })).toBeNull();
  });
});
