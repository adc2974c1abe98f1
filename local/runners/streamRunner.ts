import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  type GetRecordsCommandOutput,
  GetShardIteratorCommand,
  type Shard,
  type ShardIteratorType,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { toLambdaRecord } from '../../lambdas/adapters/streamRecordFormat.js';
import { assertSupportedFilter, type FilterPattern, matchesFilter } from './eventFilter.js';
import {
  FunctionSandboxes,
  type FunctionTimeout,
  invokeLocal,
  type LocalHandler,
  reportTimeout,
} from './functionSandbox.js';
import { IdleWaiters } from './idleWaiters.js';
import { type DiscardedBatch, type InvocationOutcome, StreamBatcher } from './streamBatcher.js';

const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };
/**
 * A request to the emulator that hangs fails after this and the next pass tries again. Without it
 * the SDK waits on a socket without end, so one stuck call would freeze the runner for good. Stream
 * calls answer at once; none long-polls.
 */
const LOCAL_REQUEST_HANDLER = {
  connectionTimeout: 2_000,
  requestTimeout: 10_000,
  throwOnRequestTimeout: true,
};
const LOCAL_FUNCTION_ARN = 'arn:aws:lambda:us-east-1:000000000000:function:local-stream-runner';

export interface StreamRunnerOptions {
  readonly dynamodbEndpoint: string;
  readonly streamArn: string;
  /**
   * The function: `FunctionSandboxes` run it as Lambda does (one sandbox, as one batch runs at a
   * time; killed at its timeout; the runner closes it when it stops); a plain function is called in
   * this process and never killed (tests).
   */
  readonly handler: LocalHandler<DynamoDBStreamEvent, DynamoDBBatchResponse>;
  /** Called once per invocation killed at its function timeout (a failed invocation: retried, bisected). */
  readonly onFunctionTimeout?: (kill: FunctionTimeout) => void;
  /** Records per invocation (BatchSize). @default 100 */
  readonly batchSize?: number;
  /** MaximumBatchingWindowInSeconds, in ms: a short batch waits this long for more. @default 0 */
  readonly batchingWindowMs?: number;
  /**
   * Retries of a failing batch after its first failure (the mapping's MaximumRetryAttempts): a poison
   * record is invoked 1 + maxAttempts times before its batch goes to `onFailure`. @default 3
   */
  readonly maxAttempts?: number;
  /** BisectBatchOnFunctionError. @default true */
  readonly bisectOnError?: boolean;
  /** The on-failure destination (an SQS queue), as DestinationConfig.OnFailure. */
  readonly onFailure?: { readonly sqsEndpoint: string; readonly queueUrl: string };
  /**
   * Called for every batch given up on after its retries, whether or not it went to `onFailure`: a
   * local stack may run quiet, and a record no function will see again must still be countable.
   */
  readonly onDiscard?: (discard: StreamDiscard) => void;
  /** An EventBridge filter pattern (or a list of them, OR-ed) as in FilterCriteria; see eventFilter.ts. */
  readonly filter?: object;
  /** @default 200 */
  readonly pollIntervalMs?: number;
  /** Where a shard without a kept checkpoint is read from. @default 'TRIM_HORIZON' */
  readonly startingPosition?: 'TRIM_HORIZON' | 'LATEST';
  /**
   * A file that keeps the runner's checkpoint in each shard across processes, as an event source
   * mapping keeps its own: written after each pass that handled every record read, and read at the
   * start, so a runner started again on the same stream goes on after the last record handled
   * (a kill between a batch and its write replays that batch). Absent: in memory only.
   */
  readonly checkpointFile?: string;
  /** Where runner problems (stream API errors, undeliverable failure records) are reported. @default console.warn */
  readonly log?: (message: string, error?: unknown) => void;
  /** The clock the polls are scheduled by (tests pass their own, so they never sleep). @default the real one */
  readonly clock?: PollClock;
}

