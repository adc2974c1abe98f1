import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { SQS_MAX_DELAY_SECONDS } from '../core/dispatchDecision.js';
import { encodeDispatchPayload } from '../core/dispatchPayload.js';
import type { DispatchQueue, QueuedCopy } from '../ports/DispatchQueue.js';

const SQS_MAX_BATCH = 10;

/** The send queue on SQS: `SendMessageBatch` in chunks of ten, partial failures returned, not thrown. */
export class SqsDispatchQueue implements DispatchQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  /** Sends the chunks at once: a relay batch of 100 copies is one round trip, not ten in a row. */
  async enqueue(copies: readonly QueuedCopy[]): Promise<{ failed: readonly QueuedCopy[] }> {
    const chunks: QueuedCopy[][] = [];
    for (let start = 0; start < copies.length; start += SQS_MAX_BATCH) {
      chunks.push(copies.slice(start, start + SQS_MAX_BATCH));
    }
    const failed = await Promise.all(chunks.map((chunk) => this.sendChunk(chunk)));
    return { failed: failed.flat() };
  }

  private async sendChunk(chunk: readonly QueuedCopy[]): Promise<QueuedCopy[]> {
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
      return (result.Failed ?? []).flatMap((entry) => {
        const copy = chunk[Number(entry.Id)];
        return copy ? [copy] : [];
      });
    } catch {
      // The whole request failed (throttling, network): every copy of this chunk is unsent.
      return [...chunk];
    }
  }
}

function clampDelay(seconds: number): number {
  if (!Number.isFinite(seconds) || seconds <= 0) return 0;
  return Math.min(SQS_MAX_DELAY_SECONDS, Math.floor(seconds));
}
