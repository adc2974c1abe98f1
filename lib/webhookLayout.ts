/**
 * The event producer's stream source and the webhook queue, as plain data (no CDK import), so the
 * CDK construct (lib/constructs/Webhooks.ts) and the local stack (local/webhookEventSources.ts)
 * build the same thing.
 */
import { ITEM_SORT_KEY, KEY } from '../lambdas/store/tableLayout.js';

/**
 * The stream records the event producer reads: message state records written or changed (a REMOVE
 * is a TTL deletion, never an event). Whether the status changed is decided in code
 * (core/messageEvents.ts): a filter cannot compare the two images.
 */
export const EVENTS_STREAM_FILTER = {
  eventName: ['INSERT', 'MODIFY'],
  dynamodb: { Keys: { [KEY.sort]: { S: [ITEM_SORT_KEY.messageState] } } },
} as const;

/**
 * The delivery function: each attempt at most 10 s; `maxConcurrency` is the default of the
 * construct's `webhookMaxConcurrency` prop and the local stack's setting. A batch holds its slot
 * until its slowest copy ends; an endpoint that stalled is deferred by each function's breaker
 * (lambdas/core/webhookEndpointBreaker.ts), so it costs a slot at most one timeout per interval.
 */
export const WEBHOOK_DELIVERY = {
  batchSize: 10,
  timeoutSeconds: 60,
  maxConcurrency: 10,
} as const;

/**
 * The event producer's on-failure destination: the shard and sequence range of each stream batch it
 * gave up on, for `postdate event-failures redrive` (docs/runbook.md, procedure 4b).
 */
export const EVENT_FAILURE_QUEUE = { logicalName: 'event-failures', retentionDays: 14 } as const;

export const WEBHOOK_QUEUE = {
  logicalName: 'webhooks',
  /** Six times the function's timeout (AWS's guidance for an SQS event source). */
  visibilityTimeoutSeconds: 6 * WEBHOOK_DELIVERY.timeoutSeconds,
  retentionDays: 4,
  /**
   * Receives before a copy goes to the DLQ: the delivery function only fails a copy when a read, a
   * write or the queue failed (a failing endpoint is a retry with its own delay, not a receive), and
   * such a copy comes back after `keptCopyVisibilitySeconds` (5 s doubling, up to 360 s, the upper
   * half drawn). Twenty receives take 41 minutes at the least and about an hour on average, as ten
   * full visibility timeouts did before the backoff (docs/decisions/0110-webhook-copies-back-soon.md).
   */
  maxReceiveCount: 20,
  deadLetter: { logicalName: 'webhooks-dlq', retentionDays: 14 },
} as const;
