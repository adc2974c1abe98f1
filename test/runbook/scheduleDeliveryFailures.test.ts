/**
 * docs/runbook.md procedure 4a (`ScheduleDeliveryFailures`), walked as the on-call operator walks
 * it, on the local stack with the real entry point (cli/postdate.mjs) and the SMTP sink as the relay.
 *
 * How a schedule gets there, for real: the relay creates a one-time schedule for each message
 * (`POSTDATE_DIRECT_DELAY_MAX_SECONDS=0`, lead 0, no immediate copy from the api, so a message due in
 * 20 s takes the Scheduler path), and the Scheduler emulator's delivery to the send queue fails (its
 * `failAttempt` hook: "the target refused the invocation", what a role without `sqs:SendMessage`
 * gets from SQS; no emulator enforces IAM, local/EMULATORS.md); with its retries spent it puts the
 * schedule's input on the schedule DLQ with ERROR_CODE and SCHEDULE_ARN. Compressed in one place
 * only: each schedule's RetryPolicy set to no retries (UpdateSchedule) instead of the relay's 185
 * attempts within an hour (lambdas/adapters/EventBridgeScheduler.ts).
 *
 * Two messages: one stays live, the other is cancelled while its schedule is on the DLQ. Steps 1, 3
 * and 4 and Verify as written; step 2 (`aws iam`) is AWS's: locally no role exists. Verify: each
 * message at the relay as often as the runbook says (the live one once, the cancelled one never).
 */
