import { DeleteScheduleCommand } from '@aws-sdk/client-scheduler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { createRelayHandler } from '../../lambdas/relay/createRelayHandler.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { shardOf } from '../../lambdas/store/messageRecord.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { INDEX_SHARDS } from '../../lambdas/store/tableLayout.js';
import {
  createSweeperHandler,
  isIncomplete,
  sweepRunOf,
} from '../../lambdas/sweeper/createSweeperHandler.js';
import type { SweepDeps } from '../../lambdas/sweeper/sweep.js';
import type { SchedulerEmulator } from '../../local/scheduler/startSchedulerEmulator.js';
import { OutboxWriter, stateRecord } from '../relay/records.js';
import { relayWorld, seconds, startScheduler, wholeSecondNow } from '../relay/relayParts.js';
import { StreamTail } from '../relay/streamTail.js';
import { documentClient, freshTable, sqsClient } from '../support/awsLocal.js';

let scheduler: SchedulerEmulator;
beforeAll(async () => {
  scheduler = await startScheduler();
});
afterAll(async () => {
  await scheduler.stop();
});

const GRACE = 300;
const DAY = 24 * 3600;

/** A table, the relay (clock at t0) and a sweeper whose clock the test moves. */
async function setUp(overrides: Partial<SweepDeps> = {}) {
  const t0 = wholeSecondNow();
  const { tableName, streamArn } = await freshTable();
  const world = await relayWorld(scheduler, t0);
  let clock = t0;
  const sweepOnce = createSweeperHandler({
    dueIndex: new DynamoDueIndex(documentClient(), tableName),
    records: new DynamoSweepRecords(documentClient(), tableName),
    queue: world.queue,
    now: () => clock,
    graceSeconds: GRACE,
    ...overrides,
  });
  return {
    ...world,
    t0,
    tableName,
    outbox: new OutboxWriter(tableName),
    stream: new StreamTail(streamArn),
    relay: createRelayHandler(world.deps),
    /** Runs one sweep with the sweeper's clock at `at`; returns the report and the copies it enqueued. */
    async sweepAt(at: Date) {
      clock = at;
      const before = world.queue.copies.length;
      const report = await sweepOnce();
      return { report, copies: world.queue.copies.slice(before) };
    },
  };
}

