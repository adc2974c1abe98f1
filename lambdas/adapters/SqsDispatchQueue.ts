import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { encodeDispatchPayload } from '../core/dispatchPayload.js';
import type { DispatchQueue, QueuedCopy } from '../ports/DispatchQueue.js';

const SQS_MAX_DELAY_SECONDS = 900;
const SQS_MAX_BATCH = 10;

/** The send queue on SQS: `SendMessageBatch` in chunks of ten, partial failures returned, not thrown. */
export class SqsDispatchQueue implements DispatchQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async enqueue(copies: readonly QueuedCopy[]): Promise<{ failed: readonly QueuedCopy[] }> {
    const failed: QueuedCopy[] = [];
    for (let start = 0; start < copies.length; start += SQS_MAX_BATCH) {
      const chunk = copies.slice(start, start + SQS_MAX_BATCH);
      try {
        const result = await this.sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: this.queueUrl,
            Entries: chunk.map((copy, index) => ({
              Id: String(index),
              MessageBody: encodeDispatchPayload(copy.payload),
              DelaySeconds: clampDelay(copy.delaySeconds),
            })),
          }),
        );
        for (const entry of result.Failed ?? []) {
          const copy = chunk[Number(entry.Id)];
          if (copy) failed.push(copy);
        }
      } catch {
        // The whole request failed (throttling, network): every copy of this chunk is unsent.
        failed.push(...chunk);
      }
    }
    return { failed };
  }
}

function clampDelay(seconds: number): number {
  if (!Number.isFinite(seconds) || seconds <= 0) return 0;
  return Math.min(SQS_MAX_DELAY_SECONDS, Math.floor(seconds));
}
