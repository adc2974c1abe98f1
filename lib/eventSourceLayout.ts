import { SENDER_TIMEOUT_SECONDS } from './queueLayout.js';

/**
 * How the functions read their event sources, as plain data (no CDK import) so that the CDK stack
 * and the local stack's runners use the same numbers.
 */

/**
 * How the relay reads the table's stream. docs/capacity.md uses these numbers too.
 *
 * No batching window (docs/decisions/0095-stream-batching-windows.md): a window is whole seconds,
 * and a message due now that reaches the relay (an outbox write, a revision, a message the api did
 * not copy) must still leave within about a second. At load the window buys nothing: Lambda polls
 * each shard four times a second, so a shard carrying 250 of the relay's records a second already
 * hands it batches of ~60.
 */
export const RELAY_STREAM = {
  batchSize: 100,
  batchingWindowSeconds: 0,
  /** Concurrent batches per shard; records of one item stay in order (same partition key). */
  parallelizationFactor: 4,
  /** Retries of a failing batch (bisected each time) before its records go to the failure queue. */
  retryAttempts: 5,
  /** Older records go to the failure queue; the sweeper re-dispatches their messages anyway. */
  maxRecordAgeSeconds: 3600,
  timeoutSeconds: 60,
} as const;

/**
 * The event producer's stream event source (beside the relay's: a shard's second reader). No batching
 * window (docs/decisions/0113-webhook-latency-without-a-window.md, which replaces the 1 s of decision
 * 0095): issue 32 asks a status change's webhook to arrive within 1 s at p99, and a window is whole
 * seconds, so with one the wait alone took the p99 past it. At load the window buys nothing: Lambda
 * polls a shard four times a second, so from ~400 of these records a second on a shard (~130
 * messages) every batch is full (docs/capacity.md counts full batches). Below that a shard costs at
 * most four invocations a second instead of one, each with one endpoint read per tenant in its batch.
 */
export const EVENTS_STREAM = {
  batchSize: 100,
  batchingWindowSeconds: 0,
  /**
   * Retries of a failing batch (bisected each time) before its range goes to the event failure
   * queue: bounded, so one record that keeps failing holds its shard's events back for minutes, not
   * hours. Nothing is lost by giving up: `postdate event-failures redrive` replays the range
   * (docs/decisions/0134).
   */
  retryAttempts: 10,
  /**
   * Older records go to the failure queue too. Half the stream's 24 hours, so that the stream still
   * holds what the producer gave up on for as long again: the operator's time to replay it. At 24 h
   * a record given up was already being trimmed, and its events were lost.
   */
  maxRecordAgeHours: 12,
  timeoutSeconds: 60,
} as const;

/** How long DynamoDB Streams keeps a record (not configurable). */
export const STREAM_RETENTION_HOURS = 24;

/** How the sender reads the send queue. */
export const SENDER_QUEUE = {
  /** Ten copies per invocation, no batching window: a due message should leave within a second. */
  batchSize: 10,
  timeoutSeconds: SENDER_TIMEOUT_SECONDS,
} as const;
