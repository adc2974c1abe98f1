/**
 * The queues, their redrive and their timings, defined once as plain data (no CDK import) so that
 * the CDK stack and the local stack create the same thing. See docs/data-model.md.
 */

/** The sender Lambda's timeout; the lease (POSTDATE_LEASE_SECONDS, default 120) must exceed it. */
export const SENDER_TIMEOUT_SECONDS = 60;

export const QUEUE = {
  /** Standard queue carrying `{v, id, rev}` copies to the sender. */
  send: {
    logicalName: 'send',
    /** AWS guidance for an SQS event source: at least six times the function timeout. */
    visibilityTimeoutSeconds: 6 * SENDER_TIMEOUT_SECONDS,
    retentionDays: 4,
  },
  /** Copies whose receives reached POSTDATE_MAX_ATTEMPTS; an operator redrives them. */
  sendDeadLetter: { logicalName: 'send-dlq', retentionDays: 14 },
  /** Stream records the relay finally could not process (the event source's on-failure destination). */
  relayFailures: { logicalName: 'relay-failures', retentionDays: 14 },
  /** Schedules EventBridge Scheduler could not deliver to the send queue. */
  scheduleDeadLetter: { logicalName: 'schedule-dlq', retentionDays: 14 },
} as const;

/** The redrive policy of the send queue: `maxReceiveCount` is POSTDATE_MAX_ATTEMPTS. */
export function sendQueueRedrivePolicy(deadLetterTargetArn: string, maxAttempts: number): string {
  return JSON.stringify({ deadLetterTargetArn, maxReceiveCount: maxAttempts });
}

export const SCHEDULE_GROUP = { logicalName: 'postdate' } as const;
