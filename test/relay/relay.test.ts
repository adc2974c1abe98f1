import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBridgeScheduler } from '../../lambdas/adapters/EventBridgeScheduler.js';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { encodeDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { RELAY_METRIC } from '../../lambdas/core/metricNames.js';
import { createRelayHandler } from '../../lambdas/relay/createRelayHandler.js';
import { API_COPY_BACKUP_DELAY_SECONDS } from '../../lambdas/relay/relayRecords.js';
import type { SchedulerEmulator } from '../../local/scheduler/startSchedulerEmulator.js';
import { freshTable, sqsClient } from '../support/awsLocal.js';
import { OutboxWriter, stateRecord } from './records.js';
import { relayWorld, SCHEDULER_ROLE_ARN, seconds, startScheduler, wholeSecondNow } from './relayParts.js';
import { StreamTail } from './streamTail.js';

let scheduler: SchedulerEmulator;
beforeAll(async () => {
  scheduler = await startScheduler();
});
afterAll(async () => {
  await scheduler.stop();
});

/** A table, its stream, the relay's parts and the relay handler, all fresh, with the clock fixed at `now`. */
async function setUp(now = wholeSecondNow()) {
  const { tableName, streamArn } = await freshTable();
  const world = await relayWorld(scheduler, now);
  return {
    ...world,
    now,
    outbox: new OutboxWriter(tableName),
    stream: new StreamTail(streamArn),
    relay: createRelayHandler(world.deps),
  };
}

const HOUR = 3600;
const DAY = 24 * HOUR;

describe('the relay routes each new message by its send time', () => {
  it('sends an immediate message to the queue with no delay', async () => {
    const t = await setUp();
    const message = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));

    const response = await t.relay(await t.stream.next());

    expect(response.batchItemFailures).toEqual([]);
    expect(t.queue.copies).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 0 }]);
    expect(await t.drain()).toEqual([{ v: 1, id: message.id, rev: 1 }]);
    expect(await t.scheduleNames()).toEqual([]);
  });

  it('holds back its copy of a message the api already put on the queue (api_copy): a backup, not a race for the lease', async () => {
    const t = await setUp();
    const copied = await t.outbox.put({
      ...stateRecord({ sendAt: t.now, createdAt: t.now }),
      api_copy: true,
    });
    const own = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));

    await t.relay(await t.stream.next());

    // The api's copy is sent by now; the relay's comes after it, when the first send is done and the
    // sender drops it after one read, rather than hiding it for the lease while the send runs. An
    // application's own outbox write (no api copy) goes at once, as before.
    expect(t.queue.copies).toEqual([
      { payload: { id: copied.id, rev: 1 }, delaySeconds: API_COPY_BACKUP_DELAY_SECONDS },
      { payload: { id: own.id, rev: 1 }, delaySeconds: 0 },
    ]);
  });

  it('holds back its copy of a message due soon that the api put on the queue delayed: until it is due, plus the backup delay', async () => {
    const t = await setUp();
    const copied = await t.outbox.put({
      ...stateRecord({ sendAt: seconds(t.now, 30), createdAt: t.now }),
      api_copy: true,
    });

    await t.relay(await t.stream.next());

    // The api's copy arrives at the due time; the relay's is the backup, never a race for the lease.
    const [copy] = t.queue.copies;
    expect(copy?.payload).toEqual({ id: copied.id, rev: 1 });
    expect(copy?.delaySeconds).toBeGreaterThanOrEqual(29 + API_COPY_BACKUP_DELAY_SECONDS);
    expect(copy?.delaySeconds).toBeLessThanOrEqual(30 + API_COPY_BACKUP_DELAY_SECONDS);
  });

  it('does not hold back the copy of a later revision of such a message (a manual retry: no api copy then)', async () => {
    const t = await setUp();
    const message = await t.outbox.put({
      ...stateRecord({ sendAt: t.now, createdAt: t.now }),
      api_copy: true,
    });
    await t.outbox.claim(message.id, seconds(t.now, 120));
    await t.outbox.finish(message.id, 'failed');
    await t.outbox.retry(message.id, t.now);

    await t.relay(await t.stream.next());

    expect(t.queue.copies).toEqual([
      { payload: { id: message.id, rev: 1 }, delaySeconds: API_COPY_BACKUP_DELAY_SECONDS },
      { payload: { id: message.id, rev: 2 }, delaySeconds: 0 },
    ]);
  });

  it('sends a 10-minute message to the queue with DelaySeconds 600, and schedules nothing', async () => {
    const t = await setUp();
    const message = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 600), createdAt: t.now }));

    await t.relay(await t.stream.next());

    expect(t.queue.copies).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 600 }]);
    expect(await t.queueDepth()).toEqual({ visible: 0, delayed: 1 });
    expect(await t.scheduleNames()).toEqual([]);
  });

  it('counts the delay at the moment the copy is sent, not when its record was read', async () => {
    const t0 = wholeSecondNow();
    let clock = t0.getTime();
    const { tableName, streamArn } = await freshTable();
    const world = await relayWorld(scheduler, t0, { now: () => new Date(clock) });
    // The batch's schedule takes 3 s to create (a slow Scheduler, a busy machine): the queue copies
    // are sent after it, and must not carry those 3 s as extra lateness.
    const slowScheduler: typeof world.schedules = Object.assign(Object.create(world.schedules), {
      createOnce: async (input: Parameters<typeof world.schedules.createOnce>[0]) => {
        const created = await world.schedules.createOnce(input);
        clock += 3_000;
        return created;
      },
    });
    const relay = createRelayHandler({ ...world.deps, scheduler: slowScheduler });
    const outbox = new OutboxWriter(tableName);
    await outbox.put(stateRecord({ sendAt: seconds(t0, 2 * DAY), createdAt: t0 }));
    const soon = await outbox.put(stateRecord({ sendAt: seconds(t0, 600), createdAt: t0 }));

    await relay(await new StreamTail(streamArn).next());

    expect(world.queue.copies).toEqual([{ payload: { id: soon.id, rev: 1 }, delaySeconds: 597 }]);
  });

  it('keeps the sub-second remainder for the sender: DelaySeconds is the floor of the remaining time', async () => {
    const t = await setUp();
    const message = await t.outbox.put(
      stateRecord({ sendAt: new Date(t.now.getTime() + 10_700), createdAt: t.now }),
    );

    await t.relay(await t.stream.next());

    expect(t.queue.copies).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 10 }]);
  });

  it('schedules a 2-day message one lead before send_at, in UTC, to the send queue, deleted after it fires', async () => {
    const t = await setUp();
    const sendAt = seconds(t.now, 2 * DAY);
    const message = await t.outbox.put(stateRecord({ sendAt, createdAt: t.now }));

    const response = await t.relay(await t.stream.next());

    expect(response.batchItemFailures).toEqual([]);
    expect(t.queue.copies).toEqual([]);
    const name = `pd-${message.id}-1`;
    expect(await t.scheduleNames()).toEqual([name]);
    const schedule = await t.schedule(name);
    expect(schedule.ScheduleExpression).toBe(`at(${seconds(sendAt, -90).toISOString().slice(0, 19)})`);
    expect(schedule.ScheduleExpressionTimezone).toBe('UTC');
    expect(schedule.FlexibleTimeWindow?.Mode).toBe('OFF');
    expect(schedule.ActionAfterCompletion).toBe('DELETE');
    expect(schedule.Target?.Arn).toBe(t.arns.send);
    expect(schedule.Target?.Input).toBe(encodeDispatchPayload({ id: message.id, rev: 1 }));
    expect(schedule.Target?.DeadLetterConfig?.Arn).toBe(t.arns.scheduleDeadLetter);
    expect(schedule.Target?.RetryPolicy).toEqual({
      MaximumRetryAttempts: 185,
      MaximumEventAgeInSeconds: 3600,
    });
  });

  it('routes a mixed batch in one pass: one SendMessageBatch call for the queue copies', async () => {
    const t = await setUp();
    const soon = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 30), createdAt: t.now }));
    const now = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));
    const later = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }));
    await t.outbox.putBody(now.id);

    const event = await t.stream.next();
    const response = await t.relay(event);

    expect(event.Records).toHaveLength(4);
    expect(response.batchItemFailures).toEqual([]);
    expect(t.queue.calls).toBe(1);
    expect(t.queue.copies.map((copy) => [copy.payload.id, copy.delaySeconds]).sort()).toEqual(
      [
        [soon.id, 30],
        [now.id, 0],
      ].sort(),
    );
    expect(await t.scheduleNames()).toEqual([`pd-${later.id}-1`]);
  });
});

