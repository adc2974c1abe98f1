/**
 * The CloudWatch metrics the functions publish (DESIGN §6) and the alarms in lib/ watch: one
 * definition of the namespace, the service dimension and every name, so an alarm cannot drift from
 * the metric it watches.
 */
import { MESSAGE_STATUS, type MessageStatus } from './messageStatus.js';

/** Metric namespace and service dimension of the functions' EMF metrics (Powertools). */
export const METRICS = { namespace: 'Postdate', service: 'postdate' } as const;

/**
 * The dimensions every Postdate metric carries (DESIGN §6): the service, and the stack's own name, so
 * two Postdates in one account and region never add up in each other's alarms or dashboards. The
 * functions' metrics and the alarms and dashboard in lib/ both take them from here.
 */
export function metricDimensions(stackName: string): { readonly service: string; readonly stack: string } {
  return { service: METRICS.service, stack: stackName };
}

/**
 * Refusals of a state record a newer writer made (core/recordLayout.ts, decision 0166): a layout
 * above this stack's, or a status it does not know — an application's outbox helper newer than its
 * stack. The relay counts each such stream record (the first sign, when the message is written), the
 * sender each copy of one it meets. A count for the dashboard: the alarm watches the sweeper's gauge
 * ({@link SWEEPER_METRIC} `refusedRecords`), which stays on while such a message waits.
 */
const NEWER_WRITER_REFUSALS = 'NewerWriterRefusals';

/** The relay's metrics. */
export const RELAY_METRIC = {
  newerWriterRefusals: NEWER_WRITER_REFUSALS,
  /** State records the relay could not read (one written by hand past the outbox helper): not dispatched. */
  unreadableRecords: 'UnreadableRecords',
} as const;
export type RelayMetric = (typeof RELAY_METRIC)[keyof typeof RELAY_METRIC];

/**
 * The sender's metrics: one count per outcome and class, the SMTP duration, the lateness
 * `sent_at − send_at`, and that of due copies handed back unsent.
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
  /** Messages that ended `suppressed`: every recipient on the tenant's suppression list (DESIGN §12). */
  suppressed: 'Suppressed',
  /** Recipients left out of an envelope because they were on the suppression list. */
  suppressedRecipients: 'SuppressedRecipients',
  /** Addresses added to a suppression list by a hard bounce at RCPT TO (5.1.x) or an SES notification. */
  suppressionsAdded: 'SuppressionsAdded',
  configErrors: 'ConfigErrors',
  /** Copies of a message whose state record a newer writer made (see {@link RELAY_METRIC}): not sent. */
  newerWriterRefusals: NEWER_WRITER_REFUSALS,
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
  /**
   * The relay is unavailable (DESIGN §5): counted (with the relay) when a sender opens its breaker
   * or a probe fails, and (without one) for every copy handed back while no relay takes mail. The
   * sweeper publishes it per relay as a gauge, which each relay's alarm watches.
   */
  relayUnavailable: 'RelayUnavailable',
  /**
   * The relay throttled us (its rate or its daily quota, DESIGN §5 "Rate"): counted, with the relay,
   * by the sender whose write slowed the fleet — once per wave, not per reply.
   */
  relayThrottled: 'RelayThrottled',
  /** Copies handed back unclaimed because an operator paused sending (all, or their kind). */
  sendingPaused: 'SendingPaused',
  /**
   * Copies handed back unclaimed because the operator disabled every relay (`postdate relays disable
   * --force`, DESIGN §15): no relay is unavailable, nothing is paused; the mail waits for an enable.
   */
  relaysDisabled: 'RelaysDisabled',
  /**
   * Copies that left through a relay other than the first (DESIGN §15): the first is unavailable or
   * disabled and mail fails over. Drawn per relay; the alarm watches the sweeper's `RelayFailover`.
   */
  failoverSends: 'FailoverSends',
  smtpDuration: 'SmtpDuration',
  lateness: 'Lateness',
  /**
   * How late a due copy handed back unsent already is (core/sendDecision.ts `dueSince`): out of time,
   * or held by the sending gate. No attempt and, after three receives, not in the send queue's age
   * (decision 0224): the alarm DueMailHeldBack watches this (decision 0231).
   */
  heldBackLateness: 'HeldBackLateness',
} as const;

/**
 * The sender's metrics that are also published per relay (DESIGN §15, "metrics per relay"): the
 * sends and their outcomes, the relay's own failures and the SMTP time. Each datapoint is one EMF
 * document with two dimension sets, {@link metricDimensions} and the same with {@link RELAY_DIMENSION}
 * — so the alarms on `service` and `stack` see every relay's, and the dashboard draws each relay.
 */
