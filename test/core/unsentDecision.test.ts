import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import { checkTransition } from '../../lambdas/core/stateMachine.js';
import {
  decideUnsent,
  isPastDeadline,
  isSupersededBy,
  needsGroupHead,
} from '../../lambdas/core/unsentDecision.js';

/**
 * What must not go out (DESIGN §4 freshness, §5 deadlines): past `not_after` a message becomes
 * `expired` instead of being sent; a message whose group has a newer version is `superseded`; the
 * sender settles either only where the state machine lets it, and otherwise sends nothing.
 */

const NOW = new Date('2026-12-01T09:00:00.000Z');
const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs).toISOString();

describe('the deadline', () => {
  it('has passed only for a readable time before now', () => {
    expect(isPastDeadline(at(-1), NOW)).toBe(true);
    expect(isPastDeadline(at(0), NOW)).toBe(false);
    expect(isPastDeadline(at(1), NOW)).toBe(false);
    expect(isPastDeadline(null, NOW)).toBe(false);
    expect(isPastDeadline(undefined, NOW)).toBe(false);
    expect(isPastDeadline('not a time', NOW)).toBe(false);
  });
});

describe('the group check', () => {
  it('finds a message superseded exactly when its group head is above its version', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }),
        (version, head) => {
          expect(isSupersededBy({ key: 'g', version }, head)).toBe(head !== undefined && head > version);
          expect(isSupersededBy(null, head)).toBe(false);
          expect(isSupersededBy(undefined, head)).toBe(false);
        },
      ),
    );
  });

  it('is read only for a grouped message that is not already past its deadline', () => {
    expect(needsGroupHead({ status: 'scheduled', group: { key: 'g', version: 1 } }, NOW)).toBe(true);
    expect(
      needsGroupHead({ status: 'scheduled', group: { key: 'g', version: 1 }, not_after: at(-1) }, NOW),
    ).toBe(false);
    expect(needsGroupHead({ status: 'scheduled', group: null }, NOW)).toBe(false);
  });
});

describe('deciding what must not go out', () => {
  it('sends a live, current message and expires one past its deadline even when superseded', () => {
    const group = { key: 'g', version: 2 };
    expect(decideUnsent({ status: 'scheduled', group, not_after: at(60_000) }, NOW, 2)).toEqual({
      kind: 'send',
    });
    expect(decideUnsent({ status: 'retrying', group, not_after: at(-1) }, NOW, 3)).toEqual({
      kind: 'settle',
      to: 'expired',
    });
    expect(decideUnsent({ status: 'scheduled', group }, NOW, 3)).toEqual({
      kind: 'settle',
      to: 'superseded',
    });
  });

  it('drops, never settles, where the state machine forbids the move (a redriven dead message past its deadline)', () => {
    const decision = decideUnsent({ status: 'dead', not_after: at(-1) }, NOW, undefined);
    expect(decision).toMatchObject({ kind: 'drop', to: 'expired', reason: 'past not_after' });
  });

  it('never sends what is past its deadline or superseded, and settles only along the state machine', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...MESSAGE_STATUSES),
        fc.option(fc.integer({ min: -60_000, max: 60_000 }), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
        (status, deadlineOffset, version, head) => {
          const record = {
            status,
            not_after: deadlineOffset === undefined ? null : at(deadlineOffset),
            group: version === undefined ? null : { key: 'g', version },
          };
          const decision = decideUnsent(record, NOW, head);
          const past = deadlineOffset !== undefined && deadlineOffset < 0;
          const superseded = version !== undefined && head !== undefined && head > version;
          if (!past && !superseded) {
            expect(decision).toEqual({ kind: 'send' });
            return;
          }
          expect(decision.kind).not.toBe('send');
          if (decision.kind === 'send') return;
          expect(decision.to).toBe(past ? 'expired' : 'superseded');
          expect(decision.kind === 'settle').toBe(checkTransition(status, decision.to, 'sender').allowed);
        },
      ),
    );
  });
});
