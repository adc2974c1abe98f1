import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import type { DispatchQueue } from '../../lambdas/ports/DispatchQueue.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { messagePk, shardOf } from '../../lambdas/store/messageRecord.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { INDEX_SHARDS } from '../../lambdas/store/tableLayout.js';
import { createSweeperHandler } from '../../lambdas/sweeper/createSweeperHandler.js';
import { OutboxWriter, stateRecord } from '../relay/records.js';
import { RecordingQueue, seconds, wholeSecondNow } from '../relay/relayParts.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/**
 * Issue 15 §4: the sweeper must not add copies of messages that are merely queued behind a backlog.
 * From the table a copy waiting on the queue and a lost copy look the same (a message past its time,
 * not moving), so a lost copy is still replaced after the grace, but a stall that goes on is
 * re-dispatched less and less often instead of once per run.
 */
const GRACE = 300;
/** The sweeper's runs in these tests: every two minutes over two hours (AWS runs it every five). */
const RUN_EVERY = 120;

/** A message of shard 0 of the due index, so the sweeps of a test read that shard only. */
function stalledMessage(options: Parameters<typeof stateRecord>[0]) {
  for (;;) {
    const record = stateRecord(options);
    if (shardOf(record.id, INDEX_SHARDS.due) === 0) return record;
  }
}

/** A send queue that takes every copy (the copies themselves are what the test counts). */
const acceptingQueue: DispatchQueue = { enqueue: async () => ({ failed: [] }) };

async function setUp() {
  const t0 = wholeSecondNow();
  const { tableName } = await freshTable();
  const queue = new RecordingQueue(acceptingQueue);
  let clock = t0;
  const sweepOnce = createSweeperHandler({
    dueIndex: new DynamoDueIndex(documentClient(), tableName),
    records: new DynamoSweepRecords(documentClient(), tableName),
    queue,
    now: () => clock,
    graceSeconds: GRACE,
    shards: 1,
    waitingShards: 1,
  });
  return {
    t0,
    tableName,
    queue,
    outbox: new OutboxWriter(tableName),
    /** Runs the sweeper every `step` seconds over [from, to]; the second (from t0) of each copy. */
    async runEvery(
      step: number,
      fromSecond: number,
      toSecond: number,
      run: Parameters<typeof sweepOnce>[1] = {},
    ): Promise<number[]> {
      const at: number[] = [];
      for (let second = fromSecond; second <= toSecond; second += step) {
        clock = seconds(t0, second);
        const before = queue.copies.length;
        await sweepOnce(undefined, run);
        for (let i = before; i < queue.copies.length; i++) at.push(second);
      }
      return at;
    },
    async record(id: string) {
      const { Item } = await documentClient().send(
        new GetCommand({
          TableName: tableName,
          Key: { pk: messagePk(id), sk: 'STATE' },
          ConsistentRead: true,
        }),
      );
      return Item;
    },
  };
}

