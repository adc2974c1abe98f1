import { loadConfig } from '../lambdas/core/config.js';
import { RELAY_STREAM_FILTER } from '../lambdas/store/tableLayout.js';
import { type FunctionTimeoutKill, RELAY_STREAM, SENDER_QUEUE } from './localFunctions.js';
import type { StackResources } from './localResources.js';
import type { LocalStreamDiscard } from './localStackOptions.js';
import type { FunctionSandboxes, FunctionTimeout } from './runners/functionSandbox.js';
import { type SqsRunner, startSqsRunner } from './runners/sqsRunner.js';
import { type StreamDiscard, type StreamRunner, startStreamRunner } from './runners/streamRunner.js';
import { localFunctionSandboxes } from './sandboxedFunctions.js';
import { startWebhookEventSources } from './webhookEventSources.js';

/**
 * The event sources of the sandboxed functions, set up like the CDK ones (lib/constructs/Dispatch.ts,
 * Sending.ts, through lib/eventSourceLayout.ts): the table's stream in front of the relay, the send
 * queue in front of the sender.
 */

type RunnerLog = (message: string, error?: unknown) => void;

/** The stack's running event sources: what to stop (in order) and how to wait until they are idle. */
export interface StackEventSources {
  readonly relay: StreamRunner | undefined;
  readonly sender: SqsRunner | undefined;
  readonly started: readonly { readonly name: string; stop(): Promise<void> }[];
  /** Resolves once the event producer and the webhook delivery function are warm (none: at once). */
  readonly warmed: Promise<void>;
  /** Per in-process function, the real batches that were its first invocation. */
  coldInvocations(): { readonly events: number; readonly webhooks: number };
  /** Resolves once the relay's stream and the send queue have nothing visible left to hand over. */
  idle(): Promise<void>;
}

/**
 * The relay's stream runner and the sender's queue runner of a stack, each when its function is
 * there to run (the sender runs elsewhere when the stack's sender is `external`).
 */
export function startEventSources(options: {
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
  readonly resources: StackResources;
  readonly relay: FunctionSandboxes | undefined;
  readonly sender: FunctionSandboxes | undefined;
  /** POSTDATE_SENDER_MAX_CONCURRENCY: the sender's pollers, as many as its share of the rate assumes. */
  readonly senderMaxConcurrency: number;
  readonly onFunctionTimeout: (kill: FunctionTimeoutKill) => void;
  readonly onStreamDiscard?: ((discard: LocalStreamDiscard) => void) | undefined;
  readonly log: (line: string) => void;
  /** The event producer and the webhook delivery beside the relay (DESIGN §11), when given their queue. */
  readonly webhooks?: {
    readonly queue: { readonly url: string; readonly arn: string };
    readonly eventFailureQueueUrl: string;
    readonly environment: Readonly<Record<string, string>>;
    /** Where the event producer's runner keeps its checkpoints (the stack's data dir). */
    readonly checkpointFile?: string | undefined;
    readonly retryBaseMs?: number | undefined;
  };
}): StackEventSources {
  const { table, queues } = options.resources;
  const prefixed =
    (prefix: string): RunnerLog =>
    (message, error) =>
      options.log(`${prefix}: ${message}${describeError(error)}`);
  const relay = options.relay
    ? startRelayEventSource({
        dynamodbEndpoint: options.dynamodbEndpoint,
        streamArn: table.streamArn,
        relay: options.relay,
        sqsEndpoint: options.sqsEndpoint,
        relayFailuresQueueUrl: queues.urls.relayFailures,
        startingPosition: table.existed ? 'LATEST' : 'TRIM_HORIZON',
        onFunctionTimeout: options.onFunctionTimeout,
        onDiscard: (discard) => options.onStreamDiscard?.({ ...discard, source: 'relay' }),
        log: prefixed('relay event source'),
      })
    : undefined;
  const sender = options.sender
    ? startSenderQueue({
        sqsEndpoint: options.sqsEndpoint,
        queueUrl: queues.urls.send,
        queueArn: queues.arns.send,
        sender: options.sender,
        maxConcurrency: options.senderMaxConcurrency,
        onFunctionTimeout: options.onFunctionTimeout,
        log: prefixed('sender event source'),
      })
    : undefined;
  const webhooks = options.webhooks
    ? startWebhookEventSources({
        dynamodbEndpoint: options.dynamodbEndpoint,
        sqsEndpoint: options.sqsEndpoint,
        streamArn: table.streamArn,
        queue: options.webhooks.queue,
        eventFailureQueueUrl: options.webhooks.eventFailureQueueUrl,
        environment: options.webhooks.environment,
        reusedTable: table.existed,
        checkpointFile: options.webhooks.checkpointFile,
        retryBaseMs: options.webhooks.retryBaseMs,
        onDiscard: (discard) => options.onStreamDiscard?.({ ...discard, source: 'events' }),
        log: prefixed('webhooks'),
      })
    : undefined;
  return {
    relay,
    sender,
    started: [
      ...(relay ? [{ name: 'the stream runner', stop: () => relay.stop() }] : []),
      ...(sender ? [{ name: 'the SQS runner', stop: () => sender.stop() }] : []),
      ...(webhooks?.started ?? []),
    ],
    warmed: webhooks?.warmed ?? Promise.resolve(),
    coldInvocations: () => webhooks?.coldInvocations() ?? { events: 0, webhooks: 0 },
    idle: async () => {
      await Promise.all([relay?.idle(), sender?.idle(), webhooks?.idle()]);
    },
  };
}