describe('a replayed stream batch', () => {
  it('creates no schedule twice; its queue copies are duplicated, and the sender drops the extra one', async () => {
    const t = await setUp();
    const immediate = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));
    const later = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }));
    const event = await t.stream.next();

    const first = await t.relay(event);
    const replay = await t.relay(event);

    expect(first.batchItemFailures).toEqual([]);
    expect(replay.batchItemFailures).toEqual([]);
    // The schedule is named from id and rev: the replay's CreateSchedule is a harmless conflict.
    expect(await t.scheduleNames()).toEqual([`pd-${later.id}-1`]);
    // SQS has no such name: the queue path is at-least-once by design. Both copies carry rev 1; the
    // sender's claim (rev and status condition) lets exactly one of them send.
    expect(await t.drain()).toEqual([
      { v: 1, id: immediate.id, rev: 1 },
      { v: 1, id: immediate.id, rev: 1 },
    ]);
  });
});

describe('reschedule and cancel', () => {
  it('leave no live stale schedule, even when the whole history is replayed', async () => {
    const t = await setUp();
    const moved = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }));
    const broughtForward = await t.outbox.put(
      stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }),
    );
    const cancelled = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }));
    const inserts = await t.stream.next();
    await t.relay(inserts);
    expect(await t.scheduleNames()).toEqual(
      [`pd-${moved.id}-1`, `pd-${broughtForward.id}-1`, `pd-${cancelled.id}-1`].sort(),
    );

    await t.outbox.reschedule(moved.id, seconds(t.now, 3 * DAY));
    await t.outbox.reschedule(broughtForward.id, seconds(t.now, 300));
    await t.outbox.finish(cancelled.id, 'cancelled');
    const changes = await t.stream.next();
    const response = await t.relay(changes);

    expect(response.batchItemFailures).toEqual([]);
    expect(await t.scheduleNames()).toEqual([`pd-${moved.id}-2`]);
    expect((await t.schedule(`pd-${moved.id}-2`)).ScheduleExpression).toBe(
      `at(${seconds(t.now, 3 * DAY - 90)
        .toISOString()
        .slice(0, 19)})`,
    );
    expect(t.queue.copies).toEqual([{ payload: { id: broughtForward.id, rev: 2 }, delaySeconds: 300 }]);

    // Everything again, in stream order (a retry from the first record): same end state.
    const history: DynamoDBStreamEvent = { Records: [...inserts.Records, ...changes.Records] };
    expect((await t.relay(history)).batchItemFailures).toEqual([]);
    expect(await t.scheduleNames()).toEqual([`pd-${moved.id}-2`]);
  });

  it('dispatches the new rev of a manual retry, and ignores claims and outcomes', async () => {
    const t = await setUp();
    const message = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));
    await t.outbox.claim(message.id, seconds(t.now, 120));
    await t.outbox.finish(message.id, 'failed');
    await t.outbox.retry(message.id, seconds(t.now, 5));

    const event = await t.stream.next();
    const response = await t.relay(event);

    expect(event.Records.map((record) => record.eventName)).toEqual(['INSERT', 'MODIFY', 'MODIFY', 'MODIFY']);
    expect(response.batchItemFailures).toEqual([]);
    expect(t.queue.copies.map((copy) => copy.payload)).toEqual([
      { id: message.id, rev: 1 },
      { id: message.id, rev: 2 },
    ]);
  });
});

