import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { SQS_MAX_BATCH } from '../core/queueLimits.js';
import type { DeadLetterCopies, DeadLetterCopy } from '../ports/DeadLetterCopies.js';

/** DeadLetterCopies on SQS: the send queue's DLQ, ten copies per request. */
export class SqsDeadLetterCopies implements DeadLetterCopies {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    /** Long-poll seconds of a receive: every SQS server is asked, so a small queue answers whole. */
    private readonly waitSeconds = 1,
  ) {}

  async depth(): Promise<{ visible: number; inFlight: number }> {
    const { Attributes } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return {
      visible: Number(Attributes?.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
    };
  }

  async receive(max: number, hideSeconds: number): Promise<DeadLetterCopy[]> {
    const { Messages } = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: Math.min(SQS_MAX_BATCH, Math.max(1, max)),
        VisibilityTimeout: hideSeconds,
        WaitTimeSeconds: this.waitSeconds,
        MessageSystemAttributeNames: ['SentTimestamp'],
      }),
    );
    return (Messages ?? []).flatMap((message) =>
      message.ReceiptHandle === undefined
        ? []
        : [
            {
              body: message.Body ?? '',
              receipt: message.ReceiptHandle,
              messageId: message.MessageId ?? '',
              // Unreadable: as old as can be, so the copy is renewed rather than left to expire.
              sentAt: Number(message.Attributes?.SentTimestamp) || 0,
            },
          ],
    );
  }

  async put(bodies: readonly string[]): Promise<(string | undefined)[]> {
    const ids: (string | undefined)[] = [];
    for (let start = 0; start < bodies.length; start += SQS_MAX_BATCH) {
      const chunk = bodies.slice(start, start + SQS_MAX_BATCH);
      const result = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map((body, i) => ({ Id: String(i), MessageBody: body })),
        }),
      );
      const sent = new Map((result.Successful ?? []).map((entry) => [entry.Id, entry.MessageId]));
      ids.push(...chunk.map((_, i) => sent.get(String(i))));
    }
    return ids;
  }

  async release(receipts: readonly string[]): Promise<void> {
    for (let start = 0; start < receipts.length; start += SQS_MAX_BATCH) {
      await this.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: receipts
            .slice(start, start + SQS_MAX_BATCH)
            .map((receipt, i) => ({ Id: String(i), ReceiptHandle: receipt, VisibilityTimeout: 0 })),
        }),
      );
    }
  }

  async remove(receipts: readonly string[]): Promise<{ refused: string[] }> {
    const refused: string[] = [];
    for (let start = 0; start < receipts.length; start += SQS_MAX_BATCH) {
      const chunk = receipts.slice(start, start + SQS_MAX_BATCH);
      const result = await this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map((receipt, i) => ({ Id: String(i), ReceiptHandle: receipt })),
        }),
      );
      for (const failure of result.Failed ?? []) {
        const receipt = chunk[Number(failure.Id)];
        if (receipt !== undefined) refused.push(receipt);
      }
    }
    return { refused };
  }
}
