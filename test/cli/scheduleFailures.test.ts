import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { memoryOutput } from '../../cli/output.js';
import {
  scheduleFailuresCleared,
  scheduleFailuresRedrive,
} from '../../cli/scheduleFailures/scheduleFailuresRedrive.js';
import { scheduleFailuresShow } from '../../cli/scheduleFailures/scheduleFailuresShow.js';
import { encodeDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { deliverScheduleInput } from '../../local/scheduler/deliverScheduleInput.js';
import type { StoredSchedule } from '../../local/scheduler/scheduleStore.js';
import { documentClient, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { drainIds, messageId, type SeedMessage, seedMessages, visibleCount } from './cliFixtures.js';

const NOW = new Date('2026-11-29T12:00:00.000Z');
const ROLE = 'arn:aws:iam::000000000000:role/postdate-local-scheduler';

/**
 * A table, the queues, and the schedules' DLQ filled the way EventBridge Scheduler fills it: the
 * local Scheduler emulator delivers each schedule, its target refuses every attempt, and the emulator
 * puts the schedule's input on the DLQ with Scheduler's attributes (ERROR_CODE, SCHEDULE_ARN, …).
 */
async function world(seeds: readonly SeedMessage[], scheduled: readonly { id: string; rev: number }[]) {
  const { tableName } = await freshTable();
  const { urls, arns } = await freshQueues();
  const sqs = sqsClient();
  const documents = documentClient();
  await seedMessages(documents, tableName, seeds);
  for (const copy of scheduled) {
    const name = `m-${copy.id}-${copy.rev}`;
    const schedule: StoredSchedule = {
      Name: name,
      GroupName: 'postdate',
      Arn: `arn:aws:scheduler:us-east-1:000000000000:schedule/postdate/${name}`,
      ScheduleExpression: 'at(2026-11-29T11:58:30)',
      State: 'ENABLED',
      ActionAfterCompletion: 'DELETE',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: {
        Arn: arns.send,
        RoleArn: ROLE,
        Input: encodeDispatchPayload(copy),
        RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        DeadLetterConfig: { Arn: arns.scheduleDeadLetter },
      },
      CreationDate: 0,
      LastModificationDate: 0,
      fireAtMs: NOW.getTime(),
      completedAtMs: null,
    };
    const result = await deliverScheduleInput(schedule, Date.now(), {
      sqs,
      retryBaseDelayMs: 1,
      signal: new AbortController().signal,
      failAttempt: () => true,
    });
    expect(result.outcome).toBe('dead-lettered');
  }
  await eventually(
    `${scheduled.length} visible on the schedule DLQ`,
    async () => (await visibleCount(sqs, urls.scheduleDeadLetter)) === scheduled.length,
  );
  const deps = (sendQueueUrl = urls.send) => ({
    sqs,
    scheduleDlqUrl: urls.scheduleDeadLetter,
    sendQueueUrl,
    table: { documents, tableName },
    now: () => NOW,
    waitSeconds: 0,
  });
  return { sqs, urls, deps };
}

const live = (n: number, rev = 1): SeedMessage => ({
  id: messageId(n),
  status: 'scheduled',
  rev,
  createdAt: '2026-11-29T11:00:00.000Z',
  sendAt: NOW.toISOString(),
});

describe('postdate schedule-failures show', () => {
  it("prints each failure's id, rev, Scheduler's error code, schedule name and age, and leaves them", async () => {
    const w = await world([live(1)], [{ id: messageId(1), rev: 1 }]);
    const out = memoryOutput({ json: true });

    const report = await scheduleFailuresShow(w.deps(), {}, out);

    expect(report).toMatchObject({
      count: 1,
      sample: [
        {
          id: messageId(1),
          rev: 1,
          errorCode: 'TargetDeliveryFailed',
          scheduleName: `m-${messageId(1)}-1`,
          unreadable: null,
        },
      ],
    });
    expect(report.sample[0]?.ageMs).not.toBeNull();
    // Left on the DLQ and put back (the emulator applies the release on a 0 ms timer, hence the wait).
    await eventually(
      '1 visible on the schedule DLQ',
      async () => (await visibleCount(w.sqs, w.urls.scheduleDeadLetter)) === 1,
    );
    const people = memoryOutput();
    await scheduleFailuresShow(w.deps(), {}, people);
    expect(people.text()).toMatch(/TargetDeliveryFailed\s+m-/);
    expect(people.text()).not.toContain('@');
  });
});

describe('postdate schedule-failures redrive', () => {
  it("lands exactly one copy of a live message, with the record's current rev, and empties the DLQ", async () => {
    // Rescheduled since (rev 2) and its rev-1 and rev-2 schedules both dead-lettered: one copy, rev 2.
    const w = await world(
      [live(1, 2)],
      [
        { id: messageId(1), rev: 1 },
        { id: messageId(1), rev: 2 },
      ],
    );
    const out = memoryOutput();

    const report = await scheduleFailuresRedrive(w.deps(), {}, out);

    expect(scheduleFailuresCleared(report)).toBe(true);
    expect(report.redriven).toHaveLength(1);
    expect(report.redriven[0]).toMatchObject({ id: messageId(1), rev: 2 });
    expect(await drainIds(w.sqs, w.urls.send)).toEqual([{ id: messageId(1), rev: 2 }]);
    expect(await visibleCount(w.sqs, w.urls.scheduleDeadLetter)).toBe(0);
    expect(out.text()).toContain('redrive 1 message to the send queue');
  });

  it('drops the failure of a message that is already terminal, with a line saying so', async () => {
    const w = await world(
      [{ ...live(1), status: 'cancelled' }, live(2)],
      [
        { id: messageId(1), rev: 1 },
        { id: messageId(2), rev: 1 },
      ],
    );
    const out = memoryOutput();

    const report = await scheduleFailuresRedrive(w.deps(), {}, out);

    expect(report.dropped).toEqual([{ id: messageId(1), rev: 1, status: 'cancelled' }]);
    expect(await drainIds(w.sqs, w.urls.send)).toEqual([{ id: messageId(2), rev: 1 }]);
    expect(await visibleCount(w.sqs, w.urls.scheduleDeadLetter)).toBe(0);
    expect(out.text()).toContain(`dropped ${messageId(1)} (rev 1): already cancelled, nothing to send`);
  });

  it('leaves an unreadable body on the DLQ and reports it, and a message with no record', async () => {
    const w = await world(
      [live(1)],
      [
        { id: messageId(1), rev: 1 },
        { id: messageId(9), rev: 1 },
      ],
    );
    await w.sqs.send(new SendMessageCommand({ QueueUrl: w.urls.scheduleDeadLetter, MessageBody: '{}' }));
    await eventually(
      '3 visible on the schedule DLQ',
      async () => (await visibleCount(w.sqs, w.urls.scheduleDeadLetter)) === 3,
    );
    const out = memoryOutput();

    const report = await scheduleFailuresRedrive(w.deps(), {}, out);

    expect(scheduleFailuresCleared(report)).toBe(false);
    expect(report.unreadable).toEqual([
      { sqsMessageId: expect.any(String), reason: expect.stringMatching(/version/) },
    ]);
    expect(report.noRecord).toEqual([{ id: messageId(9), rev: 1 }]);
    expect(await drainIds(w.sqs, w.urls.send)).toEqual([{ id: messageId(1), rev: 1 }]);
    await eventually(
      '2 visible on the schedule DLQ',
      async () => (await visibleCount(w.sqs, w.urls.scheduleDeadLetter)) === 2,
    );
    expect(out.warnings.join('\n')).toMatch(/unreadable body/);
  });

  it('redrives only the chosen --ids and leaves the others', async () => {
    const w = await world(
      [live(1), live(2), live(3)],
      [1, 2, 3].map((n) => ({ id: messageId(n), rev: 1 })),
    );

    const report = await scheduleFailuresRedrive(
      w.deps(),
      { ids: [messageId(2), messageId(7)] },
      memoryOutput(),
    );

    expect(report.redriven.map((copy) => copy.id)).toEqual([messageId(2)]);
    expect(report.notFound).toEqual([messageId(7)]);
    expect(scheduleFailuresCleared(report)).toBe(false);
    expect(await drainIds(w.sqs, w.urls.send)).toEqual([{ id: messageId(2), rev: 1 }]);
    expect(await drainIds(w.sqs, w.urls.scheduleDeadLetter)).toEqual([
      { id: messageId(1), rev: 1 },
      { id: messageId(3), rev: 1 },
    ]);
  });

  it('changes nothing in a dry run and says what it would do', async () => {
    const w = await world(
      [live(1), { ...live(2), status: 'sent' }],
      [1, 2].map((n) => ({ id: messageId(n), rev: 1 })),
    );
    const out = memoryOutput();

    const report = await scheduleFailuresRedrive(w.deps(), { dryRun: true }, out);

    expect(report).toMatchObject({
      dryRun: true,
      redriven: [{ id: messageId(1), rev: 1 }],
      dropped: [{ id: messageId(2) }],
    });
    expect(await visibleCount(w.sqs, w.urls.send)).toBe(0);
    await eventually(
      '2 visible on the schedule DLQ',
      async () => (await visibleCount(w.sqs, w.urls.scheduleDeadLetter)) === 2,
    );
    expect(out.text()).toContain('would redrive 1 message to');
    expect(out.text()).toContain('would drop');
  });

  it('leaves the DLQ message when the send to the send queue fails', async () => {
    const w = await world([live(1)], [{ id: messageId(1), rev: 1 }]);

    const report = await scheduleFailuresRedrive(w.deps(`${w.urls.send}-gone`), {}, memoryOutput());

    expect(report.failed).toEqual([{ id: messageId(1), rev: 1 }]);
    expect(report.redriven).toEqual([]);
    expect(scheduleFailuresCleared(report)).toBe(false);
    await eventually(
      '1 visible on the schedule DLQ',
      async () => (await visibleCount(w.sqs, w.urls.scheduleDeadLetter)) === 1,
    );
  });

  it('refuses a malformed id before touching a queue', async () => {
    const deps = {
      sqs: sqsClient(),
      scheduleDlqUrl: 'unused',
      sendQueueUrl: 'unused',
      table: { documents: documentClient(), tableName: 'unused' },
      now: () => NOW,
    };
    await expect(scheduleFailuresRedrive(deps, { ids: ['not an id!'] }, memoryOutput())).rejects.toThrow(
      /not a message id/,
    );
  });
});
