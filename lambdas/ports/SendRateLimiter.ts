/**
 * How fast the sender may start SMTP sends (POSTDATE_MAX_SEND_RATE, DESIGN §5 "Rate"): counted in
 * recipients, as SES counts its rate, and scaled by the fleet's rate factor that every sender reads
 * with the sending gate (core/relayBreaker.ts `rateFactor`: halved when the relay throttles us,
 * climbing back with time). The token bucket in sender/sendRateLimiter.ts implements it per warm
 * container.
 */
export interface SendRateLimiter {
  /**
   * Resolves when a send to `recipients` recipients (default 1) may start at `rateFactor` (in
   * (0, 1], default 1) of the configured rate.
   */
  acquire(recipients?: number, rateFactor?: number): Promise<void>;
}

/** No limit. */
export const UNLIMITED: SendRateLimiter = { acquire: async () => {} };
