import { fileURLToPath } from 'node:url';
import { BroadcastChannel, isMainThread, threadId } from 'node:worker_threads';
import type { FunctionTimeoutKill } from '../local/localStack.js';
import { type ChaosChildParts, serveChaosChild } from './childProtocol.js';
import { installDynamoDbThrottling } from './throttleMiddleware.js';

/**
 * The sender alone — its SQS event source and handler — in its own process, next to a stack
 * process started with `CHAOS_SENDER=external`, so that the chaos run can SIGKILL the sender
 * mid-send without touching anything else, and start it again.
 *
 * Its environment is the stack's `functionEnvironment` (configuration, the emulators' endpoints,
 * the queue), plus the SMTP relay and `CHAOS_THROTTLE_RATE` (DynamoDB throttling, as in the stack
 * process). The sender runs in worker sandboxes killed at its function timeout
 * (POSTDATE_SENDER_TIMEOUT_SECONDS), as in the stack. It prints `CHAOS-READY {"pid"}` once polling,
 * then `CHAOS-STATS {json}` every half second: `throttled`, `dynamodbCalls`, and `timeoutKills`
 * (every invocation of this process killed at its timeout: `{functionName, startedAt, killedAt,
 * records}`, epoch ms).
 *
 * This file is also each sender sandbox's preload: imported in a worker (whose environment is this
 * process's plus the function's), it installs the DynamoDB faults there, where the handler's clients
 * live — the throttling and the whole-call faults of `CHAOS_OUTCOME_WRITE_FAILURE_RATE` and
 * `CHAOS_READ_FAILURE_RATE` (each announced as a `CHAOS-FAULT` line, chaos/throttleMiddleware.ts) —
 * and reports its throttling counts to the main thread.
 */

const THROTTLE_STATS_CHANNEL = 'postdate-chaos-sender-throttle';

interface SandboxThrottleStats {
  readonly threadId: number;
  readonly calls: number;
  readonly throttled: number;
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required (the stack's functionEnvironment)`);
  return value;
}

function throttleRate(): number {
  const rate = Number(process.env.CHAOS_THROTTLE_RATE ?? '0');
  if (!Number.isFinite(rate) || rate < 0 || rate > 1)
    throw new Error('CHAOS_THROTTLE_RATE: must be in [0, 1]');
  return rate;
}

/** In a sender sandbox: throttle its DynamoDB clients and post the counts every 200 ms. */
function throttleThisSandbox(): void {
  const stats = installDynamoDbThrottling(throttleRate(), Math.random);
  const channel = new BroadcastChannel(THROTTLE_STATS_CHANNEL);
  channel.unref();
  const post = () => {
    const message: SandboxThrottleStats = { threadId, calls: stats.calls, throttled: stats.throttled };
    channel.postMessage(message);
  };
  setInterval(post, 200).unref();
}

async function start(): Promise<ChaosChildParts> {
  throttleRate();
  // Each sandbox's last counts (a killed sandbox's last 200 ms are not counted).
  const sandboxes = new Map<number, SandboxThrottleStats>();
  const channel = new BroadcastChannel(THROTTLE_STATS_CHANNEL);
  channel.unref();
  channel.onmessage = (event) => {
    const stats = (event as { data: SandboxThrottleStats }).data;
    sandboxes.set(stats.threadId, stats);
  };
  const timeoutKills: FunctionTimeoutKill[] = [];
  const environment = Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  // Imported here, not at the top: this file is also the sandboxes' preload, which must stay light.
  const { startSenderEventSource } = await import('../local/localStack.js');
  const runner = startSenderEventSource({
    sqsEndpoint: required('AWS_ENDPOINT_URL_SQS'),
    queueUrl: required('POSTDATE_SEND_QUEUE_URL'),
    queueArn: required('POSTDATE_SEND_QUEUE_ARN'),
    environment,
    preload: [fileURLToPath(import.meta.url)],
    onFunctionTimeout: (kill) => {
      timeoutKills.push(kill);
      process.stderr.write(
        `sender event source: invocation of ${kill.records} message(s) killed at its timeout (started ${kill.startedAt}, killed ${kill.killedAt})\n`,
      );
    },
    log: (message, error) =>
      process.stderr.write(
        `sender event source: ${message}${error instanceof Error ? `: ${error.name}: ${error.message}` : ''}\n`,
      ),
  });
  const total = (field: 'calls' | 'throttled') =>
    [...sandboxes.values()].reduce((sum, stats) => sum + stats[field], 0);
  return {
    ready: { pid: process.pid },
    stats: () => ({ throttled: total('throttled'), dynamodbCalls: total('calls'), timeoutKills }),
    stop: async () => {
      await runner.stop();
      channel.close();
    },
  };
}

if (isMainThread) serveChaosChild(start);
else throttleThisSandbox();
