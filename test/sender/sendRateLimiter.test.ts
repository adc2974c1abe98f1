import { describe, expect, it } from 'vitest';
import { runWithConcurrency } from '../../lambdas/core/runWithConcurrency.js';
import { tokenBucket } from '../../lambdas/sender/sendRateLimiter.js';

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