describe('the sweeper and a backlog', () => {
  it('replaces a copy after the grace, then backs off: two hours of a stalled message cost a handful of copies, not one per run', async () => {
    const t = await setUp();
    await t.outbox.put(stalledMessage({ sendAt: t.t0, createdAt: t.t0 }));

    const copiesAt = await t.runEvery(RUN_EVERY, 0, 7200);

    // The first run past the grace rescues a lost copy at once.
    expect(copiesAt[0]).toBeGreaterThan(GRACE);
    expect(copiesAt[0]).toBeLessThanOrEqual(GRACE + RUN_EVERY);
    // 58 runs saw the message overdue; at most 1 + log2(7200 / grace) of them added a copy.
    expect(copiesAt.length).toBeLessThanOrEqual(1 + Math.floor(Math.log2(7200 / GRACE)));
    // Each wait is at least as long as the one before (the stall is not re-dispatched at a steady rate).
    const waits = copiesAt.slice(1).map((second, i) => second - (copiesAt[i] as number));
    for (let i = 1; i < waits.length; i++) expect(waits[i]).toBeGreaterThanOrEqual(waits[i - 1] as number);
    expect(waits[0]).toBeGreaterThanOrEqual(2 * GRACE - RUN_EVERY);
  }, 90_000);

  it('replaces at once the copy of a backed-off stall when told the queue was emptied since its stamp (a purge, the local emulator restarted), then backs off from one again', async () => {
    const t = await setUp();
    const stalled = await t.outbox.put(stalledMessage({ sendAt: t.t0, createdAt: t.t0 }));
    const copiesBefore = await t.runEvery(RUN_EVERY, 0, 2400);
    expect(copiesBefore.length).toBeGreaterThanOrEqual(3);
    const backedOff = await t.record(stalled.id);
    // Its next re-dispatch is far off (the backoff): what a restart of the local stack left it.
    expect(Date.parse(backedOff?.due_at) - seconds(t.t0, 2500).getTime()).toBeGreaterThan(GRACE * 1000);

    // The queue is emptied at 2490.
    const queueEmptiedAt = seconds(t.t0, 2490);
    const rescued = await t.runEvery(1, 2500, 2500, { queueEmptiedAt });
    expect(rescued).toEqual([2500]);
    expect(t.queue.copies.at(-1)?.payload).toEqual({ id: stalled.id, rev: 1 });
    expect(await t.record(stalled.id)).toMatchObject({ sweep_count: 1, status: 'scheduled', rev: 1 });

    // Then the ordinary runs: the next copy one doubled grace later, as after a first re-dispatch.
    const after = await t.runEvery(RUN_EVERY, 2500 + RUN_EVERY, 2500 + 2 * GRACE + RUN_EVERY);
    expect(after).toHaveLength(1);
    expect(after[0]).toBeGreaterThanOrEqual(2500 + 2 * GRACE);
  }, 90_000);

  it('never changes the status or the rev: only the place in the due index and its own stamp', async () => {
    const t = await setUp();
    const message = await t.outbox.put(stalledMessage({ sendAt: t.t0, rev: 4, createdAt: t.t0 }));

    await t.runEvery(60, GRACE + 1, GRACE + 1);

    const after = await t.record(message.id);
    expect(t.queue.copies.map((copy) => copy.payload)).toEqual([{ id: message.id, rev: 4 }]);
    expect(after).toMatchObject({ status: 'scheduled', rev: 4, send_at: message.send_at, sweep_count: 1 });
    expect(after?.due_at).toBe(after?.sweep_due_at);
    expect(after?.due_at > (message.due_at as string)).toBe(true);
  });

  it('starts counting again when someone else moves the record: a claim abandoned after a re-dispatch is rescued after the grace', async () => {
    const t = await setUp();
    const message = await t.outbox.put(stalledMessage({ sendAt: t.t0, createdAt: t.t0 }));
    expect(await t.runEvery(60, GRACE + 1, GRACE + 1)).toEqual([GRACE + 1]);

    // The re-dispatched copy is claimed by a sender that then dies: the lease runs out at +600.
    await t.outbox.claim(message.id, seconds(t.t0, 600));

    const copiesAt = await t.runEvery(60, GRACE + 61, 600 + GRACE + 60);
    expect(copiesAt).toEqual([600 + GRACE + 1]);
    expect(await t.record(message.id)).toMatchObject({ status: 'sending', sweep_count: 1 });
  });

  it("loses to any writer: a stamp whose due_at is no longer the record's writes nothing", async () => {
    const t = await setUp();
    const message = await t.outbox.put(stalledMessage({ sendAt: t.t0, createdAt: t.t0 }));
    const records = new DynamoSweepRecords(documentClient(), t.tableName);

    const stale = await records.recordRedispatch({
      id: message.id,
      rev: 1,
      status: 'scheduled',
      seenDueAt: seconds(t.t0, -1).toISOString(),
      nextDueAt: seconds(t.t0, 900).toISOString(),
      sweepCount: 1,
      now: t.t0,
    });
    const otherRev = await records.recordRedispatch({
      id: message.id,
      rev: 2,
      status: 'scheduled',
      seenDueAt: message.due_at as string,
      nextDueAt: seconds(t.t0, 900).toISOString(),
      sweepCount: 1,
      now: t.t0,
    });

    expect([stale, otherRev]).toEqual(['moved-on', 'moved-on']);
    expect(await t.record(message.id)).toEqual(message);
  });
});
