/**
 * The sender's metrics (DESIGN §6): one count per outcome and class, the SMTP duration and the
 * lateness `sent_at − send_at`. Names are the CloudWatch metric names (namespace `Postdate`); the
 * alarms in lib/ refer to them by these constants.
 */
export const SENDER_METRIC = {
  sent: 'Sent',
  retried: 'Retried',
  failed: 'Failed',
  dead: 'Dead',
  ambiguous: 'Ambiguous',
  unknown: 'Unknown',
  superseded: 'Superseded',
  expired: 'Expired',
  configErrors: 'ConfigErrors',
  /** Copies dropped because their body was not a valid `{v, id, rev}`. */
  malformedCopies: 'MalformedCopies',
  /** Copies that arrived early and were put back on the queue with the exact remaining delay. */
  redelayed: 'Redelayed',
  /** Copies of `dead` messages the sender moved to the DLQ itself. */
  deadLettered: 'DeadLettered',
  /** Copies handed back unclaimed: the invocation had too little time left for a whole attempt. */
  outOfTime: 'OutOfTime',
  /** Claims given back unused because a read failed before MAIL FROM (no attempt counted). */
  released: 'Released',
  /** A write after an attempt (or a release) failed and was tried again. */
  outcomeWriteRetries: 'OutcomeWriteRetries',
  /**
   * A copy failed on an error nobody expected (the store unreachable, a bug): kept for a retry. The
   * batch still answers, so Lambda's own Errors metric never moves; this one is alarmed.
   */
  unexpectedErrors: 'UnexpectedErrors',
  /** A write after an attempt never landed before the time ran out: alarmed (the next copy finds it ambiguous). */
  outcomeWriteFailures: 'OutcomeWriteFailures',
  smtpDuration: 'SmtpDuration',
  lateness: 'Lateness',
} as const;

export type SenderCountMetric = Exclude<
  (typeof SENDER_METRIC)[keyof typeof SENDER_METRIC],
  'SmtpDuration' | 'Lateness'
>;
export type SenderTimeMetric = 'SmtpDuration' | 'Lateness';

/** Where the sender reports metrics. The Lambda adapts Powertools Metrics (EMF); tests record. */
export interface SenderMetrics {
  count(name: SenderCountMetric, value?: number): void;
  milliseconds(name: SenderTimeMetric, value: number): void;
}

/** Metrics that go nowhere (for callers that do not care). */
export const NO_METRICS: SenderMetrics = { count: () => {}, milliseconds: () => {} };
