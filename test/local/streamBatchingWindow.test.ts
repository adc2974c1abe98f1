/**
 * The local stream runner's batching window, as Lambda's MaximumBatchingWindowInSeconds behaves
 * (local/runners/streamBatcher.ts): a short batch waits until its first record has waited the window;
 * a full batch, and a batch being retried, go at once. The clock is the test's.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { StreamBatcher } from '../../local/runners/streamBatcher.js';

const records = (from: number, count: number): DynamoDBRecord[] =>
  Array.from({ length: count }, (_, n) => ({
    eventID: String(from + n),
    dynamodb: { SequenceNumber: String(1000 + from + n) },
  }));

describe('a stream batching window', () => {
  it('holds a short batch until its first record has waited the window, then hands over all that came', () => {
    const batcher = new StreamBatcher(10, 3, true, 1000);
    batcher.add(records(0, 3), 0);
    expect(batcher.nextBatch(0)).toBeUndefined();
    batcher.add(records(3, 2), 600);
    expect(batcher.nextBatch(999)).toBeUndefined();
    expect(batcher.nextBatch(1000)).toHaveLength(5);
  });

  it('hands over a full batch at once', () => {
    const batcher = new StreamBatcher(10, 3, true, 1000);
    batcher.add(records(0, 12), 0);
    const first = batcher.nextBatch(1);
    expect(first).toHaveLength(10);
    batcher.settle(first ?? [], { kind: 'ok' });
    // The two left waited since 0: inside the window still.
    expect(batcher.nextBatch(500)).toBeUndefined();
    expect(batcher.nextBatch(1000)).toHaveLength(2);
  });

  it('retries a failed batch without waiting again, and without a window never waits', () => {
    const batcher = new StreamBatcher(10, 3, false, 1000);
    batcher.add(records(0, 2), 0);
    const batch = batcher.nextBatch(1000) ?? [];
    batcher.settle(batch, { kind: 'error' });
    expect(batcher.nextBatch(1000)).toHaveLength(2);
    const plain = new StreamBatcher(10, 3, true);
    plain.add(records(0, 1), 0);
    expect(plain.nextBatch(0)).toHaveLength(1);
  });
});
