/** One message of the relay's on-failure destination, as received. */
export interface RelayFailureMessage {
  readonly body: string;
  readonly receipt: string;
}

/**
 * The relay's on-failure destination, as the redrive reads it (DESIGN §5a). The CLI's
 * `SqsDeadLetterQueue` (cli/deadLetters/) is its SQS adapter.
 */
export interface RelayFailureQueue {
  /** Up to `max` (≤ 10) messages, hidden from other readers for `hideSeconds`. */
  receive(max: number, hideSeconds: number): Promise<readonly RelayFailureMessage[]>;
  remove(receipt: string): Promise<void>;
  /** Makes received messages visible again at once. */
  release(messages: readonly RelayFailureMessage[]): Promise<void>;
  /** How many messages are visible, and how many a reader hides right now (SQS's approximate counts). */
  counts(): Promise<{ readonly visible: number; readonly notVisible: number }>;
}