import {
  GetScheduleCommand,
  ListSchedulesCommand,
  SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';
import { awsCli, enqueue, localClientOptions, operatorCli, shownMessage } from './operatorShell.js';

describe('runbook procedure 4a: schedules not delivered', () => {
  let broken = true;
  let stack: LocalStack;
  let scheduler: SchedulerClient;

  beforeAll(async () => {
    const config = loadConfig(
      {
        POSTDATE_API_KEY: 'pd_runbook-schedule-dlq-01',
        POSTDATE_DIRECT_DELAY_MAX_SECONDS: '0',
        POSTDATE_SCHEDULE_LEAD_SECONDS: '0',
        POSTDATE_API_IMMEDIATE_COPY: 'false',
      },
      'local',
    );
    stack = await startLocalStack({
      config,
      ports: ANY_FREE_PORTS,
      quiet: true,
      schedulerFaults: { failAttempt: () => broken },
    });
    scheduler = new SchedulerClient(localClientOptions(stack.schedulerEndpoint));
  }, 90_000);

  afterAll(async () => {
    scheduler?.destroy();
    await stack?.stop();
  });

  it('walks steps 1, 3, 4 and Verify: the live message sent once, the cancelled one dropped', async () => {
    const postdate = operatorCli(stack, { bin: true });
    const group = stack.functionEnvironment.POSTDATE_SCHEDULE_GROUP as string;
    const sendAt = new Date(Date.now() + 10_000).toISOString();
    const live = await enqueue(stack, 'runbook-schedule-live', { subject: 'Live', send_at: sendAt });
    const cancelled = await enqueue(stack, 'runbook-schedule-cancel', { subject: 'Cancel', send_at: sendAt });

    // Each message's schedule, made by the relay; its retries compressed to none.
    const schedules = await eventually(
      'both schedules created',
      async () => {
        const { Schedules = [] } = await scheduler.send(new ListSchedulesCommand({ GroupName: group }));
        return Schedules.length === 2 ? Schedules : undefined;
      },
      { withinMs: 15_000 },
    );
    const targets = new Set<string>();
    for (const { Name } of schedules) {
      const schedule = await scheduler.send(new GetScheduleCommand({ GroupName: group, Name }));
      const { Target, ScheduleExpression, FlexibleTimeWindow } = schedule;
      if (!Target || !ScheduleExpression || !FlexibleTimeWindow)
        throw new Error(`schedule ${Name} incomplete`);
      targets.add(Target.Arn as string);
      await scheduler.send(
        new UpdateScheduleCommand({
          ...schedule,
          Name,
          GroupName: group,
          ScheduleExpression,
          FlexibleTimeWindow,
          Target: { ...Target, RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 } },
        }),
      );
    }

    // Scheduler could not deliver either: both on the schedule DLQ, nothing sent.
    const countOf = (stdout: string) => Number(/messages:\s+(\d+)/.exec(stdout)?.[1]);
    await eventually(
      'both schedules on the schedule DLQ',
      async () =>
        countOf((await postdate('schedule-failures', 'show', '--sample', '0')).stdout) === 2 || undefined,
      { withinMs: 45_000, everyMs: 1000 },
    );
    expect((await shownMessage(postdate, live)).status).toBe('scheduled');
    // The cause removed; meanwhile the tenant cancels the second message.
    broken = false;
    const cancel = await postdate('messages', 'cancel', cancelled);
    expect(cancel.code, cancel.stdout).toBe(0);

    // Step 1: what is there and why.
    const shown = await postdate('schedule-failures', 'show', '--sample', '20');
    expect(shown.code, shown.stdout).toBe(0);
    expect(countOf(shown.stdout), shown.stdout).toBe(2);
    for (const { Name } of schedules) expect(shown.stdout).toContain(Name);
    for (const id of [live, cancelled])
      expect(shown.stdout).toMatch(new RegExp(`${id}\\s+1\\s+TargetDeliveryFailed`));
    expect(shown.stdout, 'no addresses').not.toContain('example.com');

    // Step 2 (`aws iam`) is AWS's. Step 3: the send queue answers with the ARN the schedules target.
    const attributes = await awsCli(
      stack,
      'sqs',
      'get-queue-attributes',
      '--queue-url',
      stack.queueUrls.send,
      '--attribute-names',
      'QueueArn',
    );
    const queueArn = (JSON.parse(attributes) as { Attributes: { QueueArn: string } }).Attributes.QueueArn;
    expect(queueArn).toBe(stack.functionEnvironment.POSTDATE_SEND_QUEUE_ARN);
    expect([...targets]).toEqual([queueArn]);

    // Step 4: rehearse (nothing moves), then redrive.
    const rehearsal = await postdate('schedule-failures', 'redrive', '--dry-run');
    expect(rehearsal.code, rehearsal.stdout).toBe(0);
    expect(rehearsal.stdout).toContain(
      'would redrive 1 message to the send queue, would drop 1 already finished (scanned 2)',
    );
    expect(rehearsal.stdout).toContain(`would drop ${cancelled} (rev 1): already cancelled, nothing to send`);
    expect(rehearsal.stdout).toContain(live);
    expect(countOf((await postdate('schedule-failures', 'show')).stdout)).toBe(2);
    expect((await shownMessage(postdate, live)).status).toBe('scheduled');
    const redrive = await postdate('schedule-failures', 'redrive');
    expect(redrive.code, redrive.stdout).toBe(0);
    expect(redrive.stdout).toContain(
      'redrive 1 message to the send queue, drop 1 already finished (scanned 2)',
    );
    expect(redrive.stdout).toContain(`dropped ${cancelled} (rev 1): already cancelled, nothing to send`);

    // Verify.
    expect(countOf((await postdate('schedule-failures', 'show')).stdout)).toBe(0);
    await eventually(
      'the redriven message sent',
      async () => (await shownMessage(postdate, live)).status === 'sent',
      {
        withinMs: 60_000,
      },
    );
    await stack.idle();
    const atRelay = (id: string) =>
      stack.smtpSink?.messages().filter((mail) => mail.postdateId === id).length;
    expect(atRelay(live), 'the live message at the relay').toBe(1);
    expect(atRelay(cancelled), 'the cancelled message at the relay').toBe(0);
    expect((await shownMessage(postdate, cancelled)).status).toBe('cancelled');
  }, 150_000);
});
