/**
 * A dead-letter queue on SQS as the CLI's commands use it: count, receive (hidden for a while),
 * peek (receive, then release at once), release, delete and forward to the send queue. Every
 * command that empties a failure queue — `dlq`, `schedule-failures`, `relay-failures` — goes through
 * this one adapter, so the SQS limits (ten per request) and the receive parameters live here only.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { SQS_MAX_BATCH } from '../../lambdas/core/queueLimits.js';
import type { DispatchQueue } from '../../lambdas/ports/DispatchQueue.js';
import type { RelayFailureMessage, RelayFailureQueue } from '../../lambdas/ports/RelayFailureQueue.js';
import { CliError } from '../cliErrors.js';

/** One received message, in the CLI's words. */
export interface DeadLetter extends RelayFailureMessage {
  readonly sqsMessageId: string | null;
  /** When the message was first sent (SQS keeps SentTimestamp across a move), epoch ms. */
  readonly sentAtMs: number | null;
  readonly receiveCount: number | null;
  /** String message attributes (EventBridge Scheduler's ERROR_CODE, SCHEDULE_ARN, …). */
  readonly attributes: Readonly<Record<string, string>>;
}

export interface QueueCounts {
  /** ApproximateNumberOfMessages. */
  readonly visible: number;
  /** ApproximateNumberOfMessagesNotVisible: received by someone right now. */
  readonly notVisible: number;
}

export interface DeadLetterQueueOptions {
  /** Long-poll seconds for each receive; 0 in tests. @default 1 */
  readonly waitSeconds?: number;
  /** What the queue is, for error messages. @default 'the DLQ' */
  readonly name?: string;
}

export class SqsDeadLetterQueue implements RelayFailureQueue {
  constructor(
    private readonly sqs: SQSClient,
    readonly queueUrl: string,
    private readonly options: DeadLetterQueueOptions = {},
  ) {}

  async counts(): Promise<QueueCounts> {
    const { Attributes } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return {
      visible: Number(Attributes?.ApproximateNumberOfMessages ?? 0),
      notVisible: Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
    };
  }

  /** Up to `max` (at most ten) messages, hidden from other readers for `hideSeconds`. */
  async receive(max: number, hideSeconds: number): Promise<DeadLetter[]> {
    const { Messages } = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: Math.min(SQS_MAX_BATCH, Math.max(1, max)),
        VisibilityTimeout: hideSeconds,
        WaitTimeSeconds: this.options.waitSeconds ?? 1,
        MessageSystemAttributeNames: ['SentTimestamp', 'ApproximateReceiveCount'],
        // The SQS emulator (local-aws-sqs 2.0.2) reads only the older parameter name.
        AttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    return (Messages ?? []).flatMap((message) => (message.ReceiptHandle ? [toDeadLetter(message)] : []));
  }

  /**
   * Up to `max` messages, received and made visible again at once. SQS cannot peek: each sampled
   * message's receive count goes up by one, and for an instant other readers do not see it.
   */
  async peek(max: number, hideSeconds: number): Promise<DeadLetter[]> {
    const received: DeadLetter[] = [];
    try {
      while (received.length < max) {
        const batch = await this.receive(max - received.length, hideSeconds);
        if (batch.length === 0) break;
        received.push(...batch);
      }
    } finally {
      await this.release(received);
    }
    return received;
  }

  /** Makes received messages visible again at once (ChangeMessageVisibility 0), ten per request. */
  async release(letters: readonly RelayFailureMessage[]): Promise<void> {
    for (let start = 0; start < letters.length; start += SQS_MAX_BATCH) {
      await this.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: letters.slice(start, start + SQS_MAX_BATCH).map((letter, i) => ({
            Id: String(i),
            ReceiptHandle: letter.receipt,
            VisibilityTimeout: 0,
          })),
        }),
      );
    }
  }

  /** Deletes one received message; a refusal is an error (the message stays on the queue). */
  async remove(receipt: string): Promise<void> {
    const result = await this.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: this.queueUrl,
        Entries: [{ Id: '0', ReceiptHandle: receipt }],
      }),
    );
    const refused = result.Failed?.[0];
    if (refused !== undefined) {
      throw new CliError(
        `SQS refused to delete a message from ${this.options.name ?? 'the DLQ'} (${refused.Code ?? 'no code'}); it stays there`,
      );
    }
  }

  /**
   * Puts `copy` on the send queue with delay 0, then deletes the letter: in that order, so a crash in
   * between leaves a duplicate copy (harmless: the sender drops it), never a lost one.
   */
  async forward(
    letter: DeadLetter,
    copy: Pick<DispatchPayload, 'id' | 'rev' | 'dlq'>,
    to: DispatchQueue,
  ): Promise<'moved' | 'refused'> {
    const { failed } = await to.enqueue([{ payload: copy, delaySeconds: 0 }]);
    if (failed.length > 0) return 'refused';
    await this.remove(letter.receipt);
    return 'moved';
  }
}

function toDeadLetter(message: Message): DeadLetter {
  const sent = Number(message.Attributes?.SentTimestamp);
  const receives = Number(message.Attributes?.ApproximateReceiveCount);
  const attributes: Record<string, string> = {};
  for (const [key, value] of Object.entries(message.MessageAttributes ?? {})) {
    if (value.StringValue !== undefined) attributes[key] = value.StringValue;
  }
  return {
    body: message.Body ?? '',
    receipt: message.ReceiptHandle ?? '',
    sqsMessageId: message.MessageId ?? null,
    sentAtMs: Number.isFinite(sent) ? sent : null,
    receiveCount: Number.isFinite(receives) ? receives : null,
    attributes,
  };
}
