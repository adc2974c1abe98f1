/**
 * How fast the sender may start SMTP sends (POSTDATE_MAX_SEND_RATE). The token bucket in
 * sender/sendRateLimiter.ts implements it per warm container.
 */
export interface SendRateLimiter {
  /** Resolves when a send may start. */
  acquire(): Promise<void>;
}

/** No limit. */
export const UNLIMITED: SendRateLimiter = { acquire: async () => {} };
