import { ChangeMessageVisibilityCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** SQS accepts visibility timeouts from 0 to 12 hours. */
export const MAX_VISIBILITY_SECONDS = 43_200;

/**
 * When a received copy comes back. The sender reports a copy as failed to keep it, and sets here when
 * it becomes visible again: after the backoff of a transient failure, at once for a copy on its way to
 * the DLQ, when a live lease runs out for a duplicate.
 */
export interface CopyVisibility {
  /** Resolves false when SQS refused (e.g. the receipt handle expired); never throws. */
  change(receiptHandle: string, seconds: number): Promise<boolean>;
}

export class SqsCopyVisibility implements CopyVisibility {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async change(receiptHandle: string, seconds: number): Promise<boolean> {
    try {
      await this.sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: this.queueUrl,
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: clampVisibility(seconds),
        }),
      );
      return true;
    } catch {
      return false;
    }
  }
}

export function clampVisibility(seconds: number): number {
  if (!Number.isFinite(seconds) || seconds <= 0) return 0;
  return Math.min(MAX_VISIBILITY_SECONDS, Math.ceil(seconds));
}
