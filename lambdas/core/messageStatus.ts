/** The statuses of a message (DESIGN §2). An `as const` object, not an enum. */
export const MESSAGE_STATUS = {
  scheduled: 'scheduled',
  sending: 'sending',
  retrying: 'retrying',
  sent: 'sent',
  failed: 'failed',
  dead: 'dead',
  cancelled: 'cancelled',
  superseded: 'superseded',
  expired: 'expired',
  unknown: 'unknown',
  /** Every recipient was on the tenant's suppression list at send time (DESIGN §12): nothing was sent. */
  suppressed: 'suppressed',
} as const;

export type MessageStatus = (typeof MESSAGE_STATUS)[keyof typeof MESSAGE_STATUS];

export const MESSAGE_STATUSES: readonly MessageStatus[] = Object.values(MESSAGE_STATUS);

/** Statuses after which nothing happens on its own (some accept an operator's retry or a DLQ redrive). */
export const TERMINAL_STATUSES: ReadonlySet<MessageStatus> = new Set([
  MESSAGE_STATUS.sent,
  MESSAGE_STATUS.failed,
  MESSAGE_STATUS.dead,
  MESSAGE_STATUS.cancelled,
  MESSAGE_STATUS.superseded,
  MESSAGE_STATUS.expired,
  MESSAGE_STATUS.unknown,
  MESSAGE_STATUS.suppressed,
]);

/**
 * Terminal statuses that wait for an operator (DESIGN §2): no TTL while they wait, and counted by the
 * sweeper into a gauge whose alarms stay on while any such message exists.
 */
export const WAITING_FOR_OPERATOR: readonly MessageStatus[] = [
  MESSAGE_STATUS.failed,
  MESSAGE_STATUS.dead,
  MESSAGE_STATUS.unknown,
];

export function isWaitingForOperator(status: MessageStatus): boolean {
  return WAITING_FOR_OPERATOR.includes(status);
}

export function isTerminal(status: MessageStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}

export function isMessageStatus(value: unknown): value is MessageStatus {
  return typeof value === 'string' && (MESSAGE_STATUSES as readonly string[]).includes(value);
}
