import { describe, expect, it } from 'vitest';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import type { QueuedCopy } from '../../lambdas/ports/DispatchQueue.js';
import { drainQueue } from '../relay/relayParts.js';
import { freshQueues, sqsClient } from '../support/awsLocal.js';

const copies = (n: number): QueuedCopy[] =>
  Array.from({ length: n }, (_, i) => ({ payload: { id: `m${i}`, rev: 1 }, delaySeconds: 0 }));

describe('the send queue on SQS', () => {
  it('sends any number of copies in chunks of ten, every one of them', async () => {
    const { urls } = await freshQueues();
    const queue = new SqsDispatchQueue(sqsClient(), urls.send);

    const { failed } = await queue.enqueue(copies(25));

    expect(failed).toEqual([]);
    const received = await drainQueue(urls.send);
    expect(received.map((payload) => payload.id).sort()).toEqual(
      copies(25)
        .map((c) => c.payload.id)
        .sort(),
    );
  });

  it('returns every copy of every chunk as failed when the queue cannot be reached, without throwing', async () => {
    const { urls } = await freshQueues();
    const queue = new SqsDispatchQueue(sqsClient(), `${urls.send}-does-not-exist`);
    const sent = copies(25);

    const { failed } = await queue.enqueue(sent);

    expect(new Set(failed)).toEqual(new Set(sent));
  });

  it("keeps the cause of a failed request: the queue's own error, not a bare list", async () => {
    const { urls } = await freshQueues();
    const queue = new SqsDispatchQueue(sqsClient(), `${urls.send}-does-not-exist`);

    const { failed, error } = await queue.enqueue(copies(3));

    expect(failed).toHaveLength(3);
    expect(error).toBeInstanceOf(Error);
    // The SDK's exception for a missing queue, so a log tells it from throttling or access denied.
    expect((error as Error).name).toMatch(/QueueDoesNotExist|NonExistentQueue/);
  });

  it('fails only the copy that cannot be a payload: the rest of its chunk of ten is enqueued', async () => {
    // DESIGN §2: an id is URL-safe and at most 32 characters. A state record written by hand may name
    // another (`order:42`); its copy cannot be encoded, and it alone is unsent (the port's promise:
    // exactly the copies that could not be enqueued), not the nine others SendMessageBatch would carry.
    const { urls } = await freshQueues();
    const queue = new SqsDispatchQueue(sqsClient(), urls.send);
    const sent = copies(10);
    const unencodable: QueuedCopy = { payload: { id: 'order:42', rev: 1 }, delaySeconds: 0 };
    sent.splice(4, 0, unencodable);

    const { failed, error } = await queue.enqueue(sent);

    expect(failed).toEqual([unencodable]);
    expect(error).toBeInstanceOf(RangeError);
    const received = await drainQueue(urls.send);
    expect(received.map((payload) => payload.id).sort()).toEqual(
      copies(10)
        .map((c) => c.payload.id)
        .sort(),
    );
  });

  it('answers no error when every copy was enqueued', async () => {
    const { urls } = await freshQueues();
    const result = await new SqsDispatchQueue(sqsClient(), urls.send).enqueue(copies(2));

    expect(result).toEqual({ failed: [] });
  });
});
