import { ResourceNotFoundException } from '@aws-sdk/client-scheduler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBridgeScheduler } from '../../lambdas/adapters/EventBridgeScheduler.js';
import type { SchedulerEmulator } from '../../local/scheduler/startSchedulerEmulator.js';
import {
  relayWorld,
  SCHEDULER_ROLE_ARN,
  seconds,
  startScheduler,
  wholeSecondNow,
} from '../relay/relayParts.js';

let scheduler: SchedulerEmulator;
beforeAll(async () => {
  scheduler = await startScheduler();
});
afterAll(async () => {
  await scheduler.stop();
});

describe('the EventBridge Scheduler adapter', () => {
  it('answers created, then exists for the same name (a replay), and never makes two', async () => {
    const now = wholeSecondNow();
    const t = await relayWorld(scheduler, now);
    const schedule = { name: 'pd-A-1', fireAt: seconds(now, 3600), payload: { id: 'A', rev: 1 } };

    expect(await t.schedules.createOnce(schedule)).toBe('created');
    expect(await t.schedules.createOnce({ ...schedule, fireAt: seconds(now, 7200) })).toBe('exists');

    expect(await t.scheduleNames()).toEqual(['pd-A-1']);
    expect((await t.schedule('pd-A-1')).ScheduleExpression).toBe(
      `at(${seconds(now, 3600).toISOString().slice(0, 19)})`,
    );
  });

  it('answers deleted, then absent', async () => {
    const now = wholeSecondNow();
    const t = await relayWorld(scheduler, now);
    await t.schedules.createOnce({
      name: 'pd-B-1',
      fireAt: seconds(now, 3600),
      payload: { id: 'B', rev: 1 },
    });

    expect(await t.schedules.deleteIfExists('pd-B-1')).toBe('deleted');
    expect(await t.schedules.deleteIfExists('pd-B-1')).toBe('absent');
    expect(await t.scheduleNames()).toEqual([]);
  });

  it('lets every other error through: a missing schedule group fails the create', async () => {
    const now = wholeSecondNow();
    const t = await relayWorld(scheduler, now);
    const misconfigured = new EventBridgeScheduler(t.schedulerSdk, {
      groupName: 'no-such-group',
      sendQueueArn: t.arns.send,
      roleArn: SCHEDULER_ROLE_ARN,
      deadLetterArn: t.arns.scheduleDeadLetter,
    });

    await expect(
      misconfigured.createOnce({ name: 'pd-C-1', fireAt: seconds(now, 3600), payload: { id: 'C', rev: 1 } }),
    ).rejects.toBeInstanceOf(ResourceNotFoundException);
  });

  it('delivers the payload to the send queue when the schedule fires', async () => {
    const t = await relayWorld(scheduler, wholeSecondNow());
    // Taken after the setup (queues, a schedule group): the emulator refuses an at() whose whole
    // second has passed, so all of the lead is left for the create.
    const now = wholeSecondNow();
    await t.schedules.createOnce({ name: 'pd-D-7', fireAt: seconds(now, 2), payload: { id: 'D', rev: 7 } });

    await expect
      .poll(() => t.drain(), { timeout: 10_000, interval: 200 })
      .toEqual([{ v: 1, id: 'D', rev: 7 }]);
    await expect.poll(() => t.scheduleNames(), { timeout: 5000 }).toEqual([]); // ActionAfterCompletion DELETE
  });
});
