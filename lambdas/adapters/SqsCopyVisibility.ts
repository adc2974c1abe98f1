import { ChangeMessageVisibilityCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { CopyVisibility } from '../ports/CopyVisibility.js';

/** SQS accepts visibility timeouts from 0 to 12 hours. */
export const MAX_VISIBILITY_SECONDS = 43_200;

/** CopyVisibility on SQS: `ChangeMessageVisibility` on the send queue, clamped to what SQS accepts. */
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
