/**
 * The queues, their redrive and their timings, defined once as plain data (no CDK import) so that
 * the CDK stack and the local stack create the same thing. See docs/data-model.md.
 */

import { CONFIG_DEFAULTS } from '../lambdas/core/config.js';
import { backstopReceiveCount, SEND_QUEUE_RETENTION_DAYS } from '../lambdas/core/queueLimits.js';

/**
 * The sender Lambda's default timeout (POSTDATE_SENDER_TIMEOUT_SECONDS); the lease must exceed it
 * and it must exceed one whole attempt (lambdas/core/sendTiming.ts).
 */
export const SENDER_TIMEOUT_SECONDS = CONFIG_DEFAULTS.senderTimeoutSeconds;

/** AWS guidance for an SQS event source: visibility at least six times the function timeout. */
export const MIN_VISIBILITY_FACTOR = 6;

/** The send queue's visibility timeout for a sender of this timeout. */
export function sendQueueVisibilitySeconds(senderTimeoutSeconds: number): number {
  return MIN_VISIBILITY_FACTOR * senderTimeoutSeconds;
}

/** The send queue's `maxReceiveCount`, a backstop well above POSTDATE_MAX_ATTEMPTS (lambdas/core/queueLimits.ts). */
export const sendQueueMaxReceiveCount = backstopReceiveCount;

export const QUEUE = {
  /** Standard queue carrying `{v, id, rev}` copies to the sender. */
  send: {
    logicalName: 'send',
    retentionDays: SEND_QUEUE_RETENTION_DAYS,
  },
  /** Copies of `dead` messages, moved by the sender (or by the backstop); an operator redrives them. */
  sendDeadLetter: { logicalName: 'send-dlq', retentionDays: 14 },
  /** Stream records the relay finally could not process (the event source's on-failure destination). */
  relayFailures: { logicalName: 'relay-failures', retentionDays: 14 },
  /** Schedules EventBridge Scheduler could not deliver to the send queue. */
  scheduleDeadLetter: { logicalName: 'schedule-dlq', retentionDays: 14 },
} as const;

/** The redrive policy of the send queue (its `maxReceiveCount` is the backstop above). */
export function sendQueueRedrivePolicy(deadLetterTargetArn: string, maxAttempts: number): string {
  return JSON.stringify({ deadLetterTargetArn, maxReceiveCount: sendQueueMaxReceiveCount(maxAttempts) });
}

export const SCHEDULE_GROUP = { logicalName: 'postdate' } as const;