/** What the runner reads the time from and waits with. */
export interface PollClock {
  now(): number;
  /** Resolves after `ms`, or rejects once `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

const REAL_CLOCK: PollClock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleep(ms, undefined, { signal }),
};

/** A batch the runner gave up on after its retries (what AWS would send to the on-failure destination). */
export interface StreamDiscard {
  readonly shardId: string;
  /** Each discarded record's key, attribute name to its string or number value. */
  readonly keys: readonly Readonly<Record<string, string>>[];
  readonly invokeCount: number;
  /** `onFailure`: a failure record went to the destination; `none`: there is none, or it refused it. */
  readonly destination: 'onFailure' | 'none';
}

export interface StreamRunner {
  stop(): Promise<void>;
  /**
   * Resolves once the runner holds a place in every shard of its first listing (or it stopped): at
   * LATEST, every record written after this is handled, as a mapping reads from when it is enabled.
   */
  started(): Promise<void>;
  /** Resolves once every record in the stream when it was called has been processed (or discarded). */
  idle(): Promise<void>;
}

interface ShardState {
  readonly shardId: string;
  iterator: string | undefined;
  /** The last sequence number read, to get a fresh iterator after one expires. */
  lastReadSeq: string | undefined;
  /** No NextShardIterator: the shard is closed and fully read. */
  finished: boolean;
  readonly batcher: StreamBatcher;
}

/** How often the runner lists the stream's shards besides when one ends (local/EMULATORS.md). */
const SHARD_LIST_EVERY_MS = 10_000;

/**
 * Plays a Lambda DynamoDB Streams event source mapping against DynamoDB Local: polls every shard
 * (parents before children), filters, batches, invokes `handler` one batch per shard at a time,
 * and applies ReportBatchItemFailures checkpoints, bisect-on-error, retries and the on-failure
 * destination as AWS does (see streamBatcher.ts and local/EMULATORS.md).
 */
export function startStreamRunner(options: StreamRunnerOptions): StreamRunner {
  const batchSize = options.batchSize ?? 100;
  const maxRetries = options.maxAttempts ?? 3;
  const bisect = options.bisectOnError ?? true;
  const pollIntervalMs = options.pollIntervalMs ?? 200;
  const clock = options.clock ?? REAL_CLOCK;
  const log =
    options.log ??
    ((message: string, error?: unknown) => console.warn(`[stream runner] ${message}`, error ?? ''));
  if (options.filter !== undefined) {
    for (const pattern of Array.isArray(options.filter) ? options.filter : [options.filter]) {
      assertSupportedFilter(pattern);
    }
  }
  const filter = options.filter as FilterPattern | FilterPattern[] | undefined;
  const streams = new DynamoDBStreamsClient({
    region: 'us-east-1',
    endpoint: options.dynamodbEndpoint,
    credentials: LOCAL_CREDENTIALS,
    requestHandler: LOCAL_REQUEST_HANDLER,
  });
  const failureSqs = options.onFailure
    ? new SQSClient({
        region: 'us-east-1',
        endpoint: options.onFailure.sqsEndpoint,
        credentials: LOCAL_CREDENTIALS,
        requestHandler: LOCAL_REQUEST_HANDLER,
      })
    : undefined;
  const shards = new Map<string, ShardState>();
  const stopping = new AbortController();
  const idle = new IdleWaiters();
  let firstDescribe = true;
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => {
    markStarted = resolve;
  });
  // Lambda polls each shard with GetRecords and lists the shards only to find new ones, which
  // appear when a shard ends: so here at the start, after a shard is read to its end, and every
  // SHARD_LIST_EVERY_MS in case one appeared another way; not on every poll.
  let shardsListedAt = Number.NEGATIVE_INFINITY;
  let shardEnded = false;
  const kept = readCheckpoints(options.checkpointFile, options.streamArn, log);
  const saved = new Map(kept);

