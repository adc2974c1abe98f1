import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import type { DispatchQueue, QueuedCopy } from '../../lambdas/ports/DispatchQueue.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { type SweepDeps, sweep } from '../../lambdas/sweeper/sweep.js';
import { documentClient, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';

/** The breaker's settings the sweeper tests run with. */
export const SWEEP_GATE_SETTINGS = { probeIntervalMs: 30_000, probeTimeoutMs: 10_000 };

/** The send queue, recording every copy the sweeper puts on it. */
class RecordingQueue implements DispatchQueue {
  readonly copies: QueuedCopy[] = [];
  constructor(private readonly inner: DispatchQueue) {}
  enqueue(copies: readonly QueuedCopy[]) {
    this.copies.push(...copies);
    return this.inner.enqueue(copies);
  }
  /** How many copies of one message went out. */
  of(id: string): number {
    return this.copies.filter((copy) => copy.payload.id === id).length;
  }
}

/**
 * A fresh table and send queue on the emulators, the real sending gate, and `run(now)`: one sweep
 * with the real adapters, as the sweeper function wires them (grace 300 s, 64 due shards), or with
 * the bounds `overrides` sets.
 */
export async function sweepWorld(prefix: string, relays?: readonly string[]) {
  const { tableName } = await freshTable(prefix);
  const { urls } = await freshQueues();
  const documents = documentClient();
  const gate = new DynamoSendingGate(documents, tableName);
  const queue = new RecordingQueue(new SqsDispatchQueue(sqsClient(), urls.send));
  /** The gauges the sweeper published, with the relay each is about (DESIGN §15). */
  const gauges: { name: string; value: number; relay?: string | undefined }[] = [];
  const run = (now: Date, overrides: Pick<SweepDeps, 'maxPerShard' | 'maxReadsPerShard' | 'pageSize'> = {}) =>
    sweep({
      dueIndex: new DynamoDueIndex(documents, tableName),
      records: new DynamoSweepRecords(documents, tableName),
      queue,
      now: () => now,
      graceSeconds: 300,
      shards: 64,
      gate: {
        store: gate,
        settings: SWEEP_GATE_SETTINGS,
        // With relays (DESIGN §15): each one's gate, as the sweeper function wires them.
        ...(relays === undefined
          ? {}
          : {
              relays: relays.map((name) => ({
                name,
                store: new DynamoSendingGate(documents, tableName, name),
              })),
            }),
      },
      metrics: { count: (name, value, relay) => void gauges.push({ name, value, relay }) },
      ...overrides,
    });
  return { tableName, documents, gate, queue, run, gauges };
}
