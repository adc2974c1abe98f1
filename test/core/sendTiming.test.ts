import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AWS_CLIENT_LIMITS, worstCaseAwsCallMs } from '../../lambdas/core/awsClientLimits.js';
import {
  attemptBudgetMs,
  hasTimeForAttempt,
  MAX_REPLY_WAIT_MS,
  OUTCOME_WRITE_RESERVE_MS,
  outcomeWriteReserveMs,
  preDotBudgetMs,
  replyDeadline,
  replyEndsBy,
  sendTimingProblems,
} from '../../lambdas/core/sendTiming.js';

/**
 * DESIGN §5, "Never out of time mid-send": the time reserved for the outcome write after a reply
 * covers one whole AWS SDK call under the clients' own limits, so a DynamoDB that hangs right after
 * a 250 cannot be cut by the function timeout before the call gives up.
 */

const DEFAULTS = {
  leaseSeconds: 300,
  senderTimeoutSeconds: 240,
  smtpTimeoutSeconds: 20,
  smtpReplyTimeoutSeconds: 120,
};

const limitsArbitrary = fc.record({
  connectionTimeoutMs: fc.integer({ min: 1, max: 30_000 }),
  requestTimeoutMs: fc.integer({ min: 1, max: 30_000 }),
  maxAttempts: fc.integer({ min: 1, max: 6 }),
});

describe('one SDK call in the worst case', () => {
  it('is every attempt timing out on connection and request, with the longest backoff between them', () => {
    // 3 × (3 s + 5 s) + backoff before the 2nd (≤ 1 s) and the 3rd (≤ 2 s) attempt.
    expect(worstCaseAwsCallMs(AWS_CLIENT_LIMITS)).toBe(24_000 + 1_000 + 2_000);
    expect(worstCaseAwsCallMs({ connectionTimeoutMs: 100, requestTimeoutMs: 200, maxAttempts: 1 })).toBe(300);
    expect(
      worstCaseAwsCallMs(
        { connectionTimeoutMs: 0, requestTimeoutMs: 0, maxAttempts: 8 },
        { baseMs: 1000, capMs: 20_000 },
      ),
    ).toBe(1000 + 2000 + 4000 + 8000 + 16_000 + 20_000 + 20_000);
  });

  it('grows with every limit', () => {
    fc.assert(
      fc.property(
        limitsArbitrary,
        fc.constantFrom('connectionTimeoutMs', 'requestTimeoutMs', 'maxAttempts'),
        (limits, key) => {
          const raised = { ...limits, [key]: limits[key] + 1 };
          return worstCaseAwsCallMs(raised) > worstCaseAwsCallMs(limits);
        },
      ),
    );
  });
});

describe('the outcome-write reserve', () => {
  it('covers one whole SDK call under the clients’ limits', () => {
    expect(OUTCOME_WRITE_RESERVE_MS).toBe(outcomeWriteReserveMs(AWS_CLIENT_LIMITS));
    expect(OUTCOME_WRITE_RESERVE_MS).toBeGreaterThan(worstCaseAwsCallMs(AWS_CLIENT_LIMITS));
  });

  it('moves with the limits, and the attempt budget and the time rule move with it', () => {
    fc.assert(
      fc.property(limitsArbitrary, (limits) => {
        const reserve = outcomeWriteReserveMs(limits);
        expect(reserve).toBeGreaterThan(worstCaseAwsCallMs(limits));
        expect(attemptBudgetMs(DEFAULTS, limits)).toBe(40_000 + 120_000 + reserve);
        const attemptSeconds = attemptBudgetMs(DEFAULTS, limits) / 1000;
        const fits = {
          ...DEFAULTS,
          senderTimeoutSeconds: Math.floor(attemptSeconds) + 1,
          leaseSeconds: 10_000,
        };
        const tooShort = { ...fits, senderTimeoutSeconds: Math.floor(attemptSeconds) };
        expect(sendTimingProblems(fits, limits)).toEqual([]);
        expect(sendTimingProblems(tooShort, limits)).toHaveLength(1);
      }),
    );
  });

  it('keeps the defaults inside the rule (lease 300 > sender 240 > one whole attempt)', () => {
    expect(sendTimingProblems(DEFAULTS)).toEqual([]);
    expect(attemptBudgetMs(DEFAULTS)).toBe(40_000 + 120_000 + OUTCOME_WRITE_RESERVE_MS);
    expect(attemptBudgetMs(DEFAULTS)).toBeLessThan(DEFAULTS.senderTimeoutSeconds * 1000);
  });

  it('names the sender timeout and the reserve when the rule breaks', () => {
    const [problem] = sendTimingProblems({ ...DEFAULTS, senderTimeoutSeconds: 180 });
    expect(problem).toContain('the sender timeout (180 s)');
    expect(problem).toContain(`${OUTCOME_WRITE_RESERVE_MS / 1000} s for the outcome write`);
  });
});

/**
 * DESIGN §5, "Never out of time mid-send": an SMTP transaction starts (MAIL FROM) only while the
 * time left covers the phase before the dot, the whole reply wait and the outcome write — the rule
 * of the claim, applied again at MAIL FROM, after the reads that follow the claim. The wait for the
 * reply to the final dot never reaches into the time the outcome write needs.
 */
describe('starting an SMTP transaction, and the wait for the reply to its final dot', () => {
  const timingArbitrary = fc.record({
    smtpTimeoutSeconds: fc.integer({ min: 1, max: 60 }),
    smtpReplyTimeoutSeconds: fc.integer({ min: 1, max: 600 }),
  });

  it('with the time for a whole attempt at MAIL FROM, waits the whole reply timeout and leaves the write its reserve', () => {
    fc.assert(
      fc.property(
        timingArbitrary,
        limitsArbitrary,
        fc.nat(10_000_000),
        fc.nat(1_000_000),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (timing, limits, start, extra, preDotShare) => {
          const remaining = attemptBudgetMs(timing, limits) + extra;
          expect(hasTimeForAttempt(remaining, timing, limits)).toBe(true);
          // The dot goes out within the phase's own bound.
          const dot = start + Math.floor(preDotShare * preDotBudgetMs(timing));
          const deadline = replyDeadline(dot, replyEndsBy(start, remaining, limits));
          expect(deadline - dot).toBeGreaterThanOrEqual(
            Math.min(timing.smtpReplyTimeoutSeconds * 1000, MAX_REPLY_WAIT_MS),
          );
          expect(start + remaining - deadline).toBeGreaterThanOrEqual(outcomeWriteReserveMs(limits));
        },
      ),
    );
  });

  it('never waits past the end less the reserve, nor past ten minutes, whatever came before the dot', () => {
    fc.assert(
      fc.property(fc.nat(1_000_000), fc.nat(2_000_000), (dot, endsBy) => {
        const deadline = replyDeadline(dot, endsBy);
        expect(deadline).toBeLessThanOrEqual(endsBy);
        expect(deadline).toBeLessThanOrEqual(dot + MAX_REPLY_WAIT_MS);
        if (endsBy <= dot + MAX_REPLY_WAIT_MS) expect(deadline).toBe(endsBy);
      }),
    );
  });

  it('is not started with less than a whole attempt left', () => {
    fc.assert(
      fc.property(
        timingArbitrary,
        limitsArbitrary,
        fc.integer({ min: 1, max: 1_000_000 }),
        (timing, limits, short) => {
          expect(hasTimeForAttempt(attemptBudgetMs(timing, limits) - short, timing, limits)).toBe(false);
        },
      ),
    );
  });
});
