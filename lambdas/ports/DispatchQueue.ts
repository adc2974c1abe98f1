import type { DispatchPayload } from '../core/dispatchPayload.js';

/** One copy to put on the send queue, visible after `delaySeconds` (0–900, whole seconds: SQS's unit). */
export interface QueuedCopy {
  readonly payload: Pick<DispatchPayload, 'id' | 'rev' | 'dlq'>;
  readonly delaySeconds: number;
}

/** The send queue as the relay, the sweeper and the sender see it. */
export interface DispatchQueue {
  /**
   * Enqueues copies (batched by the adapter, ≤ 10 per request). Resolves with the copies that could
   * not be enqueued, so a caller can report exactly those as failed; never throws for one copy.
   */
  enqueue(copies: readonly QueuedCopy[]): Promise<{ failed: readonly QueuedCopy[] }>;
}
