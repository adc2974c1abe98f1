/**
 * When a received copy comes back. The sender reports a copy as failed to keep it, and sets here when
 * it becomes visible again: after the backoff of a transient failure, at once for a copy on its way to
 * the DLQ, when a live lease runs out for a duplicate.
 */
export interface CopyVisibility {
  /** Resolves `changed: false` with the queue's error when it refused (e.g. the receipt handle expired); never throws. */
  change(receiptHandle: string, seconds: number): Promise<VisibilityChange>;
}

export type VisibilityChange =
  | { readonly changed: true }
  | { readonly changed: false; readonly error: unknown };
