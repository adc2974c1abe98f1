import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  backoffCeilingSeconds,
  backoffSeconds,
  CONFIG_BACKOFF_FLOOR_SECONDS,
  configBackoffCeilingSeconds,
  configBackoffFloorSeconds,
  configBackoffSeconds,
} from '../../lambdas/core/backoff.js';
import { SQS_MAX_VISIBILITY_SECONDS } from '../../lambdas/core/queueLimits.js';

const defaults = { baseSeconds: 30, capSeconds: 3600 };
const lowest = () => 0;
const highest = () => 0.999_999_999;

describe('backoff: exponential with full jitter and a cap (DESIGN §5)', () => {
  it('counts attempts from 0: the first retry waits up to base seconds', () => {
    expect(backoffCeilingSeconds(0, defaults)).toBe(30);
    expect(backoffCeilingSeconds(1, defaults)).toBe(60);
    expect(backoffCeilingSeconds(2, defaults)).toBe(120);
  });
  it('never exceeds the cap', () => {
    expect(backoffCeilingSeconds(7, defaults)).toBe(3600);
    expect(backoffCeilingSeconds(1_000_000, defaults)).toBe(3600);
    expect(backoffCeilingSeconds(Number.POSITIVE_INFINITY, defaults)).toBe(3600);
  });
  it('draws whole seconds from 0 up to the ceiling, both ends included', () => {
    expect(backoffSeconds(2, defaults, lowest)).toBe(0);
    expect(backoffSeconds(2, defaults, highest)).toBe(120);
    expect(backoffSeconds(2, defaults, () => 0.5)).toBe(60);
  });
  it('reads a negative, NaN or fractional attempt as its floor, at least 0', () => {
    expect(backoffCeilingSeconds(-3, defaults)).toBe(30);
    expect(backoffCeilingSeconds(Number.NaN, defaults)).toBe(30);
    expect(backoffCeilingSeconds(1.9, defaults)).toBe(60);
  });
  it('survives a broken random source', () => {
    for (const broken of [Number.NaN, -1, 1, 7, Number.POSITIVE_INFINITY]) {
      const delay = backoffSeconds(3, defaults, () => broken);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(240);
    }
  });
  it('clamps to the SQS ChangeMessageVisibility maximum of 12 hours', () => {
    expect(backoffCeilingSeconds(100, { baseSeconds: 30, capSeconds: 100_000 })).toBe(
      SQS_MAX_VISIBILITY_SECONDS,
    );
  });
  it('never goes negative or NaN with a nonsense policy', () => {
    expect(backoffCeilingSeconds(3, { baseSeconds: -5, capSeconds: Number.NaN })).toBe(0);
    expect(backoffSeconds(3, { baseSeconds: Number.NaN, capSeconds: 10 }, highest)).toBe(0);
  });

  describe('config-class errors', () => {
    it('wait at least 15 minutes with the default policy', () => {
      expect(CONFIG_BACKOFF_FLOOR_SECONDS).toBe(900);
      expect(configBackoffSeconds(0, defaults, lowest)).toBe(900);
    });
    it('start with a ceiling of the retry cap and double up to 12 hours', () => {
      expect(configBackoffCeilingSeconds(0, defaults)).toBe(3600);
      expect(configBackoffCeilingSeconds(1, defaults)).toBe(7200);
      expect(configBackoffCeilingSeconds(4, defaults)).toBe(SQS_MAX_VISIBILITY_SECONDS);
      expect(configBackoffSeconds(50, defaults, highest)).toBe(SQS_MAX_VISIBILITY_SECONDS);
    });
    it('shrink with the cap when tests compress time', () => {
      const fast = { baseSeconds: 1, capSeconds: 2 };
      expect(configBackoffFloorSeconds(fast)).toBe(2);
      expect(configBackoffSeconds(0, fast, highest)).toBe(2);
      expect(configBackoffSeconds(1, fast, highest)).toBe(4);
    });
  });

  describe('properties', () => {
    const policy = fc
      .tuple(fc.integer({ min: 1, max: 43_200 }), fc.integer({ min: 1, max: 43_200 }))
      .map(([a, b]) => ({ baseSeconds: Math.min(a, b), capSeconds: Math.max(a, b) }));
    const attempt = fc.oneof(
      fc.integer({ min: 0, max: 100 }),
      fc.integer(),
      fc.double(),
      fc.constant(Number.MAX_SAFE_INTEGER),
    );
    const random = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }).map((x) => () => x);

    it('every delay is a whole number of seconds within [0, cap]', () => {
      fc.assert(
        fc.property(attempt, policy, random, (n, p, r) => {
          const delay = backoffSeconds(n, p, r);
          expect(Number.isInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(p.capSeconds);
          expect(delay).toBeLessThanOrEqual(backoffCeilingSeconds(n, p));
        }),
      );
    });

    it('the ceiling grows monotonically with the attempt', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 0, max: 2000 }),
          fc.integer({ min: 0, max: 2000 }),
          policy,
          (a, b, p) => {
            const [low, high] = a <= b ? [a, b] : [b, a];
            expect(backoffCeilingSeconds(low, p)).toBeLessThanOrEqual(backoffCeilingSeconds(high, p));
          },
        ),
      );
    });

    it('config-class delays lie within [min(900, cap), 43 200]', () => {
      fc.assert(
        fc.property(attempt, policy, random, (n, p, r) => {
          const delay = configBackoffSeconds(n, p, r);
          expect(Number.isInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(Math.min(900, p.capSeconds));
          expect(delay).toBeLessThanOrEqual(SQS_MAX_VISIBILITY_SECONDS);
        }),
      );
    });
  });
});
