import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  RECEIVE_LEAD_SECONDS,
  SQS_MAX_DELAY_SECONDS,
  SQS_MAX_VISIBILITY_SECONDS,
  sqsDelaySeconds,
  visibilitySinceReceive,
} from '../../lambdas/core/queueLimits.js';

describe('visibilitySinceReceive: a kept copy’s visibility within the 12 hours SQS counts from the receive', () => {
  it('is what was asked when it fits, never more, and never past 12 hours from a receive up to a minute before the invocation', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 * SQS_MAX_VISIBILITY_SECONDS }),
        fc.integer({ min: 0, max: 900_000 }),
        (seconds, elapsedMs) => {
          const given = visibilitySinceReceive(seconds, elapsedMs);
          const sinceReceive = RECEIVE_LEAD_SECONDS + elapsedMs / 1000;
          expect(given).toBeGreaterThanOrEqual(0);
          expect(given).toBeLessThanOrEqual(seconds);
          expect(given + sinceReceive).toBeLessThanOrEqual(SQS_MAX_VISIBILITY_SECONDS);
          if (seconds + Math.ceil(sinceReceive) <= SQS_MAX_VISIBILITY_SECONDS) expect(given).toBe(seconds);
        },
      ),
    );
  });
});

describe('sqsDelaySeconds: a delay as SQS takes it', () => {
  it('keeps whole seconds, dropping the sub-second rest', () => {
    expect(sqsDelaySeconds(10.999)).toBe(10);
    expect(sqsDelaySeconds(600)).toBe(600);
    expect(sqsDelaySeconds(0.4)).toBe(0);
  });
  it('is 0 for a delay that is over, negative or not a number', () => {
    expect(sqsDelaySeconds(0)).toBe(0);
    expect(sqsDelaySeconds(-3600)).toBe(0);
    expect(sqsDelaySeconds(Number.NaN)).toBe(0);
    expect(sqsDelaySeconds(Number.NEGATIVE_INFINITY)).toBe(0);
  });
  it('stops at the 900 s SQS accepts', () => {
    expect(sqsDelaySeconds(900)).toBe(900);
    expect(sqsDelaySeconds(900.5)).toBe(900);
    expect(sqsDelaySeconds(86_400)).toBe(SQS_MAX_DELAY_SECONDS);
    expect(sqsDelaySeconds(Number.POSITIVE_INFINITY)).toBe(SQS_MAX_DELAY_SECONDS);
  });
  it('is always a whole number in [0, 900], never more than asked', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: false }), (seconds) => {
        const delay = sqsDelaySeconds(seconds);
        expect(Number.isInteger(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(SQS_MAX_DELAY_SECONDS);
        if (seconds >= 0) expect(delay).toBeLessThanOrEqual(seconds);
        if (seconds >= 1 && seconds <= SQS_MAX_DELAY_SECONDS) expect(seconds - delay).toBeLessThan(1);
      }),
    );
  });
});
