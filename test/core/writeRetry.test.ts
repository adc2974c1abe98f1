import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isOwnEarlierWrite,
  nextWriteTry,
  WRITE_RETRY_CAP_MS,
  WRITE_RETRY_FLOOR_MS,
} from '../../lambdas/core/writeRetry.js';

/**
 * DESIGN §5, "Never out of time mid-send": the outcome write after a 250 is retried until it lands
 * or the time is up. Each pause is real (the clock runs down between tries), capped, and no try is
 * started without the floor left; a conflict after a lost answer is recognised as our own write.
 */

describe('the pause between tries of a write after the claim', () => {
  it('is never 0, doubles up to the cap, and gives up rather than start a try without the floor left', () => {
    fc.assert(
      fc.property(
        fc.nat(40),
        fc.integer({ min: 0, max: 600_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (tries, remaining, draw) => {
          const step = nextWriteTry(tries, remaining, () => draw);
          const ceiling = Math.min(WRITE_RETRY_CAP_MS, 100 * 2 ** tries);
          if (step.kind === 'give-up') {
            expect(remaining - Math.round(ceiling / 2 + draw * (ceiling / 2))).toBeLessThan(
              WRITE_RETRY_FLOOR_MS,
            );
            return;
          }
          expect(step.pauseMs).toBeGreaterThan(0);
          expect(step.pauseMs).toBeGreaterThanOrEqual(ceiling / 2);
          expect(step.pauseMs).toBeLessThanOrEqual(WRITE_RETRY_CAP_MS);
          expect(remaining - step.pauseMs).toBeGreaterThanOrEqual(WRITE_RETRY_FLOOR_MS);
        },
      ),
    );
  });

  it('starts at 50–100 ms and keeps trying while there is time', () => {
    expect(nextWriteTry(0, 60_000, () => 0)).toEqual({ kind: 'retry', pauseMs: 50 });
    expect(nextWriteTry(0, 60_000, () => 0.999)).toEqual({ kind: 'retry', pauseMs: 100 });
    expect(nextWriteTry(10, 60_000, () => 0.999)).toEqual({ kind: 'retry', pauseMs: 1999 });
    expect(nextWriteTry(10, 2400, () => 0.999)).toEqual({ kind: 'give-up' });
  });
});

describe('a lost condition after a try whose answer was lost', () => {
  const at = new Date('2026-12-01T09:00:00.000Z');
  it('is our own write exactly when the record has our status, our time and no lease', () => {
    const ours = { status: 'sent', at } as const;
    expect(isOwnEarlierWrite({ status: 'sent', updated_at: at.toISOString() }, ours)).toBe(true);
    expect(isOwnEarlierWrite({ status: 'sent', updated_at: at.toISOString(), lease_owner: 'b' }, ours)).toBe(
      false,
    );
    expect(isOwnEarlierWrite({ status: 'retrying', updated_at: at.toISOString() }, ours)).toBe(false);
    expect(
      isOwnEarlierWrite({ status: 'sent', updated_at: new Date(at.getTime() + 1).toISOString() }, ours),
    ).toBe(false);
    expect(isOwnEarlierWrite(undefined, ours)).toBe(false);
  });

  it('is our own claim exactly when the record is sending, at our time, under our lease (DESIGN §5)', () => {
    const ours = { status: 'sending', at, lease: 'ours' } as const;
    const claimed = { status: 'sending', updated_at: at.toISOString(), lease_owner: 'ours' } as const;
    expect(isOwnEarlierWrite(claimed, ours)).toBe(true);
    expect(isOwnEarlierWrite({ ...claimed, lease_owner: 'theirs' }, ours)).toBe(false);
    expect(isOwnEarlierWrite({ status: 'sending', updated_at: at.toISOString() }, ours)).toBe(false);
    expect(
      isOwnEarlierWrite({ ...claimed, updated_at: new Date(at.getTime() + 1).toISOString() }, ours),
    ).toBe(false);
  });
});
