import { describe, expect, it } from 'vitest';
import { periodicSweep } from '../../local/periodicSweep.js';
import type { InvocationOutcome } from '../../local/runners/functionSandbox.js';
import { eventually } from '../support/eventually.js';

/**
 * The local sweeper's runs (local/periodicSweep.ts). The SQS emulator keeps its queues in memory, so
 * a stack started on a kept data dir has lost every copy the sweeper stamped before (decision 0180):
 * the runs tell the sweeper once, in the first run that completes, when the queue was emptied.
 */
function recordingSweeper(outcomes: InvocationOutcome<unknown>['kind'][]) {
  const events: unknown[] = [];
  return {
    events,
    sweeper: {
      name: 'sweeper',
      async invoke<R>(_slot: number, event: unknown): Promise<InvocationOutcome<R>> {
        events.push(event);
        const kind = outcomes.shift() ?? 'returned';
        if (kind === 'threw') return { kind, error: new Error('a shard could not be read') };
        if (kind === 'timedOut') return { kind, startedAt: 0, killedAt: 1 };
        return { kind, value: undefined };
      },
    },
  };
}

describe('the local sweeper after a start', () => {
  const queueEmptiedAt = new Date('2026-12-04T10:00:00.000Z');

  it('tells its first run when the send queue was emptied, and no later run', async () => {
    const { sweeper, events } = recordingSweeper([]);
    const sweep = periodicSweep(
      sweeper,
      () => {},
      () => {},
      { queueEmptiedAt },
    );
    await sweep.runOnce();
    await sweep.runOnce();
    expect(events[0]).toEqual({ queueEmptiedAt: queueEmptiedAt.toISOString() });
    expect(events[1]).toMatchObject({ 'detail-type': 'Scheduled Event' });
    expect(events[1]).not.toHaveProperty('queueEmptiedAt');
  });

  it('tells it again until a run completes (one that threw or timed out may have stopped short)', async () => {
    const { sweeper, events } = recordingSweeper(['threw', 'timedOut', 'returned']);
    const sweep = periodicSweep(
      sweeper,
      () => {},
      () => {},
      { queueEmptiedAt },
    );
    for (let run = 0; run < 4; run++) await sweep.runOnce();
    expect(events.map((event) => Object.hasOwn(event as object, 'queueEmptiedAt'))).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });
});

/**
 * A sweeper stand-in whose runs the test ends: each invocation writes `start n` to `log`, and ends
 * (`end n`) when the test calls `finish()` (the oldest open one), or at once once `holding` is off.
 */
function heldSweeper(log: string[]) {
  const open: (() => void)[] = [];
  let runs = 0;
  let holding = true;
  return {
    sweeper: {
      name: 'sweeper',
      async invoke<R>(_slot: number, _event: unknown): Promise<InvocationOutcome<R>> {
        runs += 1;
        const run = runs;
        log.push(`start ${run}`);
        if (holding) await new Promise<void>((resolve) => open.push(resolve));
        log.push(`end ${run}`);
        return { kind: 'returned', value: undefined };
      },
    },
    /** Ends the oldest run under way, and lets every later run end at once. */
    finish() {
      holding = false;
      open.shift()?.();
    },
    started: () => runs,
  };
}

describe('a sweep asked for', () => {
  it('is a whole run that starts after the ask, not the run already under way', async () => {
    const log: string[] = [];
    const { sweeper, finish, started } = heldSweeper(log);
    const sweep = periodicSweep(
      sweeper,
      () => {},
      () => {},
    );
    const first = sweep.runOnce();
    await eventually('the first run under way', () => started() === 1);
    // A caller that wrote something the first run may already have read past, and asks for a sweep.
    log.push('asked');
    const asked = sweep.runOnce().then(() => log.push('answered'));
    finish();
    await Promise.all([first, asked]);
    expect(log).toEqual(['start 1', 'asked', 'end 1', 'start 2', 'end 2', 'answered']);
  });

  it('shares one next run among every caller that asked while a run was under way', async () => {
    const log: string[] = [];
    const { sweeper, finish, started } = heldSweeper(log);
    const sweep = periodicSweep(
      sweeper,
      () => {},
      () => {},
    );
    const first = sweep.runOnce();
    await eventually('the first run under way', () => started() === 1);
    log.push('asked');
    const asks = [1, 2, 3].map((caller) => sweep.runOnce().then(() => log.push(`answered ${caller}`)));
    finish();
    await Promise.all([first, ...asks]);
    expect(log).toEqual([
      'start 1',
      'asked',
      'end 1',
      'start 2',
      'end 2',
      'answered 1',
      'answered 2',
      'answered 3',
    ]);
  });

  it('is run at once when no run is under way', async () => {
    const log: string[] = [];
    const { sweeper, finish } = heldSweeper(log);
    finish();
    const sweep = periodicSweep(
      sweeper,
      () => {},
      () => {},
    );
    await sweep.runOnce();
    await sweep.runOnce();
    expect(log).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
  });

  it('is not run once the sweep is stopping; stop() waits for the run under way', async () => {
    const log: string[] = [];
    const { sweeper, finish, started } = heldSweeper(log);
    const sweep = periodicSweep(
      sweeper,
      () => {},
      () => {},
    );
    void sweep.runOnce();
    await eventually('the first run under way', () => started() === 1);
    const asked = sweep.runOnce().then(() => log.push('answered'));
    const stopped = sweep.stop().then(() => log.push('stopped'));
    log.push('stop asked');
    finish();
    await Promise.all([asked, stopped]);
    await sweep.runOnce();
    // No run of a stopped sweep: its sandbox is closed next, and an invocation would start it again.
    expect(log.filter((line) => line.startsWith('start'))).toEqual(['start 1']);
    expect(log.indexOf('stopped')).toBeGreaterThan(log.indexOf('end 1'));
  });
});
