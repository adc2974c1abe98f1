import { randomUUID } from 'node:crypto';
import type { ScheduledEvent } from 'aws-lambda';
import type { FunctionSandboxes, FunctionTimeout } from './runners/functionSandbox.js';

/** The local sweeper runs at start and then this often (5 min in AWS). */
export const DEFAULT_SWEEP_INTERVAL_MS = 30_000;

export interface PeriodicSweep {
  /**
   * A whole sweeper run that starts after this call: now, or once the run under way ends (every
   * caller that asked meanwhile shares that next run). A caller that wrote something and then asks
   * is answered by a run that read it. Once `stop()` is called nothing runs.
   */
  runOnce(): Promise<void>;
  /** Runs the sweeper every `intervalMs`; a tick while a run is under way joins it. */
  start(intervalMs: number): void;
  /** Stops the timer and waits for the run under way (and one asked for, if it started). */
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
  let stopped = false;
  /** The run under way. */
  let running: Promise<void> | undefined;
  /** The run the callers who asked while one was under way wait for, once that one ends. */
  let next: Promise<void> | undefined;
  let emptied = options.queueEmptiedAt;
  const sweepNow = async (sweeper: Pick<FunctionSandboxes, 'name' | 'invoke'>): Promise<void> => {
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
  };
  // A run never overlaps another: one starts only when none is under way.
  const run = (): Promise<void> => {
    if (!sweeper || stopped) return Promise.resolve();
    const current = sweepNow(sweeper).finally(() => {
      if (running === current) running = undefined;
    });
    running = current;
    return current;
  };
  const runOnce = (): Promise<void> => {
    const under = running;
    if (under === undefined) return run();
    next ??= under
      .catch(() => undefined)
      .then(() => {
        next = undefined;
        // A run another caller started once this one ended also started after the ask.
        return running ?? run();
      });
    return next;
  };
  return {
    runOnce,
    start(intervalMs: number) {
      const tick = () => (running ?? run()).catch((error: unknown) => log(`sweeper: ${String(error)}`));
      timer = setInterval(() => void tick(), intervalMs);
      timer.unref();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await next;
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
