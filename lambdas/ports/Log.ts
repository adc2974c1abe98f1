/**
 * The structured logger the functions write to; Powertools Logger satisfies it, tests record it.
 * Attributes never carry an address (a domain or a hash at most), a subject, a body, a header value,
 * an API key or a password; errors go through `errorForLog` (lambdas/core/errorForLog.ts).
 */
export interface Log {
  /**
   * A routine line nobody acts on (a stale copy dropped, a batch's counts), kept off CloudWatch Logs
   * at the functions' default level (INFO) and written with `POWERTOOLS_LOG_LEVEL=DEBUG`: each
   * INFO line of ~300 B a message costs ~$0.15 per million (issue 32, decision 0118). A logger that
   * keeps no such lines may leave it out.
   */
  debug?(message: string, attributes: Record<string, unknown>): void;
  info(message: string, attributes: Record<string, unknown>): void;
  warn(message: string, attributes: Record<string, unknown>): void;
  error(message: string, attributes: Record<string, unknown>): void;
}
