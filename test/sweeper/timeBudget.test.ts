import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { SWEEPER_METRIC } from '../../lambdas/core/metricNames.js';
import type { DispatchQueue } from '../../lambdas/ports/DispatchQueue.js';
import type { SweepRecords } from '../../lambdas/ports/SweepRecords.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import type { MessageStateRecord } from '../../lambdas/store/messageRecord.js';
import { shardOf } from '../../lambdas/store/messageRecord.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { INDEX_SHARDS } from '../../lambdas/store/tableLayout.js';
import { createSweeperHandler, isIncomplete } from '../../lambdas/sweeper/createSweeperHandler.js';
import { firstShardOfRun, SWEEP_RESERVED_MS, sweep } from '../../lambdas/sweeper/sweep.js';
import { stateRecord } from '../relay/records.js';
import { seconds, wholeSecondNow } from '../relay/relayParts.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/**
 * A sweep has the time Lambda gives it (SWEEPER_TIMEOUT_SECONDS) and is killed at its end (DESIGN
 * §5a at 10,000/s; review of the sweeper, finding 1). A backlog larger than one run can re-dispatch
 * must not starve the shards a run reaches last, and a run must stop its pass in time to publish
 * its gauges (the alarms on messages waiting for an operator) and tend the DLQ.
 *
 * Time is the run's own clock, which moves STAMP_MS with every stamp it writes (each UpdateItem takes
 * time on AWS; many at once are not faster here: the clock counts them one after the other). The run
 * is killed as Lambda kills it: nothing it asks after its deadline reaches the table, the queue or
 * the metrics.
 */
const SHARDS = INDEX_SHARDS.due;
const PER_SHARD = 20;
const STAMP_MS = 200;
const TIMEOUT_MS = 120_000;
const GRACE = 300;
/** Small pages, so that one page of every shard is small against what a run can stamp. */
const PAGE = 5;

/** PER_SHARD overdue messages in each shard of the `due` index, written in batches. */
async function overdueInEveryShard(tableName: string, t0: Date): Promise<MessageStateRecord[]> {
  const count = new Map<number, number>();
  const records: MessageStateRecord[] = [];
  while (records.length < SHARDS * PER_SHARD) {
    const record = stateRecord({ sendAt: t0, createdAt: t0 });
    const shard = shardOf(record.id, SHARDS);
    if ((count.get(shard) ?? 0) >= PER_SHARD) continue;
    count.set(shard, (count.get(shard) ?? 0) + 1);
    records.push(record);
  }
  const documents = documentClient();
  const batches = Array.from({ length: Math.ceil(records.length / 25) }, (_, i) =>
    records.slice(i * 25, i * 25 + 25),
  );
  for (let i = 0; i < batches.length; i += 8) {
    await Promise.all(
      batches.slice(i, i + 8).map((batch) =>
        documents.send(
          new BatchWriteCommand({
            RequestItems: { [tableName]: batch.map((Item) => ({ PutRequest: { Item } })) },
          }),
        ),
      ),
    );
  }
  return records;
}

