import type { SendRateLimiter } from '../ports/SendRateLimiter.js';

/**
 * POSTDATE_MAX_SEND_RATE: a token bucket per warm container, in recipients (DESIGN §5, "Rate": SES
 * counts its sending rate in recipients). The configured rate is this sender's share of the relay's
 * rate; the fleet's rate factor from the sending gate scales it (halved after a throttle, climbing
 * back additively, core/relayBreaker.ts), so every sender slows down together. Tokens refill
 * continuously at `rate × factor` per second up to `burst`; a send takes one per recipient (at most
 * `burst`, so a message with more recipients than the burst still goes, alone), waiting for them
 * when the bucket is short. The clock and the wait are injected, so tests never sleep.
 */
export interface TokenBucketOptions {
  /** Recipients per second, this sender's share. */
  readonly rate: number;
  /** Largest burst; default max(1, rate). */
  readonly burst?: number;
  /** Milliseconds, monotonic. */
  readonly now: () => number;
  readonly sleep: (milliseconds: number) => Promise<void>;
}

/** The lowest factor the bucket applies: a factor that is not a number in (0, 1] reads as 1. */
const MIN_FACTOR = 1 / 1024;

export function tokenBucket(options: TokenBucketOptions): SendRateLimiter {
  const burst = Math.max(1, options.burst ?? options.rate);
  let tokens = burst;
  let last = options.now();
  // Callers queue in order, so a waiting send is never overtaken by a later one.
  let queue: Promise<void> = Promise.resolve();

  const refill = (rate: number) => {
    const now = options.now();
    tokens = Math.min(burst, tokens + ((now - last) / 1000) * rate);
    last = now;
  };

  const take = async (recipients: number, factor: number) => {
    const rate = options.rate * factor;
    const cost = Math.min(burst, recipients);
    refill(rate);
    while (tokens < cost) {
      await options.sleep(Math.ceil(((cost - tokens) / rate) * 1000));
      refill(rate);
    }
    tokens -= cost;
  };

  return {
    acquire(recipients = 1, rateFactor = 1) {
      const cost = Number.isFinite(recipients) && recipients >= 1 ? Math.floor(recipients) : 1;
      const factor =
        Number.isFinite(rateFactor) && rateFactor > 0 ? Math.max(MIN_FACTOR, Math.min(1, rateFactor)) : 1;
      const turn = queue.then(() => take(cost, factor));
      queue = turn.catch(() => {});
      return turn;
    },
  };
}
