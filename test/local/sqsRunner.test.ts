import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { FunctionSandboxes, type FunctionTimeout } from '../../local/runners/functionSandbox.js';
import { type SqsRunner, type SqsRunnerOptions, startSqsRunner } from '../../local/runners/sqsRunner.js';
import { freshQueues, queueDepth, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { type Effect, readEffects } from './fixtures/effectsFunction.js';

const sqs = sqsClient();
const runners: SqsRunner[] = [];
afterEach(async () => {
  await Promise.all(runners.splice(0).map((runner) => runner.stop()));
});
const scratch = mkdtempSync(join(tmpdir(), 'sqs-runner-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const FIXTURE = fileURLToPath(new URL('./fixtures/effectsFunction.ts', import.meta.url));

function run(options: Omit<SqsRunnerOptions, 'sqsEndpoint'>): SqsRunner {
  const runner = startSqsRunner({ sqsEndpoint: inject('sqsEndpoint'), log: () => {}, ...options });
  runners.push(runner);
  return runner;
}

async function sendBodies(queueUrl: string, bodies: string[]): Promise<void> {
  await sqs.send(
    new SendMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: bodies.map((body) => ({ Id: body, MessageBody: body })),
    }),
  );
}

/** Messages still in the queue, visible or in flight (0 once every one has been deleted). */
async function messagesLeft(queueUrl: string): Promise<number> {
  const { visible, inFlight } = await queueDepth(sqs, queueUrl);
  return visible + inFlight;
}

/** Resolves once `predicate` holds over the deliveries seen so far. */
function deliveries() {
  const seen: SQSRecord[] = [];
  let wake: (() => void) | undefined;
  return {
    seen,
    add(records: SQSRecord[]) {
      seen.push(...records);
      wake?.();
    },
    async until(predicate: (records: SQSRecord[]) => boolean): Promise<void> {
      while (!predicate(seen)) await new Promise<void>((resolve) => (wake = resolve));
    },
  };
}

const bodiesOf = (records: SQSRecord[]) => records.map((record) => record.body).sort();

describe('the local SQS runner', () => {
  it('hands the handler Lambda SQS records and deletes the messages it handled', async () => {
    const { urls, arns } = await freshQueues();
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: urls.send,
        MessageBody: '{"v":1}',
        MessageAttributes: { kind: { DataType: 'String', StringValue: 'test' } },
      }),
    );
    const events: SQSEvent[] = [];
    const runner = run({
      queueUrl: urls.send,
      queueArn: arns.send,
      handler: async (event) => {
        events.push(event);
      },
    });
    await runner.idle();
    expect(events).toHaveLength(1);
    expect(events[0]?.Records[0]).toMatchObject({
      messageId: expect.any(String),
      receiptHandle: expect.any(String),
      body: '{"v":1}',
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: expect.stringMatching(/^\d+$/),
        ApproximateFirstReceiveTimestamp: expect.stringMatching(/^\d+$/),
      },
      messageAttributes: { kind: { stringValue: 'test', dataType: 'String' } },
      md5OfBody: expect.any(String),
      eventSource: 'aws:sqs',
      eventSourceARN: arns.send,
      awsRegion: 'us-east-1',
    });
    expect(await messagesLeft(urls.send)).toBe(0);
  });

  it('deletes the successes of a partial batch failure and lets exactly the failed ones come back', async () => {
    const { urls, arns } = await freshQueues();
    await sendBodies(urls.send, ['a', 'b', 'c', 'd', 'e']);
    const log = deliveries();
    const runner = run({
      queueUrl: urls.send,
      queueArn: arns.send,
      maxConcurrency: 1,
      visibilityTimeoutSeconds: 1,
      handler: async (event): Promise<SQSBatchResponse> => {
        log.add(event.Records);
        const failing = event.Records.filter(
          (record) => ['b', 'd'].includes(record.body) && record.attributes.ApproximateReceiveCount === '1',
        );
        return { batchItemFailures: failing.map((record) => ({ itemIdentifier: record.messageId })) };
      },
    });
    await log.until(
      (seen) => seen.filter((record) => record.attributes.ApproximateReceiveCount === '2').length >= 2,
    );
    await runner.idle();
    const again = log.seen.filter((record) => record.attributes.ApproximateReceiveCount !== '1');
    expect(bodiesOf(again)).toEqual(['b', 'd']);
    expect(bodiesOf(log.seen)).toEqual(['a', 'b', 'b', 'c', 'd', 'd', 'e']);
    expect(await messagesLeft(urls.send)).toBe(0);
  });

  it('leaves the whole batch when the handler throws', async () => {
    const { urls, arns } = await freshQueues();
    await sendBodies(urls.send, ['x', 'y']);
    const log = deliveries();
    const runner = run({
      queueUrl: urls.send,
      queueArn: arns.send,
      maxConcurrency: 1,
      visibilityTimeoutSeconds: 1,
      handler: async (event) => {
        log.add(event.Records);
        if (event.Records.some((record) => record.attributes.ApproximateReceiveCount === '1')) {
          throw new Error('boom');
        }
      },
    });
    await log.until(
      (seen) => seen.filter((record) => record.attributes.ApproximateReceiveCount === '2').length >= 2,
    );
    await runner.idle();
    expect(bodiesOf(log.seen)).toEqual(['x', 'x', 'y', 'y']);
  });

  it('lets the queue redrive a message to the DLQ after maxReceiveCount failed receives', async () => {
    const { urls, arns } = await freshQueues(2);
    // The queue's own policy says how many receives (the layout derives it from maxAttempts).
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: urls.send, AttributeNames: ['RedrivePolicy'] }),
    );
    const { maxReceiveCount } = JSON.parse(Attributes?.RedrivePolicy ?? '{}') as { maxReceiveCount: number };
    await sqs.send(new SendMessageCommand({ QueueUrl: urls.send, MessageBody: 'never' }));
    const counts: string[] = [];
    run({
      queueUrl: urls.send,
      queueArn: arns.send,
      visibilityTimeoutSeconds: 0,
      handler: async (event) => {
        counts.push(...event.Records.map((record) => record.attributes.ApproximateReceiveCount));
        return { batchItemFailures: event.Records.map((record) => ({ itemIdentifier: record.messageId })) };
      },
    });
    const dead = await eventually(
      () => `the message in the DLQ (receive counts so far: ${counts.join(', ')})`,
      async () => {
        const { Messages } = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: urls.sendDeadLetter, WaitTimeSeconds: 1 }),
        );
        return Messages?.length ? Messages : undefined;
      },
      { withinMs: 30_000 },
    );
    expect(dead.map((message) => message.Body)).toEqual(['never']);
    // The queue may move it before the last invocation has started: wait for that one too. Two
    // pollers receive it in turn, and their invocations need not start in receive order: each
    // receive is counted once, 1 to maxReceiveCount, in whatever order.
    await eventually(
      () => `${maxReceiveCount} invocations (receive counts: ${counts.join(', ')})`,
      () => counts.length >= maxReceiveCount,
    );
    expect(counts.map(Number).sort((a, b) => a - b)).toEqual(
      Array.from({ length: maxReceiveCount }, (_, index) => index + 1),
    );
  });

  it('never runs more than maxConcurrency invocations at once', async () => {
    const { urls, arns } = await freshQueues();
    await sendBodies(urls.send, ['1', '2', '3', '4', '5', '6']);
    let running = 0;
    let peak = 0;
    const runner = run({
      queueUrl: urls.send,
      queueArn: arns.send,
      batchSize: 1,
      maxConcurrency: 2,
      handler: async () => {
        running += 1;
        peak = Math.max(peak, running);
        await sleep(100);
        running -= 1;
      },
    });
    await runner.idle();
    expect(peak).toBe(2);
    expect(await messagesLeft(urls.send)).toBe(0);
  });
});

