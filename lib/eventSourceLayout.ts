import { SENDER_TIMEOUT_SECONDS } from './queueLayout.js';

/**
 * How the functions read their event sources, as plain data (no CDK import) so that the CDK stack
 * and the local stack's runners use the same numbers.
 */

/** How the relay reads the table's stream. docs/capacity.md uses these numbers too. */
export const RELAY_STREAM = {
  batchSize: 100,
  /** Concurrent batches per shard; records of one item stay in order (same partition key). */
  parallelizationFactor: 4,
  /** Retries of a failing batch (bisected each time) before its records go to the failure queue. */
  retryAttempts: 5,
  /** Older records go to the failure queue; the sweeper re-dispatches their messages anyway. */
  maxRecordAgeSeconds: 3600,
  timeoutSeconds: 60,
} as const;

/** How the sender reads the send queue. */
export const SENDER_QUEUE = {
  /** Ten copies per invocation, no batching window: a due message should leave within a second. */
  batchSize: 10,
  timeoutSeconds: SENDER_TIMEOUT_SECONDS,
} as const;
