import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import {
  FunctionSandboxes,
  type FunctionTimeout,
  invokeLocal,
  type LocalHandler,
  reportTimeout,
} from './functionSandbox.js';
import { toLambdaSqsRecord } from './sqsRecordFormat.js';

export interface SqsRunnerOptions {
  readonly sqsEndpoint: string;
  readonly queueUrl: string;
  readonly queueArn: string;
  /**
   * The function: `FunctionSandboxes` run it as Lambda does (a sandbox per poller, killed at its
   * timeout; the runner closes them when it stops); a plain function is called in this process and
   * never killed (tests).
   */
  readonly handler: LocalHandler<SQSEvent, SQSBatchResponse>;
  /** Called once per invocation killed at its function timeout (its batch is left to come back). */
  readonly onFunctionTimeout?: (kill: FunctionTimeout) => void;
  /** Messages per invocation, 1–10 (one ReceiveMessage). @default 10 */
  readonly batchSize?: number;
  /** Concurrent invocations (the mapping's ScalingConfig.MaximumConcurrency): one poller each. @default 2 */
  readonly maxConcurrency?: number;
  /** Long-poll wait of each ReceiveMessage. @default 1 */
  readonly waitTimeSeconds?: number;
  /** VisibilityTimeout of each receive; the queue's own when absent (as Lambda). */
  readonly visibilityTimeoutSeconds?: number;
  /** Where runner problems are reported. @default console.warn */
  readonly log?: (message: string, error?: unknown) => void;
}

export interface SqsRunner {
  stop(): Promise<void>;
  /**
   * Resolves once every poller has come back empty from a receive that started after the call and
   * no invocation is running: everything visible in the queue at the call has been handled.
   * Messages that are delayed or invisible (failed, backing off) are not waited for.
   */
  idle(): Promise<void>;
}

/**
 * Plays a Lambda SQS event source mapping against the SQS emulator: `maxConcurrency` pollers each
 * receive up to `batchSize` messages, invoke `handler`, and delete the messages that succeeded.
 * Items in `batchItemFailures` are left alone to become visible again after their visibility
 * timeout (the sender may have changed it); a thrown error, or an invocation killed at its function
 * timeout (its response is lost), leaves the whole batch. The queue's redrive policy then moves a
 * message to the DLQ after maxReceiveCount receives, as in AWS.
 */
export function startSqsRunner(options: SqsRunnerOptions): SqsRunner {
  const batchSize = options.batchSize ?? 10;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10) {
    throw new RangeError('batchSize must be between 1 and 10 for the local SQS runner');
  }
  const pollers = options.maxConcurrency ?? 2;
  const log =
    options.log ??
    ((message: string, error?: unknown) => console.warn(`[sqs runner] ${message}`, error ?? ''));
  const sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: options.sqsEndpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const stopping = new AbortController();
  let tick = 0;
  let running = 0;
  const lastReceive: Array<{ startedAt: number; empty: boolean }> = Array.from({ length: pollers }, () => ({
    startedAt: 0,
    empty: false,
  }));
  let waiters: Array<{ after: number; resolve: () => void }> = [];

  const checkIdle = (): void => {
    if (running > 0 || !lastReceive.every((receive) => receive.empty)) return;
    const oldestStart = Math.min(...lastReceive.map((receive) => receive.startedAt));
    const ready = waiters.filter((waiter) => oldestStart > waiter.after);
    waiters = waiters.filter((waiter) => oldestStart <= waiter.after);
    for (const waiter of ready) waiter.resolve();
  };

  const handle = async (slot: number, messages: Message[]): Promise<void> => {
    const records = messages.map((message) => toLambdaSqsRecord(message, options.queueArn));
    const outcome = await invokeLocal(options.handler, slot, { Records: records });
    if (outcome.kind === 'threw') {
      log('handler failed', outcome.error);
      return;
    }
    if (outcome.kind === 'timedOut') {
      reportTimeout(options.handler, outcome, records.length, {
        onFunctionTimeout: options.onFunctionTimeout,
        log,
        aftermath: 'they come back after their visibility timeout',
      });
      return;
    }
    const ids = (outcome.value?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier);
    const known = new Set(records.map((record) => record.messageId));
    // Lambda treats an empty or unknown itemIdentifier as a failure of the whole batch.
    const failedIds = ids.every((id) => typeof id === 'string' && known.has(id)) ? new Set(ids) : known;
    const done = records.filter((record) => !failedIds.has(record.messageId));
    if (done.length === 0) return;
    const { Failed } = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: options.queueUrl,
        Entries: done.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
      }),
    );
    if (Failed && Failed.length > 0) log(`could not delete ${Failed.length} handled message(s)`, Failed);
  };

  // A poller takes messages only once its sandbox is warm (started and the function imported), so
  // no message waits for a cold start that a warm poller could have spared it (DESIGN §7: the first
  // message is as quick as the hundredth); after a kill its slot warms again before it polls.
  const sandboxes = options.handler instanceof FunctionSandboxes ? options.handler : undefined;
  // Resolved by stop() (not an abort listener: the SDK's receives already hold several on the signal).
  let markStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => {
    markStopped = resolve;
  });
  // A function that does not load is not warmed again and again: its invocations then fail as before.
  const unloadable = new Set<number>();
  const warm = async (index: number): Promise<void> => {
    if (!sandboxes || unloadable.has(index)) return;
    const loaded = await Promise.race([sandboxes.load(index), stopped]);
    if (loaded && !loaded.loaded) unloadable.add(index);
  };

  const poll = async (index: number): Promise<void> => {
    while (!stopping.signal.aborted) {
      await warm(index);
      if (stopping.signal.aborted) return;
      tick += 1;
      const startedAt = tick;
      let messages: Message[] = [];
      try {
        const result = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: batchSize,
            WaitTimeSeconds: options.waitTimeSeconds ?? 1,
            ...(options.visibilityTimeoutSeconds !== undefined
              ? { VisibilityTimeout: options.visibilityTimeoutSeconds }
              : {}),
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: stopping.signal },
        );
        messages = result.Messages ?? [];
      } catch (error) {
        if (stopping.signal.aborted) return;
        log('receiving failed', error);
        await sleep(500, undefined, { signal: stopping.signal }).catch(() => undefined);
        continue;
      }
      lastReceive[index] = { startedAt, empty: messages.length === 0 };
      if (messages.length > 0) {
        running += 1;
        try {
          await handle(index, messages);
        } catch (error) {
          log('acknowledging failed', error);
        } finally {
          running -= 1;
        }
      }
      checkIdle();
    }
  };

  // The sandboxes warm one after another, beside the first poller's work: not all at once, so that
  // on a small machine their start does not slow the messages already being handled.
  let warmedBefore: Promise<void> = Promise.resolve();
  const loops = Array.from({ length: pollers }, (_, index) => {
    const warmed = warmedBefore.then(() => warm(index));
    warmedBefore = warmed;
    return warmed.then(() => poll(index));
  });

  return {
    idle: () => new Promise<void>((resolve) => waiters.push({ after: tick, resolve })),
    async stop() {
      stopping.abort();
      markStopped();
      await Promise.all(loops);
      for (const waiter of waiters.splice(0)) waiter.resolve();
      if (options.handler instanceof FunctionSandboxes) await options.handler.close();
      sqs.destroy();
    },
  };
}