/** The fixture function in worker sandboxes; its effects go to a file of its own. */
function fixtureFunction(
  timeoutMs: number,
  slow: { attempts: number; ms: number; connectPort?: number } = { attempts: 0, ms: 0 },
) {
  const effectsFile = join(scratch, `${Math.random().toString(36).slice(2)}.jsonl`);
  const sandboxes = new FunctionSandboxes({
    name: 'fixture',
    file: FIXTURE,
    timeoutMs,
    environment: {
      FIXTURE_EFFECTS_FILE: effectsFile,
      FIXTURE_SLOW_ATTEMPTS: String(slow.attempts),
      FIXTURE_SLOW_MS: String(slow.ms),
      ...(slow.connectPort !== undefined ? { FIXTURE_CONNECT_PORT: String(slow.connectPort) } : {}),
    },
  });
  return { sandboxes, effects: (): Effect[] => readEffects(effectsFile) };
}

describe('the local SQS runner with the function timeout enforced', () => {
  it('kills an invocation that outlives its timeout: its effects stand, nothing after, the batch comes back to a fresh sandbox', async () => {
    const { urls, arns } = await freshQueues();
    await sendBodies(urls.send, ['k1', 'k2']);
    // A server the slow invocation holds a connection to, as the sender holds its SMTP pool's.
    const connections: Array<{ socket: Socket; closedAt?: number }> = [];
    const server = createServer((socket) => {
      const connection: { socket: Socket; closedAt?: number } = { socket };
      connections.push(connection);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        connection.closedAt = Date.now();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const address = server.address();
    const connectPort = typeof address === 'object' && address ? address.port : 0;
    const slowMs = 1500;
    const fixture = fixtureFunction(500, { attempts: 1, ms: slowMs, connectPort });
    const kills: FunctionTimeout[] = [];
    // What the runner says (a failed delete, a handler that threw) explains a failure below.
    const said: string[] = [];
    const runner = run({
      queueUrl: urls.send,
      queueArn: arns.send,
      maxConcurrency: 1,
      visibilityTimeoutSeconds: 1,
      handler: fixture.sandboxes,
      log: (message, error) =>
        said.push(`${message} ${error instanceof Error ? error.message : JSON.stringify(error ?? '')}`),
      onFunctionTimeout: (kill) => kills.push(kill),
    });
    // Two cold sandbox starts (the killed one and its fresh successor) on a possibly loaded machine.
    await eventually(
      () =>
        `an invocation after the kill to finish (kills reported: ${kills.length}; runner said: ${said.join('; ') || 'nothing'}; effects: ${JSON.stringify(fixture.effects().map((effect) => effect.step))})`,
      () => fixture.effects().some((effect) => effect.step === 'done'),
      { withinMs: 45_000, everyMs: 50 },
    );
    await runner.idle();
    const kill = kills[0];
    if (!kill) throw new Error('no kill reported');
    // The moment the killed invocation would have written `late` has passed.
    await sleep(Math.max(0, kill.startedAt + slowMs + 100 - Date.now()));

    expect(kills).toHaveLength(1);
    expect(kill).toMatchObject({ functionName: 'fixture', records: 2 });
    expect(kill.killedAt - kill.startedAt).toBeGreaterThanOrEqual(500);
    const [killed, ...after] = fixture.effects();
    if (!killed) throw new Error('no effects');
    expect(said, 'the runner logged nothing').toEqual([]);
    expect(killed).toMatchObject({ step: 'start', attempt: 1, receiveCounts: ['1', '1'] });
    // The killed invocation wrote nothing after its kill; every later one started and finished.
    expect(after.map((effect) => effect.step)).not.toContain('late');
    const done = after.filter((effect) => effect.step === 'done');
    expect(after).toHaveLength(done.length * 2);
    // Nothing of the killed batch was deleted: each message came back and was handled once more,
    // received a second time. SQS may hand the two back in one batch or in two (CI once saw two
    // invocations after the kill: the emulator's poll can fall between visibility timers that end a
    // millisecond apart), so the number of later invocations is not fixed.
    expect(done.flatMap((effect) => effect.ids).sort()).toEqual([...killed.ids].sort());
    expect(done.flatMap((effect) => effect.receiveCounts)).toEqual(['2', '2']);
    // The next invocation started cold, in a fresh sandbox.
    expect(done[0]?.instance).not.toBe(killed.instance);
    // The context counted down from the deadline at which the kill came.
    expect(killed.remainingMs).toBeGreaterThan(0);
    expect(killed.remainingMs).toBeLessThanOrEqual(500);
    expect(await messagesLeft(urls.send)).toBe(0);
    // Its open connection died with it.
    expect(connections).toHaveLength(1);
    expect(connections[0]?.closedAt).toBeGreaterThanOrEqual(kill.startedAt + 500);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }, 60_000);

  it('runs an invocation that finishes in time as before: successes deleted, failures back, the sandbox stays warm', async () => {
    const { urls, arns } = await freshQueues();
    await sendBodies(urls.send, ['ok', 'fail']);
    const fixture = fixtureFunction(2000);
    const kills: FunctionTimeout[] = [];
    const runner = run({
      queueUrl: urls.send,
      queueArn: arns.send,
      maxConcurrency: 1,
      visibilityTimeoutSeconds: 1,
      handler: fixture.sandboxes,
      onFunctionTimeout: (kill) => kills.push(kill),
    });
    await eventually(
      'a second receive',
      () => fixture.effects().some((effect) => effect.receiveCounts.includes('2')),
      {
        withinMs: 30_000,
        everyMs: 50,
      },
    );
    await runner.idle();
    await sendBodies(urls.send, ['later']);
    await runner.idle();

    expect(kills).toEqual([]);
    const done = fixture.effects().filter((effect) => effect.step === 'done');
    // `ok` and `fail` received once (in one batch or two), `fail` again, then `later` once.
    expect(done.flatMap((effect) => effect.receiveCounts)).toEqual(['1', '1', '2', '1']);
    expect(new Set(done.map((effect) => effect.instance)).size).toBe(1);
    expect(done.every((effect) => effect.functionName === 'fixture')).toBe(true);
    expect(await messagesLeft(urls.send)).toBe(0);
  });
});