describe('an unreadable state record', () => {
  it('is skipped and logged as an error, not failed: no retry could fix it, and it would hold up the shard', async () => {
    const t = await setUp();
    const logged: { message: string; attributes: Record<string, unknown> }[] = [];
    const log = {
      info: () => {},
      warn: () => {},
      error: (message: string, attributes: Record<string, unknown>) => logged.push({ message, attributes }),
    };
    const relay = createRelayHandler({ ...t.deps, log });
    const good = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));
    const bad = stateRecord({ sendAt: t.now, createdAt: t.now });
    await t.outbox.put({ ...bad, rev: 0 });
    const event = await t.stream.next();

    const response = await relay(event);

    expect(response.batchItemFailures).toEqual([]);
    expect(t.queue.copies.map((copy) => copy.payload.id)).toEqual([good.id]);
    expect(logged).toEqual([
      {
        message: 'relay skipped an unreadable state record',
        attributes: {
          sequenceNumber: event.Records[1]?.dynamodb?.SequenceNumber,
          messageId: bad.id,
          reason: 'new image: image has no positive integer rev',
        },
      },
    ]);
  });
});

describe('a state record whose id DESIGN does not allow', () => {
  it('is unreadable like any other: skipped, counted and logged; its neighbours are relayed and nothing fails', async () => {
    // DESIGN §2: a message id is URL-safe and at most 32 characters, and queue copies carry only
    // `{v, id, rev}`. An application writing by hand may name its own (`order:42`, or one too long).
    const t = await setUp();
    const logged: { message: string; attributes: Record<string, unknown> }[] = [];
    const counted: string[] = [];
    const relay = createRelayHandler({
      ...t.deps,
      metrics: { count: (name) => counted.push(name) },
      log: {
        info: () => {},
        warn: () => {},
        error: (message: string, attributes: Record<string, unknown>) => logged.push({ message, attributes }),
      },
    });
    const before = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));
    const named = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now, id: 'order:42' }));
    const long = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now, id: 'x'.repeat(33) }));
    const after = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));
    const event = await t.stream.next();

    const response = await relay(event);

    expect(response.batchItemFailures).toEqual([]);
    expect(t.queue.copies.map((copy) => copy.payload.id)).toEqual([before.id, after.id]);
    expect(counted).toEqual([RELAY_METRIC.unreadableRecords, RELAY_METRIC.unreadableRecords]);
    expect(logged.map((line) => [line.message, line.attributes.messageId])).toEqual([
      ['relay skipped an unreadable state record', named.id],
      ['relay skipped an unreadable state record', long.id],
    ]);
  });
});

