import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { encodeDispatchPayload } from '../core/dispatchPayload.js';
import { type ErrorClass, PostdateError } from '../core/postdateError.js';
import { SQS_MAX_BATCH, sqsDelaySeconds } from '../core/queueLimits.js';
import type { DispatchQueue, EnqueueResult, QueuedCopy } from '../ports/DispatchQueue.js';

/** SQS answered the batch but refused some of its entries (`Failed`); `code` is SQS's own. */
export class QueueRefusedError extends PostdateError {
  override readonly name = 'QueueRefusedError';
  constructor(
    message: string,
    readonly code: string | undefined,
    errorClass: ErrorClass,
  ) {
    super(message, { class: errorClass });
  }
}

/** The send queue on SQS: `SendMessageBatch` in chunks of ten, partial failures returned, not thrown. */
export class SqsDispatchQueue implements DispatchQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  /** Sends the chunks at once: a relay batch of 100 copies is one round trip, not ten in a row. */
  async enqueue(copies: readonly QueuedCopy[]): Promise<EnqueueResult> {
    const chunks: QueuedCopy[][] = [];
    for (let start = 0; start < copies.length; start += SQS_MAX_BATCH) {
      chunks.push(copies.slice(start, start + SQS_MAX_BATCH));
    }
    const results = await Promise.all(chunks.map((chunk) => this.sendChunk(chunk)));
    const failed = results.flatMap((result) => result.failed);
    const error = results.find((result) => result.failed.length > 0)?.error;
    return error === undefined ? { failed } : { failed, error };
  }

  private async sendChunk(chunk: readonly QueuedCopy[]): Promise<EnqueueResult> {
    // Each body is encoded on its own first: one that cannot be a payload (an id DESIGN §2 does not
    // allow, from a record written by hand) is that copy's failure alone, never its nine neighbours'.
    const entries: { readonly queued: QueuedCopy; readonly body: string }[] = [];
    const unencodable: QueuedCopy[] = [];
    let encodeError: unknown;
    for (const copy of chunk) {
      try {
        entries.push({ queued: copy, body: encodeDispatchPayload(copy.payload) });
      } catch (error) {
        unencodable.push(copy);
        encodeError ??= error;
      }
    }
    const sent = entries.length === 0 ? { failed: [] } : await this.sendEntries(entries);
    const failed = [...unencodable, ...sent.failed];
    const error = encodeError ?? sent.error;
    return error === undefined ? { failed } : { failed, error };
  }

  private async sendEntries(
    entries: readonly { readonly queued: QueuedCopy; readonly body: string }[],
  ): Promise<EnqueueResult> {
    try {
      const result = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: entries.map((entry, index) => ({
            Id: String(index),
            MessageBody: entry.body,
            DelaySeconds: sqsDelaySeconds(entry.queued.delaySeconds),
          })),
        }),
      );
      const refused = result.Failed ?? [];
      const failed = refused.flatMap((entry) => {
        const copy = entries[Number(entry.Id)]?.queued;
        return copy ? [copy] : [];
      });
      const first = refused[0];
      if (first === undefined) return { failed };
      // SenderFault: the entry itself is wrong; otherwise SQS could not take it now.
      const error = new QueueRefusedError(
        `SQS refused ${refused.length} of ${entries.length} copies (${first.Code ?? 'no code'})`,
        first.Code,
        first.SenderFault === true ? 'permanent' : 'transient',
      );
      return { failed, error };
    } catch (error) {
      // The whole request failed (throttling, access denied, network): every copy of this chunk is
      // unsent, and the cause says which.
      return { failed: entries.map((entry) => entry.queued), error };
    }
  }
}
