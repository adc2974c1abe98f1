import type { SmtpErrorClassification } from '../core/classifySmtpError.js';
import { SENDER_METRIC } from '../core/metricNames.js';
import type { SenderMetrics } from '../ports/SenderMetrics.js';

/**
 * The counts a failed SMTP session carries by its class (core/classifySmtpError.ts), whoever met it:
 * a live attempt (outcomeWrite.ts) or the breaker's probe (relayGate.ts). A configuration failure
 * (the login refused, TLS) counts ConfigErrors, the SmtpConfigErrors alarm's series (DESIGN §5:
 * "alarmed"): once it opened the breaker the probe is the only session still asking the relay, so
 * the alarm stays on while the relay refuses us and clears only once it no longer does.
 */
export function countFailureClass(
  metrics: SenderMetrics,
  failure: SmtpErrorClassification,
  relay: string | undefined,
): void {
  if (failure.class === 'config') metrics.count(SENDER_METRIC.configErrors, 1, relay);
  if (failure.class === 'ambiguous') metrics.count(SENDER_METRIC.ambiguous, 1, relay);
}