/**
 * The relay behind the table's stream: batches of 100 with the shared stream filter (state records
 * only), failing batches bisected and retried, then described to the relay-failures queue.
 */
export function startRelayEventSource(options: {
  readonly dynamodbEndpoint: string;
  readonly streamArn: string;
  readonly relay: FunctionSandboxes;
  readonly sqsEndpoint: string;
  readonly relayFailuresQueueUrl: string;
  /** `LATEST` on a reused table: its old records were handled before the restart (the sweeper covers any gap). */
  readonly startingPosition: 'TRIM_HORIZON' | 'LATEST';
  readonly onFunctionTimeout: (kill: FunctionTimeoutKill) => void;
  readonly onDiscard?: (discard: StreamDiscard) => void;
  readonly log: RunnerLog;
}): StreamRunner {
  return startStreamRunner({
    dynamodbEndpoint: options.dynamodbEndpoint,
    streamArn: options.streamArn,
    handler: options.relay,
    onFunctionTimeout: (kill) => options.onFunctionTimeout({ ...kill, functionName: 'relay' }),
    batchSize: RELAY_STREAM.batchSize,
    batchingWindowMs: RELAY_STREAM.batchingWindowSeconds * 1000,
    maxAttempts: RELAY_STREAM.retryAttempts,
    bisectOnError: true,
    onFailure: { sqsEndpoint: options.sqsEndpoint, queueUrl: options.relayFailuresQueueUrl },
    ...(options.onDiscard ? { onDiscard: options.onDiscard } : {}),
    filter: RELAY_STREAM_FILTER,
    startingPosition: options.startingPosition,
    log: options.log,
  });
}

/**
 * The sender behind the send queue as the deployed mapping reads it (batch size, maximum
 * concurrency), plus local polling. Without `onFunctionTimeout` the runner logs each kill itself.
 */
export function startSenderQueue(options: {
  readonly sqsEndpoint: string;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly sender: FunctionSandboxes;
  /** The mapping's MaximumConcurrency: POSTDATE_SENDER_MAX_CONCURRENCY, one poller each. */
  readonly maxConcurrency: number;
  readonly onFunctionTimeout?: ((kill: FunctionTimeoutKill) => void) | undefined;
  readonly log: RunnerLog;
}): SqsRunner {
  const { onFunctionTimeout } = options;
  return startSqsRunner({
    sqsEndpoint: options.sqsEndpoint,
    queueUrl: options.queueUrl,
    queueArn: options.queueArn,
    batchSize: SENDER_QUEUE.batchSize,
    maxConcurrency: options.maxConcurrency,
    waitTimeSeconds: SENDER_QUEUE.waitTimeSeconds,
    handler: options.sender,
    ...(onFunctionTimeout
      ? {
          onFunctionTimeout: (kill: FunctionTimeout) =>
            onFunctionTimeout({ ...kill, functionName: 'sender' }),
        }
      : {}),
    log: options.log,
  });
}

/**
 * The sender's SQS event source with the sender in worker sandboxes killed at its function timeout,
 * for a process that runs the sender on its own next to a stack started with `sender: 'external'`
 * (given that stack's `functionEnvironment`).
 */
export function startSenderEventSource(options: {
  readonly sqsEndpoint: string;
  readonly queueUrl: string;
  readonly queueArn: string;
  /**
   * The sender's environment: the stack's `functionEnvironment` (plus anything the caller adds); its
   * POSTDATE_SENDER_MAX_CONCURRENCY is also the number of pollers.
   */
  readonly environment: Readonly<Record<string, string>>;
  /** @default POSTDATE_SENDER_TIMEOUT_SECONDS of `environment` (its `loadConfig`), 240 s unset */
  readonly timeoutMs?: number;
  /** Modules each sender sandbox imports before the handler (see `LocalStackOptions.functionPreload`). */
  readonly preload?: readonly string[];
  /** Called once per invocation killed at its timeout (its batch comes back after the visibility timeout). */
  readonly onFunctionTimeout?: (kill: FunctionTimeoutKill) => void;
  readonly log: RunnerLog;
}): SqsRunner {
  const config = loadConfig(options.environment, 'local');
  const timeoutMs = options.timeoutMs ?? config.senderTimeoutSeconds * 1000;
  return startSenderQueue({
    sqsEndpoint: options.sqsEndpoint,
    queueUrl: options.queueUrl,
    queueArn: options.queueArn,
    // As many senders as the share of the rate each one takes (its environment's) assumes.
    maxConcurrency: config.senderMaxConcurrency,
    sender: localFunctionSandboxes('sender', {
      environment: options.environment,
      timeoutMs,
      ...(options.preload ? { preload: options.preload } : {}),
    }),
    onFunctionTimeout: options.onFunctionTimeout,
    log: options.log,
  });
}

function describeError(error: unknown): string {
  if (error === undefined) return '';
  return error instanceof Error ? `: ${error.name}: ${error.message}` : `: ${String(error)}`;
}