  const discoverShards = async (): Promise<void> => {
    if (!shardEnded && shards.size > 0 && clock.now() - shardsListedAt < SHARD_LIST_EVERY_MS) return;
    const listing = clock.now();
    const found: Shard[] = [];
    let exclusiveStart: string | undefined;
    do {
      const { StreamDescription } = await streams.send(
        new DescribeStreamCommand({ StreamArn: options.streamArn, ExclusiveStartShardId: exclusiveStart }),
      );
      found.push(...(StreamDescription?.Shards ?? []));
      exclusiveStart = StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStart);
    const known = new Set(found.map((shard) => shard.ShardId));
    for (const shard of found) {
      const shardId = shard.ShardId;
      if (!shardId || shards.has(shardId)) continue;
      const parent = shard.ParentShardId;
      // A child waits until its parent is read to the end (unless the parent has been trimmed away).
      if (parent && known.has(parent) && !shards.get(parent)?.finished) continue;
      const position: ShardIteratorType =
        firstDescribe && options.startingPosition === 'LATEST' ? 'LATEST' : 'TRIM_HORIZON';
      const checkpoint = kept.get(shardId);
      const start = checkpoint
        ? await iteratorAfter(shardId, checkpoint)
        : { iterator: await iteratorAt(shardId, position), lastReadSeq: undefined };
      shards.set(shardId, {
        shardId,
        ...start,
        finished: false,
        batcher: new StreamBatcher(batchSize, maxRetries, bisect, options.batchingWindowMs ?? 0),
      });
    }
    firstDescribe = false;
    markStarted();
    // Only a listing that went through counts: a failed one is tried again at the next poll.
    shardEnded = false;
    shardsListedAt = listing;
  };

