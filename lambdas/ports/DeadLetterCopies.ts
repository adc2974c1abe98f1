/** One copy received from the send queue's DLQ: its body and the handle to delete or release it. */
export interface DeadLetterCopy {
  readonly body: string;
  readonly receipt: string;
  /** SQS's id of this copy. */
  readonly messageId: string;
  /** When it was put in the DLQ (SQS's `SentTimestamp`, epoch ms): the queue's retention runs from it. */
  readonly sentAt: number;
}

/**
 * The send queue's DLQ as the sweeper tends it (lambdas/sweeper/staleDeadLetters.ts): count,
 * receive for a short while, delete, release, and put copies in. The operator's commands use the
 * CLI's own adapter.
 */
export interface DeadLetterCopies {
  /** The copies it holds, as SQS counts them (approximately): visible, and received by someone now. */
  depth(): Promise<{ readonly visible: number; readonly inFlight: number }>;
  /** Up to `max` (≤ 10) copies, hidden from other readers for `hideSeconds`. */
  receive(max: number, hideSeconds: number): Promise<readonly DeadLetterCopy[]>;
  /** Makes received copies visible again at once; one SQS refused comes back when its hiding ends. */
  release(receipts: readonly string[]): Promise<void>;
  /** Deletes received copies; answers the receipts SQS refused (those copies stay on the queue). */
  remove(receipts: readonly string[]): Promise<{ readonly refused: readonly string[] }>;
  /**
   * Puts copies in (bodies as given); answers, in order, each new copy's SQS id, or undefined where
   * SQS refused it.
   */
  put(bodies: readonly string[]): Promise<readonly (string | undefined)[]>;
}