async function world() {
  const t0 = wholeSecondNow();
  const { tableName } = await freshTable('sweep-budget');
  await overdueInEveryShard(tableName, t0);
  const documents = documentClient();
  let clock = t0;
  let deadline = Number.POSITIVE_INFINITY;
  const killed = () => clock.getTime() >= deadline;
  const real = new DynamoSweepRecords(documents, tableName);
  const records: SweepRecords = {
    read: (ids) => real.read(ids),
    recordDeadLetter: (letter) => real.recordDeadLetter(letter),
    async recordRedispatch(input) {
      if (killed()) throw new Error('the invocation was killed');
      const written = await real.recordRedispatch(input);
      clock = new Date(clock.getTime() + STAMP_MS);
      return written;
    },
  };
  /** The ids whose copy reached the queue, run by run. */
  const copies: string[][] = [];
  const queue: DispatchQueue = {
    async enqueue(batch) {
      if (killed()) return { failed: [...batch] };
      copies.at(-1)?.push(...batch.map((copy) => copy.payload.id));
      return { failed: [] };
    },
  };
  /** The metrics each run published before its deadline. */
  const published: string[][] = [];
  return {
    t0,
    copies,
    published,
    /** One run at `at`, killed TIMEOUT_MS later on its clock. */
    async run(at: Date) {
      clock = at;
      deadline = at.getTime() + TIMEOUT_MS;
      copies.push([]);
      published.push([]);
      return sweep({
        dueIndex: new DynamoDueIndex(documents, tableName),
        records,
        queue,
        now: () => clock,
        graceSeconds: GRACE,
        shards: SHARDS,
        pageSize: PAGE,
        remainingMs: () => deadline - clock.getTime(),
        metrics: { count: (name) => void (killed() ? undefined : published.at(-1)?.push(name)) },
      });
    },
  };
}

describe('a sweep within its time', () => {
  it('reaches every shard within two runs when one run cannot re-dispatch the whole backlog', async () => {
    const w = await world();

    const first = await w.run(seconds(w.t0, 2 * GRACE));
    await w.run(seconds(w.t0, 3 * GRACE));

    // More than a run can stamp before its deadline, so each run is cut short.
    expect(first.redispatched).toBeLessThan(SHARDS * PER_SHARD);
    expect(isIncomplete(first)).toBe(true);
    const reached = new Set(w.copies.flat().map((id) => shardOf(id, SHARDS)));
    expect(SHARDS - reached.size).toBe(0);
  }, 120_000);

  it('stops its pass in time: a run whose time ends still publishes its gauges, and says it ran out', async () => {
    const w = await world();

    const report = await w.run(seconds(w.t0, 2 * GRACE));

    expect(w.published[0]).toEqual(
      expect.arrayContaining([
        SWEEPER_METRIC.redispatched,
        SWEEPER_METRIC.waiting.failed,
        SWEEPER_METRIC.waiting.dead,
        SWEEPER_METRIC.waiting.unknown,
      ]),
    );
    expect(report).toMatchObject({ outOfTime: true, failed: 0 });
    expect(report.truncatedShards.length).toBeGreaterThan(0);
  }, 120_000);
});

describe('the time a run has', () => {
  it("is the Lambda context's: with only the reserve left, the pass reads nothing and the run still ends with its gauges", async () => {
    const t0 = wholeSecondNow();
    const { tableName } = await freshTable('sweep-context');
    const documents = documentClient();
    const published: string[] = [];
    const sweepOnce = createSweeperHandler({
      dueIndex: new DynamoDueIndex(documents, tableName),
      records: new DynamoSweepRecords(documents, tableName),
      queue: { enqueue: async () => ({ failed: [] }) },
      now: () => t0,
      graceSeconds: GRACE,
      metrics: { count: (name) => void published.push(name) },
    });

    const report = await sweepOnce({ getRemainingTimeInMillis: () => SWEEP_RESERVED_MS });

    expect(report).toMatchObject({ examined: 0, outOfTime: true });
    expect(report.truncatedShards).toHaveLength(SHARDS);
    expect(published).toContain(SWEEPER_METRIC.waiting.dead);
  });

  it('starts each run at another shard, from its minute: every shard is a start within 64 runs a minute apart', () => {
    const at = (minute: number) => new Date(Date.UTC(2026, 11, 3, 0, minute, 17));
    expect(
      new Set(Array.from({ length: SHARDS }, (_, minute) => firstShardOfRun(at(minute), SHARDS))).size,
    ).toBe(SHARDS);
    // Runs five minutes apart (the default interval) start five shards apart.
    expect((firstShardOfRun(at(5), SHARDS) - firstShardOfRun(at(0), SHARDS) + SHARDS) % SHARDS).toBe(5);
  });
});