describe('the sweeper', () => {
  it('re-dispatches a scheduled message whose schedule was deleted behind its back, with its current rev', async () => {
    const t = await setUp();
    const message = await t.outbox.put(stateRecord({ sendAt: seconds(t.t0, 2 * DAY), createdAt: t.t0 }));
    await t.outbox.reschedule(message.id, seconds(t.t0, 2 * DAY));
    await t.relay(await t.stream.next());
    expect(await t.scheduleNames()).toEqual([`pd-${message.id}-2`]);
    await t.schedulerSdk.send(
      new DeleteScheduleCommand({ Name: `pd-${message.id}-2`, GroupName: t.groupName }),
    );

    // Before send_at + grace nothing is stuck yet.
    const early = await t.sweepAt(seconds(t.t0, 2 * DAY + GRACE - 1));
    expect(early.copies).toEqual([]);

    const late = await t.sweepAt(seconds(t.t0, 2 * DAY + GRACE + 1));
    expect(late.copies).toEqual([{ payload: { id: message.id, rev: 2 }, delaySeconds: 0 }]);
    expect(late.report).toMatchObject({ examined: 1, redispatched: 1, failed: 0 });
    expect(await t.drain()).toEqual([{ v: 1, id: message.id, rev: 2 }]);
  });

  it('re-dispatches a message whose queue copy was purged', async () => {
    const t = await setUp();
    const message = await t.outbox.put(stateRecord({ sendAt: t.t0, createdAt: t.t0 }));
    await t.relay(await t.stream.next());
    expect(await t.drain()).toEqual([{ v: 1, id: message.id, rev: 1 }]); // the copy is taken and lost

    const { copies, report } = await t.sweepAt(seconds(t.t0, GRACE + 1));

    expect(copies).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 0 }]);
    expect(report.redispatched).toBe(1);
    expect(await t.drain()).toEqual([{ v: 1, id: message.id, rev: 1 }]);
  });

  it('re-dispatches a sending message whose lease expired by the grace, and a retrying one long overdue', async () => {
    const t = await setUp();
    const abandoned = await t.outbox.put(
      stateRecord({ status: 'sending', sendAt: t.t0, leaseUntil: seconds(t.t0, 120), createdAt: t.t0 }),
    );
    const overdue = await t.outbox.put(
      stateRecord({ status: 'retrying', rev: 3, sendAt: t.t0, retryAt: seconds(t.t0, 60), createdAt: t.t0 }),
    );

    const { copies } = await t.sweepAt(seconds(t.t0, 120 + GRACE + 1));

    expect(copies.map((copy) => copy.payload).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [
        { id: abandoned.id, rev: 1 },
        { id: overdue.id, rev: 3 },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
  });

  it('leaves a claimed message alone while its lease lives (its due entry still at its send time), and re-dispatches it once the lease expired by the grace', async () => {
    const t = await setUp();
    const leaseUntil = seconds(t.t0, 3 * GRACE);
    // What a claim leaves since it stopped moving the due entry (docs/data-model.md).
    const claimed = await t.outbox.put({
      ...stateRecord({ status: 'sending', sendAt: t.t0, leaseUntil, createdAt: t.t0 }),
      due_at: t.t0.toISOString(),
    });

    expect((await t.sweepAt(seconds(t.t0, 2 * GRACE))).copies).toEqual([]);
    const { copies } = await t.sweepAt(seconds(leaseUntil, GRACE + 1));
    expect(copies).toEqual([{ payload: { id: claimed.id, rev: 1 }, delaySeconds: 0 }]);
  });

  it('leaves healthy and terminal messages alone', async () => {
    const t = await setUp();
    const now = seconds(t.t0, 3600);
    await t.outbox.put(stateRecord({ sendAt: seconds(t.t0, 2 * DAY), createdAt: t.t0 })); // waiting
    await t.outbox.put(stateRecord({ sendAt: seconds(now, -60), createdAt: t.t0 })); // due, within grace
    await t.outbox.put(
      stateRecord({ status: 'sending', sendAt: t.t0, leaseUntil: seconds(now, 60), createdAt: t.t0 }),
    ); // leased
    await t.outbox.put(
      stateRecord({ status: 'retrying', sendAt: t.t0, retryAt: seconds(now, 600), createdAt: t.t0 }),
    ); // backing off
    const sent = await t.outbox.put(stateRecord({ sendAt: t.t0, createdAt: t.t0 }));
    await t.outbox.finish(sent.id, 'sent');
    const cancelled = await t.outbox.put(stateRecord({ sendAt: t.t0, createdAt: t.t0 }));
    await t.outbox.finish(cancelled.id, 'cancelled');

    const { copies, report } = await t.sweepAt(now);

    expect(copies).toEqual([]);
    expect(report).toMatchObject({ examined: 0, redispatched: 0, failed: 0 });
  });

  it('skips an entry whose index copy still shows a terminal status (a lagging index), without a copy', async () => {
    const t = await setUp();
    // A terminal record that kept its due keys: what an eventually consistent index may show briefly.
    const { due_pk, due_at, ...rest } = stateRecord({ sendAt: t.t0, createdAt: t.t0 });
    await t.outbox.put({ ...rest, status: 'sent', due_pk, due_at });

    const { copies, report } = await t.sweepAt(seconds(t.t0, GRACE + 1));

    expect(copies).toEqual([]);
    expect(report).toMatchObject({ examined: 1, skipped: 1, redispatched: 0 });
  });

  it('is bounded per shard and run, oldest first, and says which shards it left unfinished', async () => {
    const t = await setUp({ maxPerShard: 2, pageSize: 1 });
    // Three overdue messages in one shard of the due index.
    const ids: string[] = [];
    // send_at counts the ids found, not the tries: about 64 tries find one id of shard 5, and every
    // one of the three must be overdue and older than the next.
    while (ids.length < 3) {
      const record = stateRecord({ sendAt: seconds(t.t0, -100 + ids.length), createdAt: t.t0 });
      if (shardOf(record.id, INDEX_SHARDS.due) !== 5) continue;
      await t.outbox.put(record);
      ids.push(record.id);
    }

    const { copies, report } = await t.sweepAt(seconds(t.t0, GRACE));

    expect(copies.map((copy) => copy.payload.id)).toEqual(ids.slice(0, 2));
    expect(report).toMatchObject({ examined: 2, redispatched: 2, truncatedShards: [5] });
    // A shard not read to its end makes the run incomplete: the function's Errors, SweeperErrors.
    expect(isIncomplete(report)).toBe(true);
  });

  it('counts the copies the queue refused instead of throwing, and finds them again next run', async () => {
    const t = await setUp();
    await t.outbox.put(stateRecord({ sendAt: t.t0, createdAt: t.t0 }));
    const sweepWithoutQueue = createSweeperHandler({
      dueIndex: new DynamoDueIndex(documentClient(), t.tableName),
      records: new DynamoSweepRecords(documentClient(), t.tableName),
      queue: new SqsDispatchQueue(sqsClient(), `${t.urls.send}-gone`),
      now: () => seconds(t.t0, GRACE + 1),
      graceSeconds: GRACE,
    });

    expect(await sweepWithoutQueue()).toMatchObject({ examined: 1, redispatched: 0, failed: 1 });
    expect((await t.sweepAt(seconds(t.t0, GRACE + 1))).report).toMatchObject({ redispatched: 1, failed: 0 });
  });

  it('reports a shard it could not read and goes on with the others', async () => {
    const t = await setUp();
    const sweepWithoutTable = createSweeperHandler({
      dueIndex: new DynamoDueIndex(documentClient(), 'no-such-table'),
      records: new DynamoSweepRecords(documentClient(), 'no-such-table'),
      queue: t.queue,
      now: () => t.t0,
      graceSeconds: GRACE,
      shards: 2,
    });

    const report = await sweepWithoutTable();

    expect(report.shardErrors).toEqual([
      { shard: 0, error: 'ResourceNotFoundException' },
      { shard: 1, error: 'ResourceNotFoundException' },
    ]);
  });
});

