import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqsDeadLetterQueue } from '../../cli/deadLetters/SqsDeadLetterQueue.js';
import { replayRelayRecords } from '../../cli/relayFailuresCommand.js';
import { redriveStreamFailures } from '../../cli/streamFailures/redriveStreamFailures.js';
import { DynamoDbStreamRangeReader } from '../../cli/streamFailures/streamRange.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { sweeperGateOf } from '../../lambdas/sweeper/relayToken.js';
import type { SchedulerEmulator } from '../../local/scheduler/startSchedulerEmulator.js';
import { documentClient, freshTable, sqsClient, streamsClient } from '../support/awsLocal.js';
import { SWEEP_GATE_SETTINGS } from '../sweeper/sweepWorld.js';
import { OutboxWriter, stateRecord } from './records.js';
import { drainQueue, relayWorld, seconds, startScheduler, wholeSecondNow } from './relayParts.js';
import { relayFailureMessage, StreamTail } from './streamTail.js';

let scheduler: SchedulerEmulator;
beforeAll(async () => {
  scheduler = await startScheduler();
});
afterAll(async () => {
  await scheduler.stop();
});

const DAY = 24 * 3600;

/** A relay world whose stream batch "failed for good": its DDBStreamBatchInfo sits on the failure queue. */
async function setUp() {
  const now = wholeSecondNow();
  const { tableName, streamArn } = await freshTable();
  const world = await relayWorld(scheduler, now);
  const failures = new SqsDeadLetterQueue(sqsClient(), world.urls.relayFailures, { waitSeconds: 0 });
  return {
    ...world,
    now,
    streamArn,
    outbox: new OutboxWriter(tableName),
    stream: new StreamTail(streamArn),
    async fail(body: string) {
      await sqsClient().send(
        new SendMessageCommand({ QueueUrl: world.urls.relayFailures, MessageBody: body }),
      );
    },
    redrive: () =>
      redriveStreamFailures({
        failures,
        replay: replayRelayRecords(world.deps),
        streamRange: new DynamoDbStreamRangeReader(streamsClient()),
        sweep: {
          dueIndex: new DynamoDueIndex(documentClient(), tableName),
          records: new DynamoSweepRecords(documentClient(), tableName),
          gate: sweeperGateOf(documentClient(), tableName, ['default'], SWEEP_GATE_SETTINGS),
          queue: world.queue,
          now: () => now,
        },
      }),
    failuresLeft: () => drainQueue(world.urls.relayFailures).catch(() => ['unparseable']),
  };
}

describe('redriving relay failures', () => {
  it('replays a failed batch that the stream still holds, exactly as the relay would have', async () => {
    const t = await setUp();
    const immediate = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));
    const later = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }));
    const cancelled = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }));
    await t.outbox.finish(cancelled.id, 'cancelled');
    const lost = await t.stream.next(); // the relay never managed this batch
    await t.fail(t.stream.failureMessage(lost));
    const report = await t.redrive();

    expect(report).toMatchObject({
      messages: 1,
      replayed: 1,
      sweptOver: 0,
      kept: 0,
      invalidRecords: 0,
      sweep: null,
    });
    expect(await t.scheduleNames()).toEqual([`pd-${later.id}-1`]);
    expect(t.queue.copies).toEqual([{ payload: { id: immediate.id, rev: 1 }, delaySeconds: 0 }]);
    expect(await t.failuresLeft()).toEqual([]);
  });

  it('falls back to a grace-0 sweep when the records are gone, then deletes the failure message', async () => {
    const t = await setUp();
    const due = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, -1), createdAt: t.now }));
    await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }));
    await t.fail(
      relayFailureMessage({
        streamArn: t.streamArn,
        shardId: 'shardId-00000001700000000000-deadbeef',
        start: '000000000000000000100',
        end: '000000000000000000200',
        batchSize: 2,
      }),
    );

    const report = await t.redrive();

    expect(report).toMatchObject({ messages: 1, replayed: 0, sweptOver: 1, kept: 0 });
    expect(report.sweep).toMatchObject({ examined: 1, redispatched: 1 });
    expect(t.queue.copies).toEqual([{ payload: { id: due.id, rev: 1 }, delaySeconds: 0 }]);
    expect(await t.failuresLeft()).toEqual([]);
  });

  it('keeps a failure message whose batch fails again, and one it cannot read', async () => {
    const t = await setUp();
    await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }));
    const lost = await t.stream.next();
    await t.fail(t.stream.failureMessage(lost));
    await t.fail('{"not":"a failure record"}');
    const { EventBridgeScheduler } = await import('../../lambdas/adapters/EventBridgeScheduler.js');
    const brokenScheduler = new EventBridgeScheduler(t.schedulerSdk, {
      groupName: 'no-such-group',
      sendQueueArn: t.arns.send,
      roleArn: 'arn:aws:iam::000000000000:role/x',
      deadLetterArn: t.arns.scheduleDeadLetter,
    });

    const report = await redriveStreamFailures({
      failures: new SqsDeadLetterQueue(sqsClient(), t.urls.relayFailures, { waitSeconds: 0 }),
      replay: replayRelayRecords({ ...t.deps, scheduler: brokenScheduler }),
      streamRange: new DynamoDbStreamRangeReader(streamsClient()),
      sweep: {
        dueIndex: new DynamoDueIndex(documentClient(), 'unused'),
        records: new DynamoSweepRecords(documentClient(), 'unused'),
        gate: sweeperGateOf(documentClient(), 'unused', ['default'], SWEEP_GATE_SETTINGS),
        queue: t.queue,
        now: () => t.now,
      },
      hideSeconds: 1,
    });

    expect(report).toMatchObject({ messages: 2, replayed: 0, kept: 2, sweep: null });
    expect(await t.scheduleNames()).toEqual([]);
  });
});