export const PER_RELAY_METRICS: ReadonlySet<string> = new Set([
  SENDER_METRIC.sent,
  SENDER_METRIC.retried,
  SENDER_METRIC.failed,
  SENDER_METRIC.dead,
  SENDER_METRIC.ambiguous,
  SENDER_METRIC.configErrors,
  SENDER_METRIC.relayUnavailable,
  SENDER_METRIC.relayThrottled,
  SENDER_METRIC.failoverSends,
  SENDER_METRIC.smtpDuration,
]);

/** The dimension that names the relay (core/relays.ts: letters, digits, `-` and `_`). */
export const RELAY_DIMENSION = 'relay' satisfies keyof ReturnType<typeof relayMetricDimensions>;

/** The dimensions of one relay's series of a {@link PER_RELAY_METRICS} metric. */
export function relayMetricDimensions(
  stackName: string,
  relay: string,
): { readonly service: string; readonly stack: string; readonly relay: string } {
  return { ...metricDimensions(stackName), relay };
}

export type SenderTimeMetric = 'SmtpDuration' | 'Lateness' | 'HeldBackLateness';
export type SenderCountMetric = Exclude<(typeof SENDER_METRIC)[keyof typeof SENDER_METRIC], SenderTimeMetric>;

/**
 * The sweeper's metrics: a gauge per status that waits for an operator — how many such messages
 * exist, published every run, so their alarms stay on while any exists — and the count of live
 * messages' copies it re-dispatched (a test message moves no series, DESIGN §14).
 */
export const SWEEPER_METRIC = {
  waiting: {
    [MESSAGE_STATUS.failed]: 'WaitingFailed',
    [MESSAGE_STATUS.dead]: 'WaitingDead',
    [MESSAGE_STATUS.unknown]: 'WaitingUnknown',
  },
  redispatched: 'Redispatched',
  /**
   * A gauge per relay, 1 while its breaker holds its mail, 0 once closed or while the relay is
   * disabled (core/relays.ts `relayGauges`; the senders count the same name).
   */
  relayUnavailable: SENDER_METRIC.relayUnavailable,
  /**
   * A gauge, 1 while mail leaves through a relay other than the first (DESIGN §15; core/relays.ts
   * `relayGauges`), 0 while through the first or none. Alarmed (RelayFailover).
   */
  relayFailover: 'RelayFailover',
  /** Copies of messages that moved on (a retried `dead` one), taken off the DLQ (decision 0141). */
  staleDeadLettersRemoved: 'StaleDeadLettersRemoved',
  /**
   * A gauge: the overdue messages a newer writer made, which this stack refuses and leaves waiting
   * for its upgrade (decision 0166; core/sweepDecision.ts `refusedGauge`). Alarmed (RefusedRecords).
   */
  refusedRecords: 'RefusedRecords',
} as const satisfies {
  waiting: Partial<Record<MessageStatus, string>>;
  redispatched: string;
  relayUnavailable: string;
  relayFailover: string;
  staleDeadLettersRemoved: string;
  refusedRecords: string;
};

export type WaitingStatus = keyof typeof SWEEPER_METRIC.waiting;
export type SweeperMetricName =
  | (typeof SWEEPER_METRIC.waiting)[WaitingStatus]
  | typeof SWEEPER_METRIC.redispatched
  | typeof SWEEPER_METRIC.relayUnavailable
  | typeof SWEEPER_METRIC.relayFailover
  | typeof SWEEPER_METRIC.staleDeadLettersRemoved
  | typeof SWEEPER_METRIC.refusedRecords;

/** The webhook functions' metrics (DESIGN §11): deliveries by how they ended, and events produced. */
export const WEBHOOK_METRIC = {
  delivered: 'WebhookDelivered',
  retried: 'WebhookRetried',
  /** A delivery whose retry window ran out: alarmed. */
  failed: 'WebhookDeliveriesFailed',
  /** Attempts the address policy refused (a private address, a non-https URL). */
  refused: 'WebhookRefused',
  /**
   * A function's breaker opened (or opened again) for an endpoint that stalled: its copies are
   * deferred on that function for a while (core/webhookEndpointBreaker.ts, decision 0132).
   */
  endpointStalled: 'WebhookEndpointStalled',
  eventsPublished: 'EventsPublished',
  /**
   * Events the bus refused (an entry's `ErrorCode`) or could not take (the request failed): each one's
   * stream record is retried, so a count that keeps rising means the bus keeps refusing (decision 0252).
   */
  eventsNotPublished: 'EventsNotPublished',
} as const;
export type WebhookMetric = (typeof WEBHOOK_METRIC)[keyof typeof WEBHOOK_METRIC];