describe("the sweeper's invocation event", () => {
  const NOW = new Date('2026-12-04T12:00:00.000Z');

  it("is the schedule's tick, or says when the send queue was emptied (an operator after a purge, the local stack at its start)", () => {
    expect(sweepRunOf({ 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {} }, NOW)).toEqual(
      {},
    );
    expect(sweepRunOf(undefined, NOW)).toEqual({});
    expect(sweepRunOf({ queueEmptiedAt: '2026-12-04T10:00:00.000Z' }, NOW)).toEqual({
      queueEmptiedAt: new Date('2026-12-04T10:00:00.000Z'),
    });
  });

  it('refuses a queueEmptiedAt that is not an ISO 8601 time, naming the field, before it reads anything', () => {
    for (const queueEmptiedAt of ['yesterday', 1733306400000, '', null]) {
      expect(() => sweepRunOf({ queueEmptiedAt }, NOW)).toThrow(/queueEmptiedAt.*ISO 8601/);
    }
  });

  it('refuses a queueEmptiedAt in the future (beyond a minute of clock skew): a typo would read the whole index', () => {
    const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000).toISOString();
    expect(sweepRunOf({ queueEmptiedAt: at(60) }, NOW)).toEqual({ queueEmptiedAt: new Date(at(60)) });
    expect(() => sweepRunOf({ queueEmptiedAt: at(61) }, NOW)).toThrow(/queueEmptiedAt.*in the future/);
    expect(() => sweepRunOf({ queueEmptiedAt: '2099-01-01T00:00:00Z' }, NOW)).toThrow(/queueEmptiedAt/);
  });
});
