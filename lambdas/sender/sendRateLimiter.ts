import type { SendRateLimiter } from '../ports/SendRateLimiter.js';

/**
 * POSTDATE_MAX_SEND_RATE: a token bucket per warm container. Tokens refill continuously at `rate` per
 * second up to `burst`; each SMTP send takes one, waiting for it when the bucket is empty. The clock
 * and the wait are injected, so tests never sleep.
 */
export interface TokenBucketOptions {
  /** Messages per second. */
  readonly rate: number;
  /** Largest burst; default max(1, rate). */
  readonly burst?: number;
  /** Milliseconds, monotonic. */
  readonly now: () => number;
  readonly sleep: (milliseconds: number) => Promise<void>;
}

export function tokenBucket(options: TokenBucketOptions): SendRateLimiter {
  const rate = options.rate;
  const burst = Math.max(1, options.burst ?? rate);
  let tokens = burst;
  let last = options.now();
  // Callers queue in order, so a waiting send is never overtaken by a later one.
  let queue: Promise<void> = Promise.resolve();

  const refill = () => {
    const now = options.now();
    tokens = Math.min(burst, tokens + ((now - last) / 1000) * rate);
    last = now;
  };

  const take = async () => {
    refill();
    while (tokens < 1) {
      await options.sleep(Math.ceil(((1 - tokens) / rate) * 1000));
      refill();
    }
    tokens -= 1;
  };

  return {
    acquire() {
      const turn = queue.then(take);
      queue = turn.catch(() => {});
      return turn;
    },
  };
}
