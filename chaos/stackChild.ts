import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { LocalStreamDiscard } from '../local/localStack.js';
import { FAULT_LINE_PREFIX, type FaultLine } from './throttleMiddleware.js';

/** An invocation the local runner killed at its function timeout (epoch ms), as a child reports it. */
export interface TimeoutKill {
  readonly functionName: string;
  readonly startedAt: number;
  readonly killedAt: number;
  /** Records in the killed invocation's event (a count), or their message ids where a child has them. */
  readonly records: number | readonly string[];
}

/** What a started stack process reports (its `CHAOS-READY` line). */
export interface StackEndpoints {
  readonly pid: number;
  readonly apiUrl: string;
  readonly apiKey: string;
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
  readonly tableName: string;
  readonly sendQueueUrl: string;
  readonly sendQueueArn: string;
  /** What the handlers read at cold start: given to a sender process run next to the stack. */
  readonly functionEnvironment: Readonly<Record<string, string>>;
}

export interface StackStats {
  readonly throttled: number;
  readonly dynamodbCalls: number;
  readonly replays: { readonly batches: number; readonly records: number };
  /** Schedule invocations, the extra copies of double firings, and firings ≥ 0.5 s late. */
  readonly scheduler: { readonly fires: number; readonly firedTwice: number; readonly late: number };
  /** Invocations of this process's sandboxes killed at their function timeout. */
  readonly timeoutKills?: readonly TimeoutKill[];
  /** Stream batches the relay's or the event producer's runner gave up on after their retries. */
  readonly streamDiscards?: readonly LocalStreamDiscard[];
}

/** What a sender process reports (`chaos/senderProcess.ts`). */
export interface SenderStats {
  readonly throttled: number;
  readonly dynamodbCalls: number;
  readonly timeoutKills?: readonly TimeoutKill[];
}

/** A chaos child process: one of `chaos/stackProcess.ts` or `chaos/senderProcess.ts`. */
export interface ChaosChild<Ready, Stats> {
  readonly endpoints: Ready;
  /** The last stats line it printed (a killed process cannot report at exit). */
  stats(): Stats;
  /**
   * Every whole-call DynamoDB fault injected in it or its sandboxes, from their `CHAOS-FAULT` lines
   * (chaos/throttleMiddleware.ts).
   */
  faults(): readonly FaultLine[];
  /** SIGKILL to the whole process group: the tsx wrapper, node, and (for the stack) DynamoDB Local's JVM. */
  kill(): Promise<void>;
  /** SIGTERM: a clean stop. */
  stop(): Promise<void>;
}

export type StackChild = ChaosChild<StackEndpoints, StackStats>;
export type SenderChild = ChaosChild<{ readonly pid: number }, SenderStats>;

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const EMPTY_STACK_STATS: StackStats = {
  throttled: 0,
  dynamodbCalls: 0,
  replays: { batches: 0, records: 0 },
  scheduler: { fires: 0, firedTwice: 0, late: 0 },
};

/**
 * Starts `chaos/stackProcess.ts` under tsx in its own process group (so that a SIGKILL reaches the
 * JVM too) and resolves once it printed `CHAOS-READY`.
 */
export function startStackChild(env: Record<string, string>, timeoutMs = 120_000): Promise<StackChild> {
  return startChaosChild<StackEndpoints, StackStats>('stackProcess.ts', env, EMPTY_STACK_STATS, timeoutMs);
}

/**
 * Starts `chaos/senderProcess.ts`: the sender's SQS event source and handler against a running
 * stack's emulators, in its own process group so that it can be SIGKILLed alone.
 */
export function startSenderChild(env: Record<string, string>, timeoutMs = 60_000): Promise<SenderChild> {
  return startChaosChild<{ pid: number }, SenderStats>(
    'senderProcess.ts',
    env,
    { throttled: 0, dynamodbCalls: 0 },
    timeoutMs,
  );
}

function startChaosChild<Ready, Stats>(
  script: string,
  env: Record<string, string>,
  emptyStats: Stats,
  timeoutMs: number,
): Promise<ChaosChild<Ready, Stats>> {
  const child: ChildProcess = spawn(
    join(ROOT, 'node_modules', '.bin', 'tsx'),
    [join(ROOT, 'chaos', script)],
    {
      cwd: ROOT,
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let lastStats = emptyStats;
  const faults: FaultLine[] = [];
  let stderr = '';
  const keep = keptOutput(script, child.pid);
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
    keep?.(chunk.toString().trimEnd());
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup(child);
      reject(new Error(`${script} was not ready within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited (${code}) before it was ready:\n${stderr}`));
    });
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on('line', (line) => {
      if (line.startsWith(FAULT_LINE_PREFIX)) {
        try {
          faults.push(JSON.parse(line.slice(FAULT_LINE_PREFIX.length)) as FaultLine);
        } catch {
          // A line cut by a kill.
        }
      } else if (line.startsWith('CHAOS-STATS ')) {
        lastStats = JSON.parse(line.slice('CHAOS-STATS '.length)) as Stats;
      } else if (line.startsWith('CHAOS-READY ')) {
        clearTimeout(timer);
        const endpoints = JSON.parse(line.slice('CHAOS-READY '.length)) as Ready;
        keep?.(line);
        resolve({
          endpoints,
          stats: () => lastStats,
          faults: () => faults,
          async kill() {
            killGroup(child);
            await exited;
          },
          async stop() {
            if (child.pid !== undefined) process.kill(child.pid, 'SIGTERM');
            const timeout = setTimeout(() => killGroup(child), 30_000);
            await exited;
            clearTimeout(timeout);
            killGroup(child);
          },
        });
      } else keep?.(line);
    });
  });
}

/**
 * With CHAOS_STACK_LOG set to a file, a child's other output (the stack's log, which it then prints:
 * chaos/stackProcess.ts) is appended there, each line stamped with the time and the child's pid.
 */
function keptOutput(script: string, pid: number | undefined): ((text: string) => void) | undefined {
  const file = process.env.CHAOS_STACK_LOG;
  if (!file) return undefined;
  return (text) => {
    const at = new Date().toISOString();
    const lines = text.split('\n').map((line) => `${at} ${script}[${pid}] ${line}\n`);
    appendFileSync(file, lines.join(''));
  };
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}
