import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runWithConcurrency } from '../../lambdas/core/runWithConcurrency.js';
import { tokenBucket } from '../../lambdas/sender/relayGate.js';

describe('the send rate limit (POSTDATE_MAX_SEND_RATE), a token bucket on an injected clock', () => {
  const clock = () => {
    let ms = 0;
    const waits: number[] = [];
    return {
      now: () => ms,
      sleep: async (milliseconds: number) => {
        waits.push(milliseconds);
        ms += milliseconds;
      },
      waits,
      elapsed: () => ms,
    };
  };

  it('lets a burst through, then spaces sends at the rate', async () => {
    const time = clock();
    const limiter = tokenBucket({ rate: 2, now: time.now, sleep: time.sleep });
    for (let index = 0; index < 6; index += 1) await limiter.acquire();
    // Two at once (burst = rate), then one every 500 ms.
    expect(time.waits).toEqual([500, 500, 500, 500]);
    expect(time.elapsed()).toBe(2000);
  });

  it('serves concurrent callers in turn, never more than the rate', async () => {
    const time = clock();
    const limiter = tokenBucket({ rate: 1, now: time.now, sleep: time.sleep });
    const started: number[] = [];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        await limiter.acquire();
        started.push(time.now());
      }),
    );
    expect(started).toEqual([0, 1000, 2000, 3000]);
  });

  it("never waits past a caller's start-by: such a turn answers false at once and takes nothing (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            recipients: fc.integer({ min: 1, max: 4 }),
            within: fc.option(fc.nat(5000), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        fc.double({ min: 0.1, max: 5, noNaN: true }),
        async (calls, rate) => {
          const time = clock();
          const limiter = tokenBucket({ rate, now: time.now, sleep: time.sleep });
          const granted: number[] = [];
          for (const { recipients, within } of calls) {
            const startBy = within === undefined ? undefined : time.now() + within;
            const before = time.now();
            const turn = await limiter.acquire(recipients, 1, startBy);
            if (startBy !== undefined)
              expect(time.now()).toBeLessThanOrEqual(turn.granted ? startBy + 1 : before);
            // Refused: its turn was indeed past the start-by.
            if (!turn.granted)
              expect(before + turn.inMs).toBeGreaterThan(startBy ?? Number.POSITIVE_INFINITY);
            if (turn.granted) granted.push(recipients);
          }
          // What was granted never beat the rate, counted in recipients as the relay counts them: the
          // burst (or one message larger than it, which goes alone), then `rate` recipients a second.
          const total = granted.reduce((sum, cost) => sum + cost, 0);
          const largest = Math.max(Math.max(1, rate), ...granted);
          expect(total).toBeLessThanOrEqual(largest + (rate * time.elapsed()) / 1000 + 1e-6);
        },
      ),
    );
  });

  it('refills while idle, up to the burst', async () => {
    const time = clock();
    const limiter = tokenBucket({ rate: 10, burst: 3, now: time.now, sleep: time.sleep });
    for (let index = 0; index < 3; index += 1) await limiter.acquire();
    await time.sleep(60_000);
    time.waits.length = 0;
    for (let index = 0; index < 4; index += 1) await limiter.acquire();
    expect(time.waits).toEqual([100]);
  });
});

describe('the send rate counts recipients and takes the fleet factor (DESIGN §5, "Rate")', () => {
  const clock = () => {
    let ms = 0;
    return {
      now: () => ms,
      sleep: async (milliseconds: number) => {
        ms += milliseconds;
      },
      elapsed: () => ms,
    };
  };

  it('spends one token per recipient: 10 recipients a second is one 5-recipient message every half second', async () => {
    const time = clock();
    const limiter = tokenBucket({ rate: 10, now: time.now, sleep: time.sleep });
    for (let index = 0; index < 6; index += 1) await limiter.acquire(5);
    // The burst (10) carries two messages at once, then one every 500 ms.
    expect(time.elapsed()).toBe(2000);
  });

  it('lets a message with more recipients than the burst go, alone, at the burst, and makes the next send wait for the rest', async () => {
    const time = clock();
    const limiter = tokenBucket({ rate: 2, now: time.now, sleep: time.sleep });
    await limiter.acquire(50);
    await limiter.acquire(50);
    // The relay counts 50 recipients: the 48 past the burst are owed (24 s at 2 a second), and the
    // next message waits for its own burst (1 s) on top: 100 recipients in 25 s is the rate.
    expect(time.elapsed()).toBe(25_000);
    await limiter.acquire(1);
    expect(time.elapsed()).toBe(49_500);
  });

  it('sends at half the rate while the fleet factor is ½, and at the full rate again at 1', async () => {
    const time = clock();
    const limiter = tokenBucket({ rate: 4, burst: 1, now: time.now, sleep: time.sleep });
    await limiter.acquire(1, 0.5);
    const slowStart = time.elapsed();
    for (let index = 0; index < 4; index += 1) await limiter.acquire(1, 0.5);
    expect(time.elapsed() - slowStart).toBe(2000);
    const fullStart = time.elapsed();
    for (let index = 0; index < 4; index += 1) await limiter.acquire(1, 1);
    expect(time.elapsed() - fullStart).toBe(1000);
  });
});

describe('bounded concurrency within a batch', () => {
  it('runs at most `limit` at once and keeps the input order', async () => {
    let running = 0;
    let peak = 0;
    const results = await runWithConcurrency([1, 2, 3, 4, 5, 6, 7], 3, async (value) => {
      running += 1;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setImmediate(resolve));
      running -= 1;
      return value * 10;
    });
    expect(results).toEqual([10, 20, 30, 40, 50, 60, 70]);
    expect(peak).toBe(3);
  });
});
