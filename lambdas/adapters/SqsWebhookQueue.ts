import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { SQS_MAX_BATCH, SQS_MAX_DELAY_SECONDS } from '../core/queueLimits.js';
import { encodeWebhookCopy } from '../core/webhooks.js';
import type { QueuedWebhookCopy, WebhookQueue } from '../ports/Webhooks.js';
import { QueueRefusedError } from './SqsDispatchQueue.js';

/** The webhook queue on SQS: `SendMessageBatch` in chunks of ten, refused entries returned, not thrown. */
export class SqsWebhookQueue implements WebhookQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(
    copies: readonly QueuedWebhookCopy[],
  ): Promise<{ readonly failed: readonly QueuedWebhookCopy[]; readonly error?: unknown }> {
    const failed: QueuedWebhookCopy[] = [];
    let firstError: unknown;
    const chunks: QueuedWebhookCopy[][] = [];
    for (let start = 0; start < copies.length; start += SQS_MAX_BATCH) {
      chunks.push(copies.slice(start, start + SQS_MAX_BATCH));
    }
    await Promise.all(
      chunks.map(async (chunk) => {
        try {
          const result = await this.sqs.send(
            new SendMessageBatchCommand({
              QueueUrl: this.queueUrl,
              Entries: chunk.map((entry, index) => ({
                Id: String(index),
                MessageBody: encodeWebhookCopy(entry.copy),
                DelaySeconds: Math.min(SQS_MAX_DELAY_SECONDS, Math.max(0, Math.floor(entry.delaySeconds))),
              })),
            }),
          );
          for (const refused of result.Failed ?? []) {
            const entry = chunk[Number(refused.Id)];
            if (entry) failed.push(entry);
            firstError ??= new QueueRefusedError(
              `SQS refused a webhook copy (${refused.Code ?? 'no code'})`,
              refused.Code,
              refused.SenderFault ? 'permanent' : 'transient',
            );
          }
        } catch (error) {
          failed.push(...chunk);
          firstError ??= error;
        }
      }),
    );
    return firstError === undefined ? { failed } : { failed, error: firstError };
  }
}
