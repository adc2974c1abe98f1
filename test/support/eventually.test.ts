import { afterEach, describe, expect, it, vi } from 'vitest';
import { eventually } from './eventually.js';

describe('eventually()', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('resolves with the first value that is neither undefined nor false', async () => {
    let probes = 0;
    const found = await eventually('the third probe', () => {
      probes += 1;
      return probes >= 3 ? { probes } : undefined;
    });
    expect(found).toEqual({ probes: 3 });
    expect(await eventually('a condition', async () => probes > 0)).toBe(true);
  });

  it('says what it waited for, and for how long, past the deadline', async () => {
    await expect(eventually('the moon', () => false, { withinMs: 30, everyMs: 5 })).rejects.toThrow(
      'waited 30 ms for the moon',
    );
    // A description given as a function is read at the deadline.
    let state = 'starting';
    const waiting = eventually(
      () => `the stack (last seen: ${state})`,
      () => undefined,
      { withinMs: 30 },
    );
    state = 'stuck';
    await expect(waiting).rejects.toThrow('waited 30 ms for the stack (last seen: stuck)');
  });

  it('fails at once when the probe throws', async () => {
    let probes = 0;
    const failing = eventually(
      'a probe that throws',
      () => {
        probes += 1;
        throw new Error('the table is gone');
      },
      { withinMs: 60_000 },
    );
    await expect(failing).rejects.toThrow('the table is gone');
    expect(probes).toBe(1);
  });

  it('waits 15 s when given no deadline: what crosses a process or the JVM may lag seconds on a loaded machine', async () => {
    // The clock moves a second per probe, so the default deadline is read without waiting it out.
    let now = 1_000_000;
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    let probes = 0;
    const found = await eventually(
      'a copy that shows up 12 s late',
      () => {
        probes += 1;
        now += 1000;
        return probes >= 12;
      },
      { everyMs: 1 },
    );
    expect(found).toBe(true);
    const never = () => {
      now += 1000;
      return false;
    };
    await expect(eventually('the moon', never, { everyMs: 1 })).rejects.toThrow(
      'waited 15000 ms for the moon',
    );
  });
});
