import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';

export interface RelayFailureMessage {
  readonly body: string;
  readonly receipt: string;
}

/** The relay's on-failure destination, as the redrive reads it. */
export interface RelayFailureQueue {
  /** Up to `max` (≤ 10) messages, hidden from other readers for `hideSeconds`. */
  receive(max: number, hideSeconds: number): Promise<readonly RelayFailureMessage[]>;
  remove(receipt: string): Promise<void>;
}

export class SqsRelayFailureQueue implements RelayFailureQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async receive(max: number, hideSeconds: number): Promise<readonly RelayFailureMessage[]> {
    const { Messages } = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: Math.min(10, Math.max(1, max)),
        VisibilityTimeout: hideSeconds,
        WaitTimeSeconds: 0,
      }),
    );
    const messages: RelayFailureMessage[] = [];
    for (const message of Messages ?? []) {
      if (message.Body !== undefined && message.ReceiptHandle !== undefined) {
        messages.push({ body: message.Body, receipt: message.ReceiptHandle });
      }
    }
    return messages;
  }

  async remove(receipt: string): Promise<void> {
    await this.sqs.send(new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: receipt }));
  }
}
