/**
 * The structured logger the functions write to; Powertools Logger satisfies it, tests record it.
 * Attributes never carry an address (a domain or a hash at most), a subject, a body, a header value,
 * an API key or a password; errors go through `errorForLog` (lambdas/core/errorForLog.ts).
 */
export interface Log {
  info(message: string, attributes: Record<string, unknown>): void;
  warn(message: string, attributes: Record<string, unknown>): void;
  error(message: string, attributes: Record<string, unknown>): void;
}
