import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConflictException,
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  CreateScheduleGroupCommand,
  DeleteScheduleCommand,
  GetScheduleCommand,
  GetScheduleGroupCommand,
  ListSchedulesCommand,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
  ValidationException,
} from '@aws-sdk/client-scheduler';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../local/freePort.js';
import {
  type FireEvent,
  type SchedulerEmulator,
  type SchedulerEmulatorOptions,
  startSchedulerEmulator,
} from '../../local/scheduler/startSchedulerEmulator.js';
import { freshQueues, LOCAL_AWS, sqsClient, uniqueName } from '../support/awsLocal.js';

const ROLE = 'arn:aws:iam::123456789012:role/scheduler';

/** An at() expression for the whole second that starts between `leadMs` and `leadMs` + 1 s from now. */
function atSoon(leadMs = 1000): { expression: string; atMs: number } {
  const atMs = Math.ceil((Date.now() + leadMs) / 1000) * 1000;
  return { expression: `at(${new Date(atMs).toISOString().slice(0, 19)})`, atMs };
}

/** Collects onFire events and lets a test wait for the one of a schedule. */
function fireLog() {
  const events: FireEvent[] = [];
  const waiters: Array<() => void> = [];
  return {
    events,
    onFire(event: FireEvent) {
      events.push(event);
      for (const wake of waiters.splice(0)) wake();
    },
    /** The first `count` events of `name`; rejects, naming what did fire, after `timeoutMs`. */
    async next(name: string, count = 1, timeoutMs = 10_000): Promise<FireEvent[]> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const mine = events.filter((event) => event.name === name);
        if (mine.length >= count) return mine;
        const left = deadline - Date.now();
        if (left <= 0) {
          const seen = JSON.stringify(events.map((event) => [event.name, event.outcome]));
          throw new Error(
            `${name} fired ${mine.length} of ${count} times in ${timeoutMs} ms; fired: ${seen}`,
          );
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
  };
}

/** When a plain setTimeout armed now for the instant `atMs` (epoch ms) ran, by Date.now(). */
function referenceTimer(atMs: number): Promise<number> {
  return new Promise((resolve) => setTimeout(() => resolve(Date.now()), Math.max(0, atMs - Date.now())));
}

async function receiveBodies(queueUrl: string, expected: number): Promise<string[]> {
  const bodies: string[] = [];
  for (let round = 0; round < 10 && bodies.length < expected; round += 1) {
    const { Messages } = await sqsClient().send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    bodies.push(...(Messages ?? []).map((message) => message.Body ?? ''));
  }
  return bodies;
}

const started: SchedulerEmulator[] = [];
async function start(options: Partial<SchedulerEmulatorOptions> = {}) {
  const emulator = await startSchedulerEmulator({
    port: await freePort(),
    sqsEndpoint: inject('sqsEndpoint'),
    retryBaseDelayMs: 10,
    ...options,
  });
  started.push(emulator);
  const client = new SchedulerClient({ ...LOCAL_AWS, endpoint: emulator.endpoint });
  return { emulator, client };
}

afterAll(async () => {
  await Promise.all(started.splice(0).map((emulator) => emulator.stop()));
});

describe('the Scheduler emulator API, through @aws-sdk/client-scheduler', () => {
  let client: SchedulerClient;
  let queueArn: string;
  let dlqArn: string;
  const base = (): Omit<CreateScheduleCommandInput, 'Name'> => ({
    ScheduleExpression: 'at(2099-01-01T00:00:00)',
    FlexibleTimeWindow: { Mode: 'OFF' },
    Target: { Arn: queueArn, RoleArn: ROLE, Input: '{"v":1}' },
  });

  beforeAll(async () => {
    const { arns } = await freshQueues();
    queueArn = arns.send;
    dlqArn = arns.scheduleDeadLetter;
    // one emulator for the API tests of this block
    const { client: apiClient } = await start();
    client = apiClient;
  });

  it('creates, reads, updates and deletes a schedule with every field the relay sets', async () => {
    const name = uniqueName('rt');
    const { ScheduleArn } = await client.send(
      new CreateScheduleCommand({
        ...base(),
        Name: name,
        ScheduleExpressionTimezone: 'Europe/Berlin',
        ActionAfterCompletion: 'DELETE',
        State: 'ENABLED',
        Description: 'round trip',
        Target: {
          Arn: queueArn,
          RoleArn: ROLE,
          Input: '{"v":1,"id":"a","rev":1}',
          RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 600 },
          DeadLetterConfig: { Arn: dlqArn },
        },
      }),
    );
    expect(ScheduleArn).toBe(`arn:aws:scheduler:us-east-1:123456789012:schedule/default/${name}`);

    const got = await client.send(new GetScheduleCommand({ Name: name }));
    expect(got).toMatchObject({
      Arn: ScheduleArn,
      Name: name,
      GroupName: 'default',
      ScheduleExpression: 'at(2099-01-01T00:00:00)',
      ScheduleExpressionTimezone: 'Europe/Berlin',
      State: 'ENABLED',
      ActionAfterCompletion: 'DELETE',
      Description: 'round trip',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: {
        Arn: queueArn,
        RoleArn: ROLE,
        Input: '{"v":1,"id":"a","rev":1}',
        RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 600 },
        DeadLetterConfig: { Arn: dlqArn },
      },
    });
    expect(got.CreationDate).toBeInstanceOf(Date);
    expect(Math.abs((got.CreationDate?.getTime() ?? 0) - Date.now())).toBeLessThan(60_000);

    await client.send(
      new UpdateScheduleCommand({
        ...base(),
        Name: name,
        State: 'DISABLED',
        FlexibleTimeWindow: { Mode: 'FLEXIBLE', MaximumWindowInMinutes: 5 },
      }),
    );
    const updated = await client.send(new GetScheduleCommand({ Name: name, GroupName: 'default' }));
    expect(updated).toMatchObject({ State: 'DISABLED', ActionAfterCompletion: 'NONE' });
    expect(updated.FlexibleTimeWindow).toEqual({ Mode: 'FLEXIBLE', MaximumWindowInMinutes: 5 });
    expect(updated.CreationDate).toEqual(got.CreationDate);

    await client.send(new DeleteScheduleCommand({ Name: name }));
    await expect(client.send(new GetScheduleCommand({ Name: name }))).rejects.toThrow(
      ResourceNotFoundException,
    );
  });

  it('answers ConflictException, ResourceNotFoundException and ValidationException like the service', async () => {
    const name = uniqueName('err');
    await client.send(new CreateScheduleCommand({ ...base(), Name: name }));
    const conflict = await client.send(new CreateScheduleCommand({ ...base(), Name: name })).catch((e) => e);
    expect(conflict).toBeInstanceOf(ConflictException);
    expect(conflict.name).toBe('ConflictException');
    expect(conflict.$metadata.httpStatusCode).toBe(409);

    for (const call of [
      () => client.send(new GetScheduleCommand({ Name: uniqueName('missing') })),
      () => client.send(new DeleteScheduleCommand({ Name: uniqueName('missing') })),
      () => client.send(new UpdateScheduleCommand({ ...base(), Name: uniqueName('missing') })),
      () =>
        client.send(
          new CreateScheduleCommand({ ...base(), Name: uniqueName('x'), GroupName: 'no-such-group' }),
        ),
      () => client.send(new GetScheduleCommand({ Name: name, GroupName: 'no-such-group' })),
    ]) {
      const error = await call().catch((e) => e);
      expect(error.name).toBe('ResourceNotFoundException');
      expect(error.$metadata.httpStatusCode).toBe(404);
    }

    for (const input of [
      { ...base(), ScheduleExpression: 'at(2099-13-01T00:00:00)' },
      { ...base(), ScheduleExpressionTimezone: 'Nowhere/City' },
      { ...base(), FlexibleTimeWindow: { Mode: 'FLEXIBLE' as const } },
      { ...base(), Target: { Arn: 'arn:aws:lambda:us-east-1:123456789012:function:f', RoleArn: ROLE } },
      { ...base(), ScheduleExpression: 'at(2020-01-01T00:00:00)' },
    ]) {
      const error = await client
        .send(new CreateScheduleCommand({ ...input, Name: uniqueName('bad') }))
        .catch((e) => e);
      expect(error).toBeInstanceOf(ValidationException);
      expect(error.$metadata.httpStatusCode).toBe(400);
      expect(error.message.length).toBeGreaterThan(0);
    }
  });

  it('creates and reads schedule groups, and keeps schedules of different groups apart', async () => {
    const group = uniqueName('grp');
    const { ScheduleGroupArn } = await client.send(new CreateScheduleGroupCommand({ Name: group }));
    expect(ScheduleGroupArn).toBe(`arn:aws:scheduler:us-east-1:123456789012:schedule-group/${group}`);
    expect(await client.send(new GetScheduleGroupCommand({ Name: group }))).toMatchObject({
      Name: group,
      State: 'ACTIVE',
    });
    await expect(client.send(new CreateScheduleGroupCommand({ Name: group }))).rejects.toThrow(
      ConflictException,
    );
    await expect(client.send(new GetScheduleGroupCommand({ Name: uniqueName('none') }))).rejects.toThrow(
      ResourceNotFoundException,
    );

    const name = uniqueName('same');
    await client.send(new CreateScheduleCommand({ ...base(), Name: name, GroupName: group }));
    await client.send(new CreateScheduleCommand({ ...base(), Name: name }));
    expect((await client.send(new GetScheduleCommand({ Name: name, GroupName: group }))).GroupName).toBe(
      group,
    );
    await client.send(new DeleteScheduleCommand({ Name: name, GroupName: group }));
    expect((await client.send(new GetScheduleCommand({ Name: name }))).GroupName).toBe('default');
  });

  it('lists schedules by group, name prefix and state, in pages joined by NextToken', async () => {
    const group = uniqueName('list');
    await client.send(new CreateScheduleGroupCommand({ Name: group }));
    const names = ['p-1', 'p-2', 'p-3', 'p-4', 'p-5', 'q-1'];
    for (const name of names) {
      await client.send(
        new CreateScheduleCommand({
          ...base(),
          Name: name,
          GroupName: group,
          State: name === 'p-5' ? 'DISABLED' : 'ENABLED',
        }),
      );
    }
    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListSchedulesCommand({ GroupName: group, NamePrefix: 'p-', MaxResults: 2, NextToken: token }),
      );
      pages.push((page.Schedules ?? []).map((s) => s.Name ?? ''));
      token = page.NextToken;
    } while (token);
    expect(pages).toEqual([['p-1', 'p-2'], ['p-3', 'p-4'], ['p-5']]);

    const enabled = await client.send(new ListSchedulesCommand({ GroupName: group, State: 'DISABLED' }));
    expect(enabled.Schedules?.map((s) => s.Name)).toEqual(['p-5']);
    expect(enabled.Schedules?.[0]).toMatchObject({
      GroupName: group,
      State: 'DISABLED',
      Target: { Arn: queueArn },
    });
    expect(enabled.NextToken).toBeUndefined();
  });
});

