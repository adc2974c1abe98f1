import { describe, expect, it } from 'vitest';
import { periodicSweep } from '../../local/periodicSweep.js';
import type { InvocationOutcome } from '../../local/runners/functionSandbox.js';

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
