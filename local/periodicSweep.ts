import { randomUUID } from 'node:crypto';
import type { ScheduledEvent } from 'aws-lambda';
import type { FunctionSandboxes, FunctionTimeout } from './runners/functionSandbox.js';

/** The local sweeper runs at start and then this often (5 min in AWS). */
export const DEFAULT_SWEEP_INTERVAL_MS = 30_000;

export interface PeriodicSweep {
  /** Runs the sweeper now, or joins the run under way. */
  runOnce(): Promise<void>;
  start(intervalMs: number): void;
  /** Stops the timer and waits for a run under way. */
  stop(): Promise<void>;
}

/**
 * The sweeper at start and on a timer, in its sandbox, as the deployed schedule invokes it; a run
 * never overlaps the previous one. Without a sweeper every run is a no-op.
 *
 * `queueEmptiedAt`: the SQS emulator keeps its queues in memory, so a stack started on a kept data
 * dir has lost every copy sent before; the runs say so, as an operator would after a purge, until
 * one completes (the sweeper re-dispatches what it had stamped before: decision 0180).
 */
export function periodicSweep(
  sweeper: Pick<FunctionSandboxes, 'name' | 'invoke'> | undefined,
  log: (line: string) => void,
  onTimeout: (kill: FunctionTimeout) => void,
  options: { readonly queueEmptiedAt?: Date } = {},
): PeriodicSweep {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let emptied = options.queueEmptiedAt;
  const runOnce = async (): Promise<void> => {
    if (!sweeper) return;
    if (running) return running;
    running = (async () => {
      try {
        const told = emptied;
        const event = told === undefined ? scheduledEvent() : { queueEmptiedAt: told.toISOString() };
        const outcome = await sweeper.invoke(0, event);
        if (outcome.kind === 'returned') emptied = undefined;
        if (outcome.kind === 'threw') {
          log(`sweeper: ${outcome.error.name}: ${outcome.error.message}`);
        } else if (outcome.kind === 'timedOut') {
          onTimeout({
            functionName: sweeper.name,
            startedAt: outcome.startedAt,
            killedAt: outcome.killedAt,
            records: 0,
          });
        }
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
  return {
    runOnce,
    start(intervalMs: number) {
      timer = setInterval(() => void runOnce(), intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

/** The event EventBridge gives a scheduled rule's target. */
function scheduledEvent(): ScheduledEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: 'us-east-1',
    resources: ['arn:aws:events:us-east-1:000000000000:rule/postdate-local-sweep'],
    detail: {},
  };
}
