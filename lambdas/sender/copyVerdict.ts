/** What happens to the SQS copy: deleted (`ack`), or kept and visible again after `visibilitySeconds`. */
export type CopyVerdict =
  | { readonly kind: 'ack'; readonly reason: string }
  | {
      readonly kind: 'keep';
      /** Undefined: leave the queue's own visibility timeout. */
      readonly visibilitySeconds: number | undefined;
      readonly reason: string;
      /**
       * This copy is the record's `dead_copy` and its move to the DLQ is still owed: a copy that
       * replaces it (near the queue's backstop) goes to the DLQ, marked `"dlq": true`, never back
       * on the send queue under a new SQS id that the record does not know.
       */
      readonly deadCopy?: true;
    };

/** When a released or kept copy comes back after a read failed or a move to the DLQ did not happen. */
export const SHORT_RETRY_SECONDS = 5;

export const ack = (reason: string): CopyVerdict => ({ kind: 'ack', reason });

export const keep = (reason: string, visibilitySeconds?: number): CopyVerdict => ({
  kind: 'keep',
  visibilitySeconds,
  reason,
});

/** The copy of a `dead` message whose move to the DLQ failed: back soon, to try the move again. */
export const keepDeadCopy = (): CopyVerdict => ({
  kind: 'keep',
  visibilitySeconds: SHORT_RETRY_SECONDS,
  reason: 'dead; the move to the DLQ failed',
  deadCopy: true,
});