describe('partial batch failures', () => {
  it('reports only the records whose schedule could not be made, by sequence number', async () => {
    const t = await setUp();
    // The same queue, but a schedule group that does not exist: every CreateSchedule fails.
    const relay = createRelayHandler({
      ...t.deps,
      scheduler: new EventBridgeScheduler(t.schedulerSdk, {
        groupName: 'no-such-group',
        sendQueueArn: t.arns.send,
        roleArn: SCHEDULER_ROLE_ARN,
        deadLetterArn: t.arns.scheduleDeadLetter,
      }),
    });
    const immediate = await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));
    const later = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }));
    await t.outbox.reschedule(later.id, seconds(t.now, 3 * DAY));
    const event = await t.stream.next();
    const sequence = (index: number) => event.Records[index]?.dynamodb?.SequenceNumber;

    const response = await relay(event);

    // The 2-day INSERT failed; the same message's reschedule after it is failed without being
    // tried, so a retry replays that message's records in order. The immediate one went through.
    expect(response.batchItemFailures).toEqual([
      { itemIdentifier: sequence(1) },
      { itemIdentifier: sequence(2) },
    ]);
    expect(t.queue.copies.map((copy) => copy.payload.id)).toEqual([immediate.id]);

    // The event source retries from the lowest failed record, now with a working scheduler.
    const retry: DynamoDBStreamEvent = { Records: event.Records.slice(1) };
    expect((await t.relay(retry)).batchItemFailures).toEqual([]);
    expect(await t.scheduleNames()).toEqual([`pd-${later.id}-2`]);
  });

  it('reports the records whose queue copy could not be sent, and still schedules the others', async () => {
    const t = await setUp();
    const relay = createRelayHandler({
      ...t.deps,
      queue: new SqsDispatchQueue(sqsClient(), `${t.urls.send}-does-not-exist`),
    });
    await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));
    const later = await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 2 * DAY), createdAt: t.now }));
    await t.outbox.put(stateRecord({ sendAt: seconds(t.now, 60), createdAt: t.now }));
    const event = await t.stream.next();

    const response = await relay(event);

    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual([
      event.Records[0]?.dynamodb?.SequenceNumber,
      event.Records[2]?.dynamodb?.SequenceNumber,
    ]);
    expect(await t.scheduleNames()).toEqual([`pd-${later.id}-1`]);
  });
});

describe("the relay's log", () => {
  it("writes a batch's counts at DEBUG: a routine line nobody acts on stays off CloudWatch Logs at INFO (issue 32)", async () => {
    const t = await setUp();
    const lines: { level: string; message: string }[] = [];
    const record = (level: string) => (message: string) => lines.push({ level, message });
    const log = {
      debug: record('debug'),
      info: record('info'),
      warn: record('warn'),
      error: record('error'),
    };
    const relay = createRelayHandler({ ...t.deps, log });
    await t.outbox.put(stateRecord({ sendAt: t.now, createdAt: t.now }));

    const response = await relay(await t.stream.next());

    expect(response.batchItemFailures).toEqual([]);
    expect(t.queue.copies).toHaveLength(1);
    expect(lines).toEqual([{ level: 'debug', message: 'relay batch done' }]);
  });
});