/** A target queue and a dead-letter queue of the test's own. */
async function queues() {
  const { urls, arns } = await freshQueues();
  return {
    queueUrl: urls.send,
    queueArn: arns.send,
    dlqUrl: urls.scheduleDeadLetter,
    dlqArn: arns.scheduleDeadLetter,
  };
}

// Each test waits 1-4 s for its at() time, so they run side by side, each with its own emulator and queues.
describe.concurrent('the Scheduler emulator firing one-time schedules', () => {
  it('delivers the Input to the SQS target never early and within 100 ms of a plain timer for the at() time, then deletes the schedule', async () => {
    const { queueUrl, queueArn } = await queues();
    const log = fireLog();
    const { client } = await start({ onFire: log.onFire });
    const name = uniqueName('fire');
    // 2-3 s ahead: the emulator must have armed its timer before the instant, however slow the create.
    const { expression, atMs } = atSoon(2000);
    // The emulator's timer runs on this process's event loop, beside the other tests of this block:
    // a reference timer for the same instant lags with it, so the lag cancels out; a polling
    // emulator would still come in late.
    const reference = referenceTimer(atMs);
    await client.send(
      new CreateScheduleCommand({
        Name: name,
        ScheduleExpression: expression,
        ScheduleExpressionTimezone: 'UTC',
        FlexibleTimeWindow: { Mode: 'OFF' },
        ActionAfterCompletion: 'DELETE',
        Target: { Arn: queueArn, RoleArn: ROLE, Input: `{"v":1,"id":"${name}","rev":1}` },
      }),
    );
    const [event] = await log.next(name);
    expect(event?.outcome).toBe('delivered');
    expect(event?.scheduledAtMs).toBe(atMs);
    const firedAtMs = event?.firedAtMs ?? 0;
    expect(firedAtMs).toBeGreaterThanOrEqual(atMs);
    expect(firedAtMs - (await reference)).toBeLessThanOrEqual(100);
    expect(await receiveBodies(queueUrl, 1)).toEqual([`{"v":1,"id":"${name}","rev":1}`]);
    await expect(client.send(new GetScheduleCommand({ Name: name }))).rejects.toThrow(
      ResourceNotFoundException,
    );
  });

  it('keeps a completed schedule with ActionAfterCompletion NONE, still ENABLED, and never fires a DISABLED one', async () => {
    const { queueUrl, queueArn } = await queues();
    const log = fireLog();
    const { client, emulator } = await start({ onFire: log.onFire });
    const kept = uniqueName('kept');
    const disabled = uniqueName('off');
    const { expression } = atSoon();
    const input = (name: string): CreateScheduleCommandInput => ({
      Name: name,
      ScheduleExpression: expression,
      FlexibleTimeWindow: { Mode: 'FLEXIBLE', MaximumWindowInMinutes: 15 },
      ActionAfterCompletion: 'NONE',
      Target: { Arn: queueArn, RoleArn: ROLE, Input: name },
    });
    await client.send(new CreateScheduleCommand({ ...input(disabled), State: 'DISABLED' }));
    await client.send(new CreateScheduleCommand(input(kept)));
    await log.next(kept);
    expect((await client.send(new GetScheduleCommand({ Name: kept }))).State).toBe('ENABLED');
    expect(emulator.schedules().find((s) => s.name === kept)?.completedAt).toBeInstanceOf(Date);
    expect(await receiveBodies(queueUrl, 1)).toEqual([kept]);
    expect(log.events.map((event) => event.name)).toEqual([kept]);
  });

  it('retries a failing delivery per RetryPolicy, then sends the Input to the DeadLetterConfig queue', async () => {
    const { queueArn, dlqUrl, dlqArn } = await queues();
    const log = fireLog();
    const { client } = await start({
      onFire: log.onFire,
      faults: { failAttempt: (name) => name.startsWith('dl-') },
    });
    const name = uniqueName('dl');
    await client.send(
      new CreateScheduleCommand({
        Name: name,
        ScheduleExpression: atSoon().expression,
        FlexibleTimeWindow: { Mode: 'OFF' },
        ActionAfterCompletion: 'DELETE',
        Target: {
          Arn: queueArn,
          RoleArn: ROLE,
          Input: 'payload',
          RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 },
          DeadLetterConfig: { Arn: dlqArn },
        },
      }),
    );
    const [event] = await log.next(name);
    expect(event).toMatchObject({ outcome: 'dead-lettered', attempts: 3 });
    const { Messages } = await sqsClient().send(
      new ReceiveMessageCommand({ QueueUrl: dlqUrl, MessageAttributeNames: ['All'], WaitTimeSeconds: 1 }),
    );
    expect(Messages?.map((m) => m.Body)).toEqual(['payload']);
    expect(Messages?.[0]?.MessageAttributes?.RETRY_ATTEMPTS?.StringValue).toBe('2');
    expect(Messages?.[0]?.MessageAttributes?.TARGET_ARN?.StringValue).toBe(queueArn);
    expect(Messages?.[0]?.MessageAttributes?.ERROR_MESSAGE?.StringValue).toContain('fault injected');
  });

  it('dead-letters a schedule whose target queue does not exist', async () => {
    const { dlqUrl, dlqArn } = await queues();
    const log = fireLog();
    const { client } = await start({ onFire: log.onFire });
    const name = uniqueName('gone');
    await client.send(
      new CreateScheduleCommand({
        Name: name,
        ScheduleExpression: atSoon().expression,
        FlexibleTimeWindow: { Mode: 'OFF' },
        Target: {
          Arn: 'arn:aws:sqs:us-east-1:123456789012:no-such-queue',
          RoleArn: ROLE,
          Input: 'lost?',
          RetryPolicy: { MaximumRetryAttempts: 1 },
          DeadLetterConfig: { Arn: dlqArn },
        },
      }),
    );
    expect((await log.next(name))[0]).toMatchObject({ outcome: 'dead-lettered', attempts: 2 });
    expect(await receiveBodies(dlqUrl, 1)).toEqual(['lost?']);
  });

  it('can be told to fire a schedule twice and late (fault hooks for the chaos suite)', async () => {
    const { queueUrl, queueArn } = await queues();
    const log = fireLog();
    const { client } = await start({
      onFire: log.onFire,
      faults: {
        fireTwice: (name) => name.startsWith('twice-'),
        delayMs: (name) => (name.startsWith('twice-') ? 300 : 0),
      },
    });
    const name = uniqueName('twice');
    const { expression, atMs } = atSoon();
    await client.send(
      new CreateScheduleCommand({
        Name: name,
        ScheduleExpression: expression,
        FlexibleTimeWindow: { Mode: 'OFF' },
        Target: { Arn: queueArn, RoleArn: ROLE, Input: name },
      }),
    );
    const events = await log.next(name, 2);
    expect(events.map((event) => event.copy)).toEqual([1, 2]);
    expect(events[0]?.firedAtMs).toBeGreaterThanOrEqual(atMs + 300);
    expect(await receiveBodies(queueUrl, 2)).toEqual([name, name]);
  });

  it('keeps schedules in dataDir across a restart and fires at start-up the ones that fell due while it was down', async () => {
    const { queueUrl, queueArn } = await queues();
    const dataDir = mkdtempSync(join(tmpdir(), 'scheduler-'));
    try {
      const firstLog = fireLog();
      const first = await start({ dataDir, onFire: firstLog.onFire });
      const due = uniqueName('due');
      const later = uniqueName('later');
      const create = (name: string, at: string) =>
        first.client.send(
          new CreateScheduleCommand({
            Name: name,
            ScheduleExpression: at,
            FlexibleTimeWindow: { Mode: 'OFF' },
            ActionAfterCompletion: 'DELETE',
            Target: { Arn: queueArn, RoleArn: ROLE, Input: name },
          }),
        );
      await create(later, 'at(2099-01-01T00:00:00)');
      // 3-4 s ahead: the first emulator must be stopped before it fires (and deletes) `due` itself.
      const { expression, atMs } = atSoon(3000);
      await create(due, expression);
      await first.emulator.stop();
      expect(firstLog.events).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, atMs - Date.now() + 50)));

      const log = fireLog();
      const second = await start({ dataDir, onFire: log.onFire });
      const [event] = await log.next(due);
      expect(event?.outcome).toBe('delivered');
      expect(event?.firedAtMs).toBeGreaterThan(atMs);
      expect(await receiveBodies(queueUrl, 1)).toEqual([due]);
      expect(second.emulator.schedules().map((s) => s.name)).toEqual([later]);
      expect((await second.client.send(new GetScheduleCommand({ Name: later }))).ScheduleExpression).toBe(
        'at(2099-01-01T00:00:00)',
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
