import type { DispatchPayload } from '../core/dispatchPayload.js';

/** One copy to put on the send queue, visible after `delaySeconds` (0–900, whole seconds: SQS's unit). */
export interface QueuedCopy {
  readonly payload: Pick<DispatchPayload, 'id' | 'rev' | 'dlq' | 'death'>;
  readonly delaySeconds: number;
}

/** What an enqueue did: the copies not enqueued and, when there are some, why. */
export interface EnqueueResult {
  readonly failed: readonly QueuedCopy[];
  /**
   * Why copies failed (the first reason when there are several): the vendor's exception for a
   * request that failed, or the adapter's error for copies the queue refused. For logs and metrics;
   * the copies in `failed` are the ones to report.
   */
  readonly error?: unknown;
}

/** The send queue as the relay, the sweeper and the sender see it. */
export interface DispatchQueue {
  /**
   * Enqueues copies (batched by the adapter, ≤ 10 per request). Resolves with the copies that could
   * not be enqueued, so a caller can report exactly those as failed; never throws for one copy.
   */
  enqueue(copies: readonly QueuedCopy[]): Promise<EnqueueResult>;
}