  const iteratorAt = async (shardId: string, position: ShardIteratorType): Promise<string | undefined> => {
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: options.streamArn,
        ShardId: shardId,
        ShardIteratorType: position,
      }),
    );
    return ShardIterator;
  };

  /** After a kept checkpoint; from the oldest record left when the stream no longer holds it. */
  const iteratorAfter = async (
    shardId: string,
    sequenceNumber: string,
  ): Promise<{ iterator: string | undefined; lastReadSeq: string | undefined }> => {
    try {
      const { ShardIterator } = await streams.send(
        new GetShardIteratorCommand({
          StreamArn: options.streamArn,
          ShardId: shardId,
          ShardIteratorType: 'AFTER_SEQUENCE_NUMBER',
          SequenceNumber: sequenceNumber,
        }),
      );
      return { iterator: ShardIterator, lastReadSeq: sequenceNumber };
    } catch (error) {
      if (!(error instanceof TrimmedDataAccessException)) throw error;
      log('the kept checkpoint points at trimmed records; reading on from the oldest record', error);
      return { iterator: await iteratorAt(shardId, 'TRIM_HORIZON'), lastReadSeq: undefined };
    }
  };

  /** Keeps each shard's checkpoint that moved: the last record read, once every record read is handled. */
  const saveCheckpoints = (): void => {
    if (!options.checkpointFile) return;
    let moved = false;
    for (const shard of shards.values()) {
      if (shard.batcher.pendingCount > 0 || !shard.lastReadSeq) continue;
      if (saved.get(shard.shardId) === shard.lastReadSeq) continue;
      saved.set(shard.shardId, shard.lastReadSeq);
      moved = true;
    }
    if (!moved) return;
    try {
      writeCheckpoints(options.checkpointFile, options.streamArn, saved);
    } catch (error) {
      log('could not keep the checkpoints', error);
    }
  };

  /** Reads one page of a shard; true when it returned records. */
  const readShard = async (shard: ShardState): Promise<boolean> => {
    if (shard.finished || !shard.iterator) return false;
    let result: GetRecordsCommandOutput;
    try {
      result = await streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: 1000 }));
    } catch (error) {
      if (error instanceof ExpiredIteratorException) {
        shard.iterator = await freshIterator(shard);
        return false;
      }
      if (error instanceof TrimmedDataAccessException) {
        // The iterator points before the oldest record left: asking again with it fails for good.
        // Lambda reads on from the oldest record there is (records already trimmed are gone).
        log('the shard iterator points at trimmed records; reading on from the oldest record', error);
        shard.iterator = await freshIterator(shard, 'TRIM_HORIZON');
        return false;
      }
      throw error;
    }
    const records = result.Records ?? [];
    shard.iterator = result.NextShardIterator;
    if (!shard.iterator) {
      shard.finished = true;
      shardEnded = true;
    }
    const last = records[records.length - 1]?.dynamodb?.SequenceNumber;
    if (last) shard.lastReadSeq = last;
    const lambdaRecords = records.map((record) => toLambdaRecord(record, options.streamArn));
    shard.batcher.add(
      filter ? lambdaRecords.filter((record) => matchesFilter(filter, record)) : lambdaRecords,
      clock.now(),
    );
    return records.length > 0;
  };

  const freshIterator = async (
    shard: ShardState,
    from: 'after-last-read' | 'TRIM_HORIZON' = 'after-last-read',
  ): Promise<string | undefined> => {
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: options.streamArn,
        ShardId: shard.shardId,
        ...(shard.lastReadSeq && from === 'after-last-read'
          ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: shard.lastReadSeq }
          : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    return ShardIterator;
  };

  /**
   * Invokes the handler on the shard's batches until it is drained or a failure asks to back off;
   * true when it backed off.
   */
  const processShard = async (shard: ShardState): Promise<boolean> => {
    for (
      let batch = shard.batcher.nextBatch(clock.now());
      batch;
      batch = shard.batcher.nextBatch(clock.now())
    ) {
      if (stopping.signal.aborted) return false;
      const outcome = await invoke(batch);
      const { discarded, backOff } = shard.batcher.settle(batch, outcome);
      if (discarded) await reportFailure(shard.shardId, discarded, outcome);
      if (backOff) return true;
    }
    return false;
  };

  const invoke = async (batch: DynamoDBRecord[]): Promise<InvocationOutcome> => {
    const outcome = await invokeLocal(options.handler, 0, { Records: structuredClone(batch) });
    if (outcome.kind === 'threw') {
      log('handler failed', outcome.error);
      return { kind: 'error' };
    }
    if (outcome.kind === 'timedOut') {
      reportTimeout(options.handler, outcome, batch.length, {
        onFunctionTimeout: options.onFunctionTimeout,
        log,
        aftermath: 'the batch fails',
      });
      // Lambda counts a timeout as a function error: retried, bisected, as a thrown error.
      return { kind: 'error' };
    }
    const failures = outcome.value?.batchItemFailures;
    if (!failures || failures.length === 0) return { kind: 'ok' };
    const ids = failures.map((failure) => failure.itemIdentifier);
    // Lambda treats an empty or unknown itemIdentifier as a failure of the whole batch.
    if (ids.some((id) => typeof id !== 'string' || id.length === 0)) return { kind: 'error' };
    return { kind: 'partial', failedIds: ids };
  };

  const reportFailure = async (shardId: string, discarded: DiscardedBatch, outcome: InvocationOutcome) => {
    const first = discarded.records[0]?.dynamodb;
    const last = discarded.records[discarded.records.length - 1]?.dynamodb;
    const arrival = (seconds: number | undefined) =>
      seconds === undefined ? undefined : new Date(seconds * 1000).toISOString();
    const failure = {
      requestContext: {
        requestId: randomUUID(),
        functionArn: LOCAL_FUNCTION_ARN,
        condition: 'RetryAttemptsExhausted',
        approximateInvokeCount: discarded.invokeCount,
      },
      responseContext: {
        statusCode: 200,
        executedVersion: '$LATEST',
        ...(outcome.kind === 'error' ? { functionError: 'Unhandled' } : {}),
      },
      version: '1.0',
      timestamp: new Date().toISOString(),
      DDBStreamBatchInfo: {
        shardId,
        startSequenceNumber: first?.SequenceNumber,
        endSequenceNumber: last?.SequenceNumber,
        approximateArrivalOfFirstRecord: arrival(first?.ApproximateCreationDateTime),
        approximateArrivalOfLastRecord: arrival(last?.ApproximateCreationDateTime),
        batchSize: discarded.records.length,
        streamArn: options.streamArn,
      },
    };
    const destination = await sendToOnFailure(failure, discarded.records.length);
    options.onDiscard?.({
      shardId,
      keys: discarded.records.map((record) => keyOf(record)),
      invokeCount: discarded.invokeCount,
      destination,
    });
  };

  const sendToOnFailure = async (failure: object, size: number): Promise<StreamDiscard['destination']> => {
    if (!failureSqs || !options.onFailure) {
      log(`dropped a batch of ${size} record(s) after its retries (no onFailure destination)`);
      return 'none';
    }
    try {
      await failureSqs.send(
        new SendMessageCommand({
          QueueUrl: options.onFailure.queueUrl,
          MessageBody: JSON.stringify(failure),
        }),
      );
      return 'onFailure';
    } catch (error) {
      log('could not send a failure record to the onFailure queue', error);
      return 'none';
    }
  };

  // Lambda polls a shard at a rate (four times a second), not with a pause after each batch: a
  // pass starts `pollIntervalMs` after the last one started, at once if that one took longer (a
  // long invocation), so a record written meanwhile does not wait the invocation and a whole
  // interval more. After a failure (a stream error, a batch that backs off) it waits a whole one.
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      const pass = idle.beginPass();
      const startedAt = clock.now();
      let quiet = true;
      let failed = false;
      try {
        await discoverShards();
        for (const shard of [...shards.values()]) {
          if (await readShard(shard)) quiet = false;
          if (await processShard(shard)) failed = true;
          if (shard.batcher.pendingCount > 0) quiet = false;
        }
        saveCheckpoints();
      } catch (error) {
        quiet = false;
        failed = true;
        if (!stopping.signal.aborted) log('polling the stream failed', error);
      }
      if (quiet) idle.endQuietPass(pass);
      const wait = failed ? pollIntervalMs : startedAt + pollIntervalMs - clock.now();
      if (wait <= 0) continue;
      try {
        await clock.sleep(wait, stopping.signal);
      } catch {
        // stopped
      }
    }
  })();

  return {
    idle: () => idle.wait(),
    started: () => started,
    async stop() {
      stopping.abort();
      await loop;
      markStarted();
      idle.releaseAll();
      if (options.handler instanceof FunctionSandboxes) await options.handler.close();
      streams.destroy();
      failureSqs?.destroy();
    },
  };
}

