import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import type { DispatchQueue, QueuedCopy } from '../../lambdas/ports/DispatchQueue.js';
import type { SweepCursors } from '../../lambdas/ports/SweepCursors.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { DynamoSweepCursors } from '../../lambdas/store/sweepCursors.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { KEY } from '../../lambdas/store/tableLayout.js';
import { createSweeperHandler } from '../../lambdas/sweeper/createSweeperHandler.js';
import { type SweepDeps, sweep } from '../../lambdas/sweeper/sweep.js';
import { documentClient, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';

/** The bounds of a run a test may set. */
type SweepBound = 'maxPerShard' | 'maxReadsPerShard' | 'pageSize' | 'remainingMs';

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
 * A table client whose every read of the gate items with these sort keys (`GATE`: the pauses and the
 * relay `default`'s breaker; `RELAY#{name}`: another relay's) fails as a throttle that outlasted the
 * SDK's retries would. Every other request reaches DynamoDB Local as it is.
 */
function gateReadsThrottled(sortKeys: readonly string[]): DynamoDBDocumentClient {
  const documents = documentClient();
  documents.middlewareStack.add(
    (next, context) => async (args) => {
      const key = (args.input as { Key?: Record<string, unknown> }).Key?.[KEY.sort];
      // The document client's key, or the marshalled one below it.
      const sk = typeof key === 'string' ? key : (key as { S?: string } | undefined)?.S;
      if (context.commandName === 'GetItemCommand' && sk !== undefined && sortKeys.includes(sk)) {
        throw new ProvisionedThroughputExceededException({ message: 'throttled', $metadata: {} });
      }
      return next(args);
    },
    { step: 'initialize', name: 'throttleGateReads' },
  );
  return documents;
}

/**
 * A fresh table and send queue on the emulators, the real sending gate, and `run(now)`: one sweep
 * with the real adapters, as the sweeper function wires them (grace 300 s, 64 due shards), or with
 * the bounds `overrides` sets. `throttledGateItems`: the sort keys of the gate items the sweeper's
 * reads of the gate cannot read (the test's own `gate` reads them).
 */
export async function sweepWorld(
  prefix: string,
  relays?: readonly string[],
  options: { readonly throttledGateItems?: readonly string[] } = {},
) {
  const { tableName } = await freshTable(prefix);
  const { urls } = await freshQueues();
  const documents = documentClient();
  const gate = new DynamoSendingGate(documents, tableName);
  const gateDocuments =
    options.throttledGateItems === undefined ? documents : gateReadsThrottled(options.throttledGateItems);
  const queue = new RecordingQueue(new SqsDispatchQueue(sqsClient(), urls.send));
  /** The gauges the sweeper published, with the relay each is about (DESIGN §15). */
  const gauges: { name: string; value: number; relay?: string | undefined }[] = [];
  /** The sweeper's dependencies as the sweeper function wires them, its clock at `now`. */
  const wired = (now: Date): SweepDeps => ({
    dueIndex: new DynamoDueIndex(documents, tableName),
    records: new DynamoSweepRecords(documents, tableName),
    queue,
    now: () => now,
    graceSeconds: 300,
    shards: 64,
    gate: {
      store: gateDocuments === documents ? gate : new DynamoSendingGate(gateDocuments, tableName),
      settings: SWEEP_GATE_SETTINGS,
      // With relays (DESIGN §15): each one's gate, as the sweeper function wires them.
      ...(relays === undefined
        ? {}
        : {
            relays: relays.map((name) => ({
              name,
              store: new DynamoSendingGate(gateDocuments, tableName, name),
            })),
          }),
    },
    metrics: { count: (name, value, relay) => void gauges.push({ name, value, relay }) },
  });
  /** One sweep, as the CLI's one-off sweep runs it (no handler, nothing kept between runs but `resumeFrom`). */
  const run = (now: Date, overrides: Pick<SweepDeps, SweepBound | 'resumeFrom'> = {}) =>
    sweep({ ...wired(now), ...overrides });
  /** The sweeper function's cursors item (store/sweepCursors.ts), its reads and writes counted. */
  const kept = new DynamoSweepCursors(documents, tableName);
  const cursorCalls = { reads: 0, writes: 0 };
  const cursors: SweepCursors = {
    read: () => {
      cursorCalls.reads++;
      return kept.read();
    },
    write: (shards, at) => {
      cursorCalls.writes++;
      return kept.write(shards, at);
    },
  };
  /**
   * The sweeper function as a cold start builds it (lambdas/sweeper/handler.ts), with `bounds`:
   * each call is a new environment, which remembers nothing of the last.
   */
  const coldStart = (now: Date, bounds: Pick<SweepDeps, SweepBound> = {}) =>
    createSweeperHandler({
      ...wired(now),
      ...bounds,
      cursors,
    });
  return { tableName, documents, gate, queue, run, coldStart, cursorCalls, gauges };
}
