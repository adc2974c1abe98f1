import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SqsDeadLetterQueue } from '../../cli/deadLetters/SqsDeadLetterQueue.js';
import { replayRelayRecords } from '../../cli/relayFailuresCommand.js';
import { redriveStreamFailures } from '../../cli/streamFailures/redriveStreamFailures.js';
import { DynamoDbStreamRangeReader } from '../../cli/streamFailures/streamRange.js';
import { EventBridgeScheduler } from '../../lambdas/adapters/EventBridgeScheduler.js';
import { createRelayHandler } from '../../lambdas/relay/createRelayHandler.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { RELAY_STREAM_FILTER } from '../../lambdas/store/tableLayout.js';
import { sweeperGateOf } from '../../lambdas/sweeper/relayToken.js';
import { startStreamRunner } from '../../local/runners/streamRunner.js';
import type { SchedulerEmulator } from '../../local/scheduler/startSchedulerEmulator.js';
import { documentClient, freshTable, sqsClient, streamsClient } from '../support/awsLocal.js';
import { SWEEP_GATE_SETTINGS } from '../sweeper/sweepWorld.js';
import { OutboxWriter, stateRecord } from './records.js';
import {
  relayRunner,
  relayWorld,
  SCHEDULER_ROLE_ARN,
  seconds,
  startScheduler,
  wholeSecondNow,
} from './relayParts.js';

let scheduler: SchedulerEmulator;
beforeAll(async () => {
  scheduler = await startScheduler();
});
afterAll(async () => {
  await scheduler.stop();
});

const DAY = 24 * 3600;

describe('the relay behind the local stream event source', () => {
  it('relays what the filtered stream delivers: queue copies, schedules, and nothing for other items', async () => {
    const now = wholeSecondNow();
    const { tableName, streamArn } = await freshTable();
    const t = await relayWorld(scheduler, now);
    const outbox = new OutboxWriter(tableName);
    const runner = relayRunner(streamArn, t.deps);
    try {
      const immediate = await outbox.put(stateRecord({ sendAt: now, createdAt: now }));
      await outbox.putBody(immediate.id);
      const later = await outbox.put(stateRecord({ sendAt: seconds(now, 2 * DAY), createdAt: now }));
      await outbox.reschedule(later.id, seconds(now, 3 * DAY));
      await runner.idle();

      expect(t.queue.copies).toEqual([{ payload: { id: immediate.id, rev: 1 }, delaySeconds: 0 }]);
      expect(await t.scheduleNames()).toEqual([`pd-${later.id}-2`]);
    } finally {
      await runner.stop();
    }
  });

  it('sends a batch it gives up on to the failure queue, and the redrive relays it from there', async () => {
    const now = wholeSecondNow();
    const { tableName, streamArn } = await freshTable();
    const t = await relayWorld(scheduler, now);
    const outbox = new OutboxWriter(tableName);
    const misconfigured = new EventBridgeScheduler(t.schedulerSdk, {
      groupName: 'no-such-group',
      sendQueueArn: t.arns.send,
      roleArn: SCHEDULER_ROLE_ARN,
      deadLetterArn: t.arns.scheduleDeadLetter,
    });
    const runner = startStreamRunner({
      dynamodbEndpoint: inject('dynamodbEndpoint'),
      streamArn,
      handler: createRelayHandler({ ...t.deps, scheduler: misconfigured }),
      filter: RELAY_STREAM_FILTER,
      maxAttempts: 1,
      pollIntervalMs: 50,
      onFailure: { sqsEndpoint: inject('sqsEndpoint'), queueUrl: t.urls.relayFailures },
      log: () => {},
    });
    const later = await outbox.put(stateRecord({ sendAt: seconds(now, 2 * DAY), createdAt: now }));
    try {
      await runner.idle();
    } finally {
      await runner.stop();
    }
    expect(await t.scheduleNames()).toEqual([]);

    const report = await redriveStreamFailures({
      failures: new SqsDeadLetterQueue(sqsClient(), t.urls.relayFailures, { waitSeconds: 0 }),
      replay: replayRelayRecords(t.deps),
      streamRange: new DynamoDbStreamRangeReader(streamsClient()),
      sweep: {
        dueIndex: new DynamoDueIndex(documentClient(), tableName),
        records: new DynamoSweepRecords(documentClient(), tableName),
        gate: sweeperGateOf(documentClient(), tableName, ['default'], SWEEP_GATE_SETTINGS),
        queue: t.queue,
        now: () => now,
      },
    });

    expect(report).toMatchObject({ messages: 1, replayed: 1, kept: 0 });
    expect(await t.scheduleNames()).toEqual([`pd-${later.id}-1`]);
  });
});