/** The file's checkpoints of this stream, shard id to sequence number (none: no file, or another stream's). */
function readCheckpoints(
  file: string | undefined,
  streamArn: string,
  log: (message: string, error?: unknown) => void,
): ReadonlyMap<string, string> {
  if (!file) return new Map();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return new Map();
  }
  try {
    const kept = JSON.parse(text) as { streamArn?: unknown; shards?: unknown };
    if (kept.streamArn !== streamArn || typeof kept.shards !== 'object' || kept.shards === null)
      return new Map();
    return new Map(
      Object.entries(kept.shards).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    );
  } catch (error) {
    log(`the checkpoints in ${file} could not be read; starting at the starting position`, error);
    return new Map();
  }
}

/** Written whole to a file beside it, then renamed over it: a kill leaves the old file or the new. */
function writeCheckpoints(file: string, streamArn: string, shards: ReadonlyMap<string, string>): void {
  mkdirSync(dirname(file), { recursive: true });
  const next = `${file}.next`;
  writeFileSync(next, JSON.stringify({ streamArn, shards: Object.fromEntries(shards) }));
  renameSync(next, file);
}

/** A stream record's key as plain strings (`S` or `N` attributes). */
function keyOf(record: DynamoDBRecord): Record<string, string> {
  const key: Record<string, string> = {};
  for (const [name, value] of Object.entries(record.dynamodb?.Keys ?? {})) {
    const plain = value.S ?? value.N;
    if (plain !== undefined) key[name] = plain;
  }
  return key;
}
