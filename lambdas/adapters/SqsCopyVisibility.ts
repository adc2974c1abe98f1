import { ChangeMessageVisibilityCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { SQS_MAX_VISIBILITY_SECONDS } from '../core/queueLimits.js';
import type { CopyVisibility, VisibilityChange } from '../ports/CopyVisibility.js';

/** CopyVisibility on SQS: `ChangeMessageVisibility` on the send queue, clamped to what SQS accepts. */
export class SqsCopyVisibility implements CopyVisibility {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async change(receiptHandle: string, seconds: number): Promise<VisibilityChange> {
    try {
      await this.sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: this.queueUrl,
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: clampVisibility(seconds),
        }),
      );
      return { changed: true };
    } catch (error) {
      // An expired receipt handle, throttling, access denied: the cause tells them apart.
      return { changed: false, error };
    }
  }
}

export function clampVisibility(seconds: number): number {
  if (!Number.isFinite(seconds) || seconds <= 0) return 0;
  return Math.min(SQS_MAX_VISIBILITY_SECONDS, Math.ceil(seconds));
}
