import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate, setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';
import { GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, inject, it, onTestFailed } from 'vitest';
import { RELAY_STREAM_FILTER } from '../../lambdas/store/tableLayout.js';
import { FunctionSandboxes, type FunctionTimeout } from '../../local/runners/functionSandbox.js';
import {
  type PollClock,
  type StreamDiscard,
  type StreamRunner,
  type StreamRunnerOptions,
  startStreamRunner,
} from '../../local/runners/streamRunner.js';
import { documentClient, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { type Effect, readEffects } from './fixtures/effectsFunction.js';

const runners: StreamRunner[] = [];
afterEach(async () => {
  await Promise.all(runners.splice(0).map((runner) => runner.stop()));
});

function run(options: Omit<StreamRunnerOptions, 'dynamodbEndpoint'>): StreamRunner {
  // What the runner logged (failed polls, dropped batches) is printed only when the test fails.
  const logged: string[] = [];
  onTestFailed(() => console.error(`the stream runner logged:\n${logged.join('\n') || '(nothing)'}`));
  const runner = startStreamRunner({
    dynamodbEndpoint: inject('dynamodbEndpoint'),
    pollIntervalMs: 20,
    log: (message, error) => logged.push(`${new Date().toISOString()} ${message} ${error ?? ''}`),
    ...options,
  });
  runners.push(runner);
  return runner;
}

/** Writes items `n-1` … `n-count` (sk STATE) one after the other, so the stream keeps that order. */
async function putItems(tableName: string, count: number, sk = 'STATE', status = 'scheduled'): Promise<void> {
  for (let index = 1; index <= count; index += 1) {
    await documentClient().send(
      new PutCommand({ TableName: tableName, Item: { pk: `n-${index}`, sk, n: index, status } }),
    );
  }
}

const pkOf = (record: DynamoDBRecord): string => record.dynamodb?.Keys?.pk?.S ?? '?';
const seqOf = (record: DynamoDBRecord): string => record.dynamodb?.SequenceNumber ?? '?';

/** A handler that records each invocation's keys and answers with `respond`. */
function recorder(respond: (records: DynamoDBRecord[]) => DynamoDBBatchResponse | undefined) {
  const invocations: string[][] = [];
  return {
    invocations,
    handler: async (event: DynamoDBStreamEvent) => {
      invocations.push(event.Records.map(pkOf));
      return respond(event.Records);
    },
  };
}

describe('the local DynamoDB stream runner', () => {
  it('delivers inserts, updates and removes in the JSON shape Lambda passes to a handler', async () => {
    const { tableName, streamArn } = await freshTable();
    const seen = recorder(() => undefined);
    const events: DynamoDBRecord[] = [];
    const runner = run({
      streamArn,
      handler: async (event) => {
        events.push(...event.Records);
        return seen.handler(event);
      },
    });
    const doc = documentClient();
    await doc.send(
      new PutCommand({ TableName: tableName, Item: { pk: 'm-1', sk: 'STATE', status: 'scheduled', rev: 1 } }),
    );
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { pk: 'm-1', sk: 'STATE' },
        UpdateExpression: 'SET #s = :s',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':s': 'sending' },
      }),
    );
    await doc.send(new DeleteCommand({ TableName: tableName, Key: { pk: 'm-1', sk: 'STATE' } }));
    await runner.idle();

    expect(events.map((record) => record.eventName)).toEqual(['INSERT', 'MODIFY', 'REMOVE']);
    const [insert, modify, remove] = events;
    expect(insert).toMatchObject({
      eventSource: 'aws:dynamodb',
      eventSourceARN: streamArn,
      awsRegion: expect.any(String),
      eventID: expect.any(String),
      dynamodb: {
        Keys: { pk: { S: 'm-1' }, sk: { S: 'STATE' } },
        NewImage: { pk: { S: 'm-1' }, sk: { S: 'STATE' }, status: { S: 'scheduled' }, rev: { N: '1' } },
        StreamViewType: 'NEW_AND_OLD_IMAGES',
        SequenceNumber: expect.stringMatching(/^\d+$/),
        SizeBytes: expect.any(Number),
        ApproximateCreationDateTime: expect.any(Number),
      },
    });
    expect(Math.abs((insert?.dynamodb?.ApproximateCreationDateTime ?? 0) - Date.now() / 1000)).toBeLessThan(
      120,
    );
    expect(modify?.dynamodb?.OldImage?.status).toEqual({ S: 'scheduled' });
    expect(modify?.dynamodb?.NewImage?.status).toEqual({ S: 'sending' });
    expect(remove?.dynamodb?.OldImage?.status).toEqual({ S: 'sending' });
    expect(remove?.dynamodb?.NewImage).toBeUndefined();
  });

  it('applies the relay filter: other item kinds and statuses the relay ignores never reach the handler', async () => {
    const { tableName, streamArn } = await freshTable();
    const seen = recorder(() => undefined);
    const runner = run({ streamArn, handler: seen.handler, filter: RELAY_STREAM_FILTER });
    await putItems(tableName, 2, 'BODY');
    await putItems(tableName, 3, 'STATE');
    await putItems(tableName, 1, 'IDEM');
    // A claim rewrites n-1 as `sending`: filtered out, like every outcome.
    await documentClient().send(
      new PutCommand({ TableName: tableName, Item: { pk: 'n-1', sk: 'STATE', n: 1, status: 'sending' } }),
    );
    await runner.idle();
    expect(seen.invocations.flat()).toEqual(['n-1', 'n-2', 'n-3']);
  });

  it('lists the stream’s shards to find them, not on every poll: Lambda polls GetRecords, and shards change only when one ends', async () => {
    const { tableName, streamArn } = await freshTable();
    const send = DynamoDBStreamsClient.prototype.send;
    const asked = { describe: 0, getRecords: 0 };
    DynamoDBStreamsClient.prototype.send = function (
      this: DynamoDBStreamsClient,
      command: unknown,
      ...rest: unknown[]
    ) {
      if (command instanceof DescribeStreamCommand) asked.describe += 1;
      if (command instanceof GetRecordsCommand) asked.getRecords += 1;
      return (send as (...args: unknown[]) => Promise<unknown>).apply(this, [command, ...rest]);
    } as typeof send;
    try {
      const seen = recorder(() => undefined);
      const runner = run({ streamArn, handler: seen.handler });
      await putItems(tableName, 2);
      await eventually('forty polls', () => asked.getRecords >= 40, { withinMs: 60_000 });
      await putItems(tableName, 1, 'BODY');
      await eventually(
        'the records written before and during the polls',
        () => seen.invocations.flat().length >= 3,
        {
          withinMs: 15_000,
        },
      );
      await runner.idle();
      expect(seen.invocations.flat()).toEqual(['n-1', 'n-2', 'n-1']);
      expect(asked.describe).toBeLessThan(asked.getRecords / 10);
    } finally {
      DynamoDBStreamsClient.prototype.send = send;
    }
  });

  it('polls at a fixed rate, as Lambda polls a shard four times a second: a pass that outlasts the interval is followed by a read at once, a quick one waits only the rest of it', async () => {
    // The runner used to wait a whole interval after every pass, the handler's time included, so a
    // record written during a long invocation waited that invocation plus a full interval.
    const { tableName, streamArn } = await freshTable();
    await putItems(tableName, 1);
    // The runner's clock: it moves only when the runner waits or the handler says it took a while.
    let clockMs = 0;
    const steps: string[] = [];
    const clock: PollClock = {
      now: () => clockMs,
      async sleep(ms, signal) {
        steps.push(`wait ${ms}`);
        clockMs += ms;
        await setImmediate(undefined, { signal });
      },
    };
    const send = DynamoDBStreamsClient.prototype.send;
    DynamoDBStreamsClient.prototype.send = function (
      this: DynamoDBStreamsClient,
      command: unknown,
      ...rest: unknown[]
    ) {
      if (command instanceof GetRecordsCommand) steps.push('read');
      return (send as (...args: unknown[]) => Promise<unknown>).apply(this, [command, ...rest]);
    } as typeof send;
    try {
      run({
        streamArn,
        pollIntervalMs: 250,
        clock,
        handler: async (event) => {
          const keys = event.Records.map(pkOf);
          steps.push(`invoke ${keys.join(',')}`);
          if (keys.includes('n-1')) {
            await documentClient().send(
              new PutCommand({
                TableName: tableName,
                Item: { pk: 'n-2', sk: 'STATE', n: 2, status: 'scheduled' },
              }),
            );
            clockMs += 1_000; // an invocation of a second: four intervals
          }
          return undefined;
        },
      });
      await eventually(
        () => `n-2 handed to the function (steps: ${steps.join(' | ')})`,
        () => steps.includes('invoke n-2'),
        { withinMs: 15_000 },
      );
    } finally {
      DynamoDBStreamsClient.prototype.send = send;
    }
    const first = steps.indexOf('invoke n-1');
    expect(steps.slice(0, first)).toEqual(['read']);
    // No wait after the long pass: the next read comes at once.
    expect(steps[first + 1]).toBe('read');
    // Every quick pass (the clock did not move during it) waits the whole interval, never less.
    const waits = steps.filter((step) => step.startsWith('wait'));
    expect(new Set(waits)).toEqual(new Set(['wait 250']));
  });

  it('reads on from the oldest record after DynamoDB says its iterator points at trimmed data', async () => {
    // DynamoDB Local answered TrimmedDataAccessException to every poll of a loaded CI run, and the
    // runner asked again with the same iterator for good. Lambda reads on from TRIM_HORIZON.
    const { tableName, streamArn } = await freshTable();
    const send = DynamoDBStreamsClient.prototype.send;
    // The first iterator the runner reads with stays trimmed, as DynamoDB's does: asking again with
    // it fails again; only a new iterator reads.
    let trimmedIterator: string | undefined;
    let trimmed = 0;
    DynamoDBStreamsClient.prototype.send = function (
      this: DynamoDBStreamsClient,
      command: unknown,
      ...rest: unknown[]
    ) {
      if (command instanceof GetRecordsCommand) {
        trimmedIterator ??= command.input.ShardIterator;
        if (command.input.ShardIterator === trimmedIterator) {
          trimmed += 1;
          return Promise.reject(
            new TrimmedDataAccessException({
              message: 'The operation attempted to read past the oldest stream record in a shard.',
              $metadata: {},
            }),
          );
        }
      }
      return (send as (...args: unknown[]) => Promise<unknown>).apply(this, [command, ...rest]);
    } as typeof send;
    try {
      const seen = recorder(() => undefined);
      const runner = run({ streamArn, handler: seen.handler });
      await putItems(tableName, 3);
      await eventually(
        'the three records after the trimmed read',
        () => seen.invocations.flat().length >= 3,
        {
          withinMs: 15_000,
        },
      );
      await runner.idle();
      expect(trimmed).toBeGreaterThan(0);
      expect(seen.invocations.flat()).toEqual(['n-1', 'n-2', 'n-3']);
    } finally {
      DynamoDBStreamsClient.prototype.send = send;
    }
  });

  it('batches up to batchSize records in stream order', async () => {
    const { tableName, streamArn } = await freshTable();
    await putItems(tableName, 5);
    const seen = recorder(() => undefined);
    const runner = run({ streamArn, handler: seen.handler, batchSize: 2 });
    await runner.idle();
    expect(seen.invocations).toEqual([['n-1', 'n-2'], ['n-3', 'n-4'], ['n-5']]);
  });

  it('retries from the LOWEST failed sequence number: later records again, earlier ones never', async () => {
    const { tableName, streamArn } = await freshTable();
    await putItems(tableName, 5);
    let first = true;
    const seen = recorder((records) => {
      if (!first) return undefined;
      first = false;
      // report n-4 before n-3: the checkpoint is the lowest sequence number, not the first listed
      const failed = records.filter((record) => ['n-4', 'n-3'].includes(pkOf(record))).reverse();
      return { batchItemFailures: failed.map((record) => ({ itemIdentifier: seqOf(record) })) };
    });
    const runner = run({ streamArn, handler: seen.handler });
    await runner.idle();
    expect(seen.invocations).toEqual([
      ['n-1', 'n-2', 'n-3', 'n-4', 'n-5'],
      ['n-3', 'n-4', 'n-5'],
    ]);
  });

  it('bisects a batch whose handler throws until the poison record is alone, then sends it to onFailure', async () => {
    const { tableName, streamArn } = await freshTable();
    const { urls } = await freshQueues();
    await putItems(tableName, 8);
    const seen = recorder((records) => {
      if (records.some((record) => pkOf(record) === 'n-5')) throw new Error('poison');
      return undefined;
    });
    const runner = run({
      streamArn,
      handler: seen.handler,
      maxAttempts: 2,
      onFailure: { sqsEndpoint: inject('sqsEndpoint'), queueUrl: urls.relayFailures },
    });
    await runner.idle();

    const succeeded = seen.invocations.filter((keys) => !keys.includes('n-5')).flat();
    expect(succeeded.sort()).toEqual(['n-1', 'n-2', 'n-3', 'n-4', 'n-6', 'n-7', 'n-8']);
    expect(seen.invocations.filter((keys) => keys.length === 1 && keys[0] === 'n-5')).toHaveLength(3);

    const { Messages } = await sqsClient().send(
      new ReceiveMessageCommand({
        QueueUrl: urls.relayFailures,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
      }),
    );
    expect(Messages).toHaveLength(1);
    const failure = JSON.parse(Messages?.[0]?.Body ?? '{}');
    expect(failure).toMatchObject({
      requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 3 },
      responseContext: { functionError: 'Unhandled' },
      DDBStreamBatchInfo: { batchSize: 1, streamArn, shardId: expect.any(String) },
    });
    expect(failure.DDBStreamBatchInfo.startSequenceNumber).toBe(failure.DDBStreamBatchInfo.endSequenceNumber);
  });

  it('without bisect retries the whole batch maxAttempts times, then discards all of it to onFailure', async () => {
    const { tableName, streamArn } = await freshTable();
    const { urls } = await freshQueues();
    await putItems(tableName, 3);
    const seen = recorder(() => {
      throw new Error('down');
    });
    const runner = run({
      streamArn,
      handler: seen.handler,
      maxAttempts: 1,
      bisectOnError: false,
      onFailure: { sqsEndpoint: inject('sqsEndpoint'), queueUrl: urls.relayFailures },
    });
    await runner.idle();
    expect(seen.invocations).toEqual([
      ['n-1', 'n-2', 'n-3'],
      ['n-1', 'n-2', 'n-3'],
    ]);
    const { Messages } = await sqsClient().send(
      new ReceiveMessageCommand({ QueueUrl: urls.relayFailures, WaitTimeSeconds: 1 }),
    );
    expect(JSON.parse(Messages?.[0]?.Body ?? '{}').DDBStreamBatchInfo.batchSize).toBe(3);
  });

  it('reports every batch it gives up on to onDiscard, with no onFailure destination too (a local give-up is never silent)', async () => {
    const { tableName, streamArn } = await freshTable();
    await putItems(tableName, 4);
    const seen = recorder((records) => {
      if (records.some((record) => pkOf(record) === 'n-3')) throw new Error('poison');
      return undefined;
    });
    const discards: StreamDiscard[] = [];
    const runner = run({
      streamArn,
      handler: seen.handler,
      maxAttempts: 2,
      onDiscard: (discard) => discards.push(discard),
    });
    await runner.idle();
    expect(discards).toEqual([
      {
        shardId: expect.any(String),
        keys: [{ pk: 'n-3', sk: 'STATE' }],
        invokeCount: 3,
        destination: 'none',
      },
    ]);
  });

  it('starts at LATEST when asked: records written before the start are skipped', async () => {
    const { tableName, streamArn } = await freshTable();
    await putItems(tableName, 2);
    const seen = recorder(() => undefined);
    const runner = run({ streamArn, handler: seen.handler, startingPosition: 'LATEST' });
    await runner.idle();
    await documentClient().send(new PutCommand({ TableName: tableName, Item: { pk: 'late', sk: 'STATE' } }));
    await runner.idle();
    expect(seen.invocations).toEqual([['late']]);
  });

  it('says when it holds its place: at LATEST, a record written once started() resolved is handled', async () => {
    // An event source mapping reads at LATEST from the moment it is enabled; the local stack says
    // ready only after its relay's runner took that place. A slow stream API makes the place late.
    const { tableName, streamArn } = await freshTable();
    const send = DynamoDBStreamsClient.prototype.send;
    const slowed = function (this: DynamoDBStreamsClient, ...args: Parameters<typeof send>) {
      const [command] = args;
      const wait = command instanceof DescribeStreamCommand ? sleep(500) : Promise.resolve();
      return wait.then(() => send.apply(this, args));
    } as typeof send;
    DynamoDBStreamsClient.prototype.send = slowed;
    try {
      const seen = recorder(() => undefined);
      const runner = run({ streamArn, handler: seen.handler, startingPosition: 'LATEST' });
      await runner.started();
      await documentClient().send(
        new PutCommand({ TableName: tableName, Item: { pk: 'first', sk: 'STATE' } }),
      );
      // Not idle(): a pass that read nothing says only that the stream showed nothing yet (one CI
      // run saw `[]` after idle() under load); a record skipped at LATEST never comes.
      await eventually('the record written after started()', () => seen.invocations.length > 0);
      expect(seen.invocations).toEqual([['first']]);
    } finally {
      DynamoDBStreamsClient.prototype.send = send;
    }
  });

  it('keeps its checkpoint in checkpointFile: started again on the stream, it goes on after the last record handled', async () => {
    // An event source mapping keeps its checkpoint when its pollers change; the local stack's
    // runner dies with its process, and read the whole stream again after every restart.
    const { tableName, streamArn } = await freshTable();
    const dir = mkdtempSync(join(tmpdir(), 'postdate-checkpoints-'));
    try {
      const checkpointFile = join(dir, 'events.json');
      await putItems(tableName, 3);
      const first = recorder(() => undefined);
      await run({ streamArn, handler: first.handler, checkpointFile }).idle();
      expect(first.invocations.flat()).toEqual(['n-1', 'n-2', 'n-3']);
      await Promise.all(runners.splice(0).map((runner) => runner.stop()));
      await documentClient().send(
        new PutCommand({ TableName: tableName, Item: { pk: 'later', sk: 'STATE' } }),
      );

      const second = recorder(() => undefined);
      await run({ streamArn, handler: second.handler, checkpointFile }).idle();
      expect(second.invocations.flat()).toEqual(['later']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps no checkpoint past a record it has not handled, and ignores the checkpoints of another stream', async () => {
    const { tableName, streamArn } = await freshTable();
    const dir = mkdtempSync(join(tmpdir(), 'postdate-checkpoints-'));
    try {
      const checkpointFile = join(dir, 'events.json');
      await putItems(tableName, 3);
      // n-2 fails every time: the runner is stopped while it still retries it.
      const failing = recorder((records) => ({
        batchItemFailures: records
          .filter((record) => pkOf(record) === 'n-2')
          .map((record) => ({ itemIdentifier: seqOf(record) })),
      }));
      run({ streamArn, handler: failing.handler, checkpointFile, maxAttempts: 1000 });
      await eventually('n-2 retried', () => failing.invocations.length >= 3, { withinMs: 15_000 });
      await Promise.all(runners.splice(0).map((runner) => runner.stop()));

      const again = recorder(() => undefined);
      await run({ streamArn, handler: again.handler, checkpointFile }).idle();
      expect(again.invocations.flat()).toEqual(expect.arrayContaining(['n-2', 'n-3']));
      await Promise.all(runners.splice(0).map((runner) => runner.stop()));

      const other = await freshTable();
      await putItems(other.tableName, 2);
      const elsewhere = recorder(() => undefined);
      await run({ streamArn: other.streamArn, handler: elsewhere.handler, checkpointFile }).idle();
      expect(elsewhere.invocations.flat()).toEqual(['n-1', 'n-2']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the local DynamoDB stream runner with the function timeout enforced', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'stream-runner-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('kills an invocation that outlives its timeout and treats it as a failed one: bisected, retried in a fresh sandbox', async () => {
    const { tableName, streamArn } = await freshTable();
    const { urls } = await freshQueues();
    await putItems(tableName, 2);
    const effectsFile = join(scratch, 'effects.jsonl');
    const slowMs = 1500;
    const kills: FunctionTimeout[] = [];
    const runner = run({
      streamArn,
      maxAttempts: 2,
      onFailure: { sqsEndpoint: inject('sqsEndpoint'), queueUrl: urls.relayFailures },
      handler: new FunctionSandboxes({
        name: 'fixture',
        file: fileURLToPath(new URL('./fixtures/effectsFunction.ts', import.meta.url)),
        timeoutMs: 500,
        environment: {
          FIXTURE_EFFECTS_FILE: effectsFile,
          FIXTURE_SLOW_ATTEMPTS: '1',
          FIXTURE_SLOW_MS: String(slowMs),
        },
      }),
      onFunctionTimeout: (kill) => kills.push(kill),
    });
    await runner.idle();
    const kill = kills[0];
    if (!kill) throw new Error('no kill reported');
    // The moment the killed invocation would have written `late` has passed.
    await sleep(Math.max(0, kill.startedAt + slowMs + 100 - Date.now()));

    expect(kills).toHaveLength(1);
    expect(kill).toMatchObject({ functionName: 'fixture', records: 2 });
    const effects = readEffects(effectsFile);
    expect(effects.map((effect) => `${effect.step}:${effect.attempt}:${effect.ids.length}`)).toEqual([
      'start:1:2',
      'start:2:1',
      'done:2:1',
      'start:3:1',
      'done:3:1',
    ]);
    const [killed, ...retried] = effects as [Effect, ...Effect[]];
    expect(retried.flatMap((effect) => (effect.step === 'done' ? effect.ids : [])).sort()).toEqual(
      [...killed.ids].sort(),
    );
    expect(retried.every((effect) => effect.instance !== killed.instance)).toBe(true);
    const { Attributes } = await sqsClient().send(
      new GetQueueAttributesCommand({
        QueueUrl: urls.relayFailures,
        AttributeNames: ['ApproximateNumberOfMessages'],
      }),
    );
    expect(Attributes?.ApproximateNumberOfMessages).toBe('0');
  });
});
