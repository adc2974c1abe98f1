import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { loadConfig } from '../lambdas/core/config.js';
import { RELAY_STREAM_FILTER } from '../lambdas/store/tableLayout.js';
import { lambdaContext } from '../local/http/lambdaContext.js';
import { ANY_FREE_PORTS } from '../local/localEnv.js';
import { type FunctionTimeoutKill, type LocalStreamDiscard, startLocalStack } from '../local/localStack.js';
import { startStreamRunner } from '../local/runners/streamRunner.js';
import { type ChaosChildParts, serveChaosChild } from './childProtocol.js';
import {
  installDynamoDbThrottling,
  type ThrottleStats,
  type WholeCallFaults,
  wholeCallFaultsFromEnv,
} from './throttleMiddleware.js';

/**
 * The local stack in its own process, so that the chaos and restart runs can SIGKILL it (with its
 * DynamoDB Local JVM: the parent kills the whole process group) and start it again on the same data
 * dir. Configuration comes from the environment exactly as for `npm start`, plus:
 *
 * - `CHAOS_DATA_DIR`: the data dir (required);
 * - `CHAOS_SWEEP_INTERVAL_MS`: how often the sweeper runs (default 2000);
 * - `CHAOS_THROTTLE_RATE`: the fraction of DynamoDB calls that throw a throttling error before they
 *   are sent (an SDK middleware; default 0);
 * - `CHAOS_REPLAY_RATE`: the fraction of stream batches handed to the relay a second time, by a
 *   second event source over the same stream (default 0);
 * - `CHAOS_SCHEDULER_FIRE_TWICE_RATE`: the fraction of schedule firings the Scheduler emulator
 *   delivers twice (default 0);
 * - `CHAOS_SCHEDULER_LATE_RATE`, `CHAOS_SCHEDULER_LATE_MS`: the fraction of schedules that fire late,
 *   and by up to how many ms (defaults 0 and 5000);
 * - `CHAOS_SENDER=external`: no sender here; `chaos/senderProcess.ts` runs it with the
 *   `functionEnvironment` this process reports (so that the sender can be SIGKILLed alone);
 * - `CHAOS_OUTCOME_WRITE_FAILURE_RATE`, `CHAOS_READ_FAILURE_RATE`: the sender's DynamoDB faults
 *   above the SDK's retry (chaos/throttleMiddleware.ts), when the sender runs here (default 0).
 *
 * The relay, the sweeper and an in-process sender run in worker sandboxes (the local stack kills an
 * invocation at its function timeout, as Lambda does): each sandbox imports a preload written into
 * the data dir that installs the same faults in its thread, where the handler's clients live. Each
 * timeout kill is reported in the stats (`timeoutKills`).
 *
 * It prints one `CHAOS-READY {json}` line when the API answers, then `CHAOS-STATS {json}` every
 * half second (the parent keeps the last one it saw: a killed process cannot report at exit).
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function rate(name: string): number {
  const value = Number(process.env[name] ?? '0');
  if (!Number.isFinite(value) || value < 0 || value > 1)
    throw new Error(`${name}: must be a number in [0, 1]`);
  return value;
}

async function start(): Promise<ChaosChildParts> {
  const dataDir = process.env.CHAOS_DATA_DIR;
  if (!dataDir) throw new Error('CHAOS_DATA_DIR is required');
  const config = loadConfig(process.env, 'local');
  const scheduler = { fires: 0, firedTwice: 0, late: 0 };
  const fireTwiceRate = rate('CHAOS_SCHEDULER_FIRE_TWICE_RATE');
  const lateRate = rate('CHAOS_SCHEDULER_LATE_RATE');
  const lateMs = Number(process.env.CHAOS_SCHEDULER_LATE_MS ?? '5000');
  if (!Number.isInteger(lateMs) || lateMs < 0)
    throw new Error('CHAOS_SCHEDULER_LATE_MS: must be an integer ≥ 0');
  const throttleRate = rate('CHAOS_THROTTLE_RATE');
  const senderHere = process.env.CHAOS_SENDER !== 'external';
  // The whole-call faults aim at the sender's writes and reads: none when the sender is elsewhere.
  const wholeCall: WholeCallFaults = senderHere
    ? wholeCallFaultsFromEnv(process.env)
    : { outcomeWriteFailureRate: 0, readFailureRate: 0 };
  const timeoutKills: FunctionTimeoutKill[] = [];
  const streamDiscards: LocalStreamDiscard[] = [];
  const stack = await startLocalStack({
    config,
    dataDir,
    ports: ANY_FREE_PORTS,
    // CHAOS_STACK_LOG: the stack's log is kept by the harness (chaos/stackChild.ts).
    quiet: !process.env.CHAOS_STACK_LOG,
    sweepIntervalMs: Number(process.env.CHAOS_SWEEP_INTERVAL_MS ?? '2000'),
    sender: senderHere ? 'in-process' : 'external',
    functionPreload: [faultPreload(dataDir, throttleRate, wholeCall)],
    onFunctionTimeout: (kill) => {
      timeoutKills.push(kill);
    },
    onStreamDiscard: (discard) => {
      streamDiscards.push(discard);
    },
    // Scheduler is at-least-once and precise to about a minute: double and late firings.
    schedulerFaults: {
      fireTwice: () => Math.random() < fireTwiceRate,
      // Asked when a schedule is armed: late by 0.5 s to lateMs (past the sweeper's grace at most).
      delayMs: () =>
        Math.random() < lateRate ? 500 + Math.floor(Math.random() * Math.max(0, lateMs - 500)) : 0,
    },
    onScheduleFire: (event) => {
      if (event.copy === 2) scheduler.firedTwice += 1;
      else {
        scheduler.fires += 1;
        if (event.firedAtMs - event.scheduledAtMs >= 500) scheduler.late += 1;
      }
    },
  });

  // The api and the authorizer run in this thread: throttled, but no whole-call faults (the API's
  // own body reads are not the sender's).
  const throttle: ThrottleStats = installDynamoDbThrottling(throttleRate, Math.random, {});

  // A second event source over the same stream: the relay sees a fraction of the batches twice,
  // as it does in AWS when a batch is retried after a partial success or a timeout.
  const replayRate = rate('CHAOS_REPLAY_RATE');
  const replays = { batches: 0, records: 0 };
  let replayRunner: { stop(): Promise<void> } | undefined;
  const relayFile = join(ROOT, 'lambdas', 'relay', 'handler.ts');
  if (replayRate > 0 && existsSync(relayFile)) {
    type RelayModule = {
      handler: (event: DynamoDBStreamEvent, context: unknown) => Promise<DynamoDBBatchResponse | undefined>;
    };
    const relayModule = await (
      import(`${pathToFileURL(relayFile).href}?chaos-replay`) as Promise<RelayModule>
    ).catch((error: unknown) => {
      process.stderr.write(
        `CHAOS-WARN no stream replays: the relay handler failed to load: ${String(error)}\n`,
      );
      return undefined;
    });
    if (relayModule)
      replayRunner = startStreamRunner({
        dynamodbEndpoint: stack.dynamodbEndpoint,
        streamArn: stack.streamArn,
        filter: RELAY_STREAM_FILTER,
        batchSize: 100,
        maxAttempts: 2,
        startingPosition: 'TRIM_HORIZON',
        pollIntervalMs: 300,
        log: () => undefined,
        handler: async (event) => {
          if (Math.random() >= replayRate) return undefined;
          replays.batches += 1;
          replays.records += event.Records.length;
          return relayModule.handler(event, lambdaContext('postdate-relay-replay', 60_000));
        },
      });
  }

  return {
    ready: {
      pid: process.pid,
      apiUrl: stack.apiUrl,
      apiKey: stack.apiKey,
      sqsEndpoint: stack.sqsEndpoint,
      dynamodbEndpoint: stack.dynamodbEndpoint,
      tableName: stack.tableName,
      sendQueueUrl: stack.queueUrls.send,
      sendQueueArn: stack.queueArns.send,
      functionEnvironment: stack.functionEnvironment,
    },
    stats: () => ({
      throttled: throttle.throttled,
      dynamodbCalls: throttle.calls,
      replays,
      scheduler,
      timeoutKills,
      streamDiscards,
    }),
    stop: async () => {
      await replayRunner?.stop();
      await stack.stop();
    },
  };
}

/**
 * A preload for the function sandboxes (their environment is the functions', without the CHAOS_*
 * variables): a module in the data dir that installs this run's DynamoDB faults in its thread.
 */
function faultPreload(dataDir: string, throttleRate: number, wholeCall: WholeCallFaults): string {
  const file = join(dataDir, 'chaos-fault-preload.mjs');
  const middleware = join(ROOT, 'chaos', 'throttleMiddleware.ts');
  writeFileSync(
    file,
    `// Written by chaos/stackProcess.ts: this run's DynamoDB faults, in each function sandbox.\n` +
      `import { installDynamoDbThrottling } from ${JSON.stringify(middleware)};\n` +
      `installDynamoDbThrottling(${throttleRate}, Math.random, ${JSON.stringify(wholeCall)});\n`,
  );
  return file;
}

serveChaosChild(start);
