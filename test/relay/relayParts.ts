import {
  CreateScheduleGroupCommand,
  GetScheduleCommand,
  ListSchedulesCommand,
  SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { inject } from 'vitest';
import { EventBridgeScheduler } from '../../lambdas/adapters/EventBridgeScheduler.js';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { type DispatchPayload, parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import type { DispatchQueue, QueuedCopy } from '../../lambdas/ports/DispatchQueue.js';
import { createRelayHandler } from '../../lambdas/relay/createRelayHandler.js';
import type { RelayDeps } from '../../lambdas/relay/relayRecords.js';
import { RELAY_STREAM_FILTER } from '../../lambdas/store/tableLayout.js';
import { freePort } from '../../local/freePort.js';
import { type StreamRunner, startStreamRunner } from '../../local/runners/streamRunner.js';
import {
  type SchedulerEmulator,
  startSchedulerEmulator,
} from '../../local/scheduler/startSchedulerEmulator.js';
import { freshQueues, LOCAL_AWS, queueDepth, sqsClient, uniqueName } from '../support/awsLocal.js';

export const SCHEDULER_ROLE_ARN = 'arn:aws:iam::000000000000:role/postdate-scheduler';

/** One EventBridge Scheduler emulator for a test file, delivering to the shared SQS emulator. */
export async function startScheduler(): Promise<SchedulerEmulator> {
  return startSchedulerEmulator({ port: await freePort(), sqsEndpoint: inject('sqsEndpoint') });
}

export function schedulerClient(endpoint: string): SchedulerClient {
  return new SchedulerClient({ ...LOCAL_AWS, endpoint });
}

/** The send queue wrapped so a test sees every copy the code under test enqueued (the copies still go to SQS). */
export class RecordingQueue implements DispatchQueue {
  readonly copies: QueuedCopy[] = [];
  /** How many times `enqueue` was called (one call may be several SendMessageBatch requests of ten). */
  calls = 0;
  constructor(private readonly inner: DispatchQueue) {}
  async enqueue(copies: readonly QueuedCopy[]): Promise<{ failed: readonly QueuedCopy[] }> {
    this.calls++;
    const result = await this.inner.enqueue(copies);
    this.copies.push(...copies.filter((copy) => !result.failed.includes(copy)));
    return result;
  }
}

/** Fresh queues, a fresh schedule group, and the relay's dependencies over them with a fixed clock. */
export async function relayWorld(
  scheduler: SchedulerEmulator,
  now: Date,
  overrides: Partial<RelayDeps> = {},
) {
  const { urls, arns } = await freshQueues();
  const groupName = uniqueName('pd');
  const schedulerSdk = schedulerClient(scheduler.endpoint);
  await schedulerSdk.send(new CreateScheduleGroupCommand({ Name: groupName }));
  const queue = new RecordingQueue(new SqsDispatchQueue(sqsClient(), urls.send));
  const schedules = new EventBridgeScheduler(schedulerSdk, {
    groupName,
    sendQueueArn: arns.send,
    roleArn: SCHEDULER_ROLE_ARN,
    deadLetterArn: arns.scheduleDeadLetter,
  });
  const deps: RelayDeps = {
    queue,
    scheduler: schedules,
    now: () => now,
    directDelayMaxSeconds: 900,
    scheduleLeadSeconds: 90,
    ...overrides,
  };
  return {
    urls,
    arns,
    groupName,
    queue,
    schedules,
    schedulerSdk,
    deps,
    /** Names of the schedules in this group, via the Scheduler API. */
    async scheduleNames(): Promise<string[]> {
      const { Schedules } = await schedulerSdk.send(new ListSchedulesCommand({ GroupName: groupName }));
      return (Schedules ?? []).flatMap((s) => (s.Name ? [s.Name] : [])).sort();
    },
    async schedule(name: string) {
      return schedulerSdk.send(new GetScheduleCommand({ Name: name, GroupName: groupName }));
    },
    /** Copies on the send queue: visible now, and still delayed. */
    async queueDepth(): Promise<{ visible: number; delayed: number }> {
      const { visible, delayed } = await queueDepth(sqsClient(), urls.send);
      return { visible, delayed };
    },
    /** Receives and deletes every visible copy on the send queue (what a sender or a purge would take). */
    async drain(): Promise<DispatchPayload[]> {
      return drainQueue(urls.send);
    },
  };
}

/** The relay behind the local stream event source, with the relay's own filter, polling the table's stream. */
export function relayRunner(streamArn: string, deps: RelayDeps): StreamRunner {
  return startStreamRunner({
    dynamodbEndpoint: inject('dynamodbEndpoint'),
    streamArn,
    handler: createRelayHandler(deps),
    filter: RELAY_STREAM_FILTER,
    pollIntervalMs: 50,
  });
}

/** What an operator sees of the relay: the metrics it counted and the error lines it logged. */
export function relayWatch() {
  const counted: string[] = [];
  const logged: { message: string; attributes: Record<string, unknown> }[] = [];
  const deps: Partial<RelayDeps> = {
    metrics: { count: (name) => counted.push(name) },
    log: {
      info: () => {},
      warn: () => {},
      error: (message, attributes) => logged.push({ message, attributes }),
    },
  };
  return { counted, logged, deps };
}

export async function drainQueue(queueUrl: string): Promise<DispatchPayload[]> {
  const payloads: DispatchPayload[] = [];
  for (;;) {
    const { Messages } = await sqsClient().send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    if (!Messages || Messages.length === 0) return payloads;
    for (const message of Messages) {
      const parsed = parseDispatchPayload(message.Body ?? '');
      if (!parsed.ok) throw new Error(`unexpected queue body: ${parsed.reason}`);
      payloads.push(parsed.payload);
      await sqsClient().send(
        new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }),
      );
    }
  }
}

/** A whole second of the real clock: schedules made from it lie in the emulator's future. */
export function wholeSecondNow(): Date {
  return new Date(Math.floor(Date.now() / 1000) * 1000);
}

export const seconds = (date: Date, n: number): Date => new Date(date.getTime() + n * 1000);
