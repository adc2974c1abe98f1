/**
 * The Scheduler emulator's throttling fault (local/scheduler/throttleFault.ts, its control route in
 * schedulerHttpServer.ts), through @aws-sdk/client-scheduler with the functions' own client limits:
 * what the service answers past a request-rate quota, classified by the SDK as a throttle, retried
 * as on AWS, and changing nothing.
 */
import {
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  DeleteScheduleCommand,
  GetScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
  ThrottlingException,
} from '@aws-sdk/client-scheduler';
import { isThrottlingError } from '@smithy/core/retry';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AWS_CLIENT_LIMITS } from '../../lambdas/core/awsClientLimits.js';
import { freePort } from '../../local/freePort.js';
import { THROTTLE_FAULT_PATH } from '../../local/scheduler/schedulerHttpServer.js';
import {
  type SchedulerEmulator,
  startSchedulerEmulator,
} from '../../local/scheduler/startSchedulerEmulator.js';
import { THROTTLING_MESSAGE, type ThrottleView } from '../../local/scheduler/throttleFault.js';
import { freshQueues, LOCAL_AWS, uniqueName } from '../support/awsLocal.js';

const ROLE = 'arn:aws:iam::123456789012:role/scheduler';

describe('the Scheduler emulator throttling a request-rate quota', () => {
  let emulator: SchedulerEmulator;
  let client: SchedulerClient;
  let queueArn: string;
  const schedule = (): CreateScheduleCommandInput => ({
    Name: uniqueName('thr'),
    ScheduleExpression: 'at(2099-01-01T00:00:00)',
    FlexibleTimeWindow: { Mode: 'OFF' },
    Target: { Arn: queueArn, RoleArn: ROLE, Input: '{"v":1}' },
  });

  /** The control route, as an operator's `curl -X PUT|DELETE|GET …/local-faults/throttle`. */
  const fault = async (method: 'PUT' | 'DELETE' | 'GET', body?: unknown) => {
    const response = await fetch(`${emulator.endpoint}${THROTTLE_FAULT_PATH}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as ThrottleView & { Message?: string } };
  };

  beforeAll(async () => {
    ({
      arns: { send: queueArn },
    } = await freshQueues());
    emulator = await startSchedulerEmulator({ port: await freePort(), sqsEndpoint: inject('sqsEndpoint') });
    // The functions' attempts per call (lambdas/adapters/awsClients.ts), the SDK's standard retries.
    client = new SchedulerClient({
      ...LOCAL_AWS,
      endpoint: emulator.endpoint,
      maxAttempts: AWS_CLIENT_LIMITS.maxAttempts,
    });
  });

  afterAll(async () => {
    client?.destroy();
    await emulator?.stop();
  });

  it('answers 429 ThrottlingException, which the SDK retries as a throttle and then throws, having created nothing', async () => {
    expect((await fault('PUT', { operations: ['CreateSchedule'] })).body).toMatchObject({
      operations: ['CreateSchedule'],
      remaining: null,
    });
    const input = schedule();
    const error = await client.send(new CreateScheduleCommand(input)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThrottlingException);
    const throttled = error as ThrottlingException;
    expect(throttled.$metadata.httpStatusCode).toBe(429);
    expect(throttled.message).toBe(THROTTLING_MESSAGE);
    expect(
      isThrottlingError({ ...throttled, name: throttled.name, message: throttled.message, cause: undefined }),
    ).toBe(true);
    expect(throttled.$metadata.attempts).toBe(AWS_CLIENT_LIMITS.maxAttempts);
    expect(throttled.$metadata.totalRetryDelay).toBeGreaterThan(0);
    // Another operation is not refused: nothing was created.
    const missing = await client.send(new GetScheduleCommand({ Name: input.Name })).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ResourceNotFoundException);

    const off = await fault('DELETE');
    expect(off.body.operations).toEqual([]);
    await client.send(new CreateScheduleCommand(input));
    expect((await client.send(new GetScheduleCommand({ Name: input.Name }))).Name).toBe(input.Name);
  });

  it('throttles only the operations named, and with a count switches itself off after that many refusals', async () => {
    const kept = schedule();
    await client.send(new CreateScheduleCommand(kept));
    const before = (await fault('GET')).body.throttled;

    // Fewer refusals than the SDK's attempts: its retries absorb them.
    await fault('PUT', { operations: ['CreateSchedule', 'DeleteSchedule'], count: 2 });
    const created = await client.send(new CreateScheduleCommand(schedule()));
    expect(created.$metadata.attempts).toBe(3);
    expect((await fault('GET')).body).toEqual({ operations: [], remaining: null, throttled: before + 2 });

    // DeleteSchedule refused until switched off: the schedule stays.
    await fault('PUT', { operations: ['DeleteSchedule'] });
    const refused = await client
      .send(new DeleteScheduleCommand({ Name: kept.Name }))
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ThrottlingException);
    expect((await client.send(new GetScheduleCommand({ Name: kept.Name }))).Name).toBe(kept.Name);
    await fault('DELETE');
    await client.send(new DeleteScheduleCommand({ Name: kept.Name }));
  });

  it('refuses a setting it cannot read with 400 naming the field, and keeps the fault as it was', async () => {
    await fault('PUT', { operations: ['CreateSchedule'] });
    for (const [body, field] of [
      [{ operations: ['PutEvents'] }, 'operations'],
      [{ operations: [] }, 'operations'],
      [{ count: 0 }, 'count'],
      [{ count: 1.5 }, 'count'],
    ] as const) {
      const answer = await fault('PUT', body);
      expect(answer.status).toBe(400);
      expect(answer.body.Message).toContain(field);
    }
    expect((await fault('GET')).body).toMatchObject({ operations: ['CreateSchedule'], remaining: null });
    await fault('DELETE');
  });
});
