import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bodyOrphaned,
  discardedAt,
  expiresAtAfter,
  lifetimeChange,
  mayBeDeleted,
  RETAINED_STATUSES,
  retentionRanOut,
  startsRetention,
  type TtlWrite,
} from '../../lambdas/core/messageLifetime.js';
import {
  isTerminal,
  isWaitingForOperator,
  MESSAGE_STATUS,
  MESSAGE_STATUSES,
  type MessageStatus,
} from '../../lambdas/core/messageStatus.js';
import { TRANSITIONS } from '../../lambdas/core/stateMachine.js';
import { isLiveSide, testSideOf } from '../../lambdas/core/testSide.js';

/**
 * DESIGN §2: "No TTL deletes a message that is not terminal, or its body or attachments, however long
 * it waits …; dead, failed and unknown wait for an operator the same way. Only a terminal status
 * starts the retention clock." Random lives of a message through the state machine's transitions
 * (and an operator's discard), applying lifetimeChange the way the store does — body removals before
 * the state write, body TTLs after it — and a crash possible between the two writes of any step.
 * On a tenant's test side nobody waits for a failed, dead or unknown message (DESIGN §14, decision
 * 0135 takes it out of every operator's view): it ends there (decision 0145).
 */

const RETENTION_DAYS = 30;
const DAY_MS = 86_400_000;
const LIVE = 'acme';
const TEST_SIDE = testSideOf(LIVE);

interface Records {
  status: MessageStatus;
  stateTtl: number | undefined;
  bodyTtl: number | undefined;
}

type Step =
  | { readonly op: 'transition'; readonly pick: number; readonly days: number; readonly crash: boolean }
  | { readonly op: 'discard'; readonly days: number; readonly crash: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant('transition' as const),
    pick: fc.nat(),
    days: fc.integer({ min: 0, max: 400 }),
    crash: fc.boolean(),
  }),
  fc.record({
    op: fc.constant('discard' as const),
    days: fc.integer({ min: 0, max: 400 }),
    crash: fc.boolean(),
  }),
);

function apply(write: TtlWrite, current: number | undefined): number | undefined {
  if (write.kind === 'keep') return current;
  return write.kind === 'set' ? write.expiresAt : undefined;
}

describe('lifetimeChange', () => {
  it('starts the retention only in final statuses; failed, dead and unknown wait without one', () => {
    expect([...RETAINED_STATUSES].sort()).toEqual([
      'cancelled',
      'expired',
      'sent',
      'superseded',
      'suppressed',
    ]);
    for (const status of MESSAGE_STATUSES) {
      const final = isTerminal(status) && !isWaitingForOperator(status);
      expect(startsRetention(status, LIVE)).toBe(final);
    }
  });

  it('starts it on the test side in failed, dead and unknown too: no operator is told of them (decision 0145)', () => {
    for (const status of MESSAGE_STATUSES) {
      expect([status, startsRetention(status, TEST_SIDE)]).toEqual([status, isTerminal(status)]);
    }
    const now = new Date('2026-12-01T09:00:00.000Z');
    const expiresAt = expiresAtAfter(now, RETENTION_DAYS);
    for (const to of ['failed', 'dead', 'unknown'] as const) {
      expect(
        lifetimeChange({
          currentExpiresAt: undefined,
          to,
          tenant: TEST_SIDE,
          now,
          retentionDays: RETENTION_DAYS,
        }),
      ).toEqual({ state: { kind: 'set', expiresAt }, body: { kind: 'set', expiresAt } });
      expect(
        lifetimeChange({ currentExpiresAt: undefined, to, tenant: LIVE, now, retentionDays: RETENTION_DAYS }),
      ).toEqual({ state: { kind: 'remove' }, body: { kind: 'keep' } });
    }
    // Its retry with the test key takes the message back: both TTLs come off, the body's first.
    expect(
      lifetimeChange({
        currentExpiresAt: expiresAt,
        to: 'scheduled',
        tenant: TEST_SIDE,
        now,
        retentionDays: 0,
      }),
    ).toEqual({ state: { kind: 'remove' }, body: { kind: 'remove' } });
  });

  it('sets both TTLs one retention from now on a final status or a discard', () => {
    const now = new Date('2026-12-01T09:00:00.000Z');
    const expiresAt = expiresAtAfter(now, RETENTION_DAYS);
    expect(expiresAt).toBe(Date.parse('2026-12-31T09:00:00.000Z') / 1000);
    for (const to of ['sent', 'superseded'] as const) {
      expect(
        lifetimeChange({ currentExpiresAt: undefined, to, tenant: LIVE, now, retentionDays: RETENTION_DAYS }),
      ).toEqual({
        state: { kind: 'set', expiresAt },
        body: { kind: 'set', expiresAt },
      });
    }
    expect(
      lifetimeChange({
        currentExpiresAt: undefined,
        to: 'dead',
        tenant: LIVE,
        discard: true,
        now,
        retentionDays: 30,
      }).body,
    ).toEqual({ kind: 'set', expiresAt });
  });

  it('never leaves a TTL on a message that has not ended, nor on its body, whatever it goes through', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.constantFrom(LIVE, TEST_SIDE),
        fc.array(step, { maxLength: 60 }),
        (supersededAtEnqueue, tenant, steps) => {
          let clock = Date.parse('2026-12-01T09:00:00.000Z');
          // The enqueue: a new message, scheduled or (its group moved on) superseded at once.
          const enqueued = lifetimeChange({
            currentExpiresAt: undefined,
            to: supersededAtEnqueue ? MESSAGE_STATUS.superseded : MESSAGE_STATUS.scheduled,
            tenant,
            now: new Date(clock),
            retentionDays: RETENTION_DAYS,
          });
          const records: Records = {
            status: supersededAtEnqueue ? MESSAGE_STATUS.superseded : MESSAGE_STATUS.scheduled,
            stateTtl: apply(enqueued.state, undefined),
            bodyTtl: apply(enqueued.body, undefined),
          };
          // Whether an operator discarded the message since it last began to wait.
          let discarded = false;
          let bodyWrites = 0;
          let bodyWritesAllowed = records.bodyTtl === undefined ? 0 : 1;
          for (const next of steps) {
            clock += next.days * DAY_MS;
            const now = new Date(clock);
            let to: MessageStatus;
            let discard = false;
            if (next.op === 'discard') {
              // The CLI's discard: only a message that waits for an operator and has no TTL yet.
              if (!isWaitingForOperator(records.status) || records.stateTtl !== undefined) continue;
              to = records.status;
              discard = true;
            } else {
              const exits = TRANSITIONS.filter((transition) => transition.from.includes(records.status));
              const transition = exits[next.pick % Math.max(1, exits.length)];
              if (transition === undefined) continue;
              to = transition.to;
            }
            const wasEnded = records.stateTtl !== undefined;
            // The model, from DESIGN §2 and §14: a move ends the message when it is a discard, or into
            // a terminal status that no operator waits on (a final one, or any on the test side).
            const ends = discard || (isTerminal(to) && !(isWaitingForOperator(to) && isLiveSide(tenant)));
            const change = lifetimeChange({
              currentExpiresAt: records.stateTtl,
              to,
              tenant,
              discard,
              now,
              retentionDays: RETENTION_DAYS,
            });
            if (change.body.kind !== 'keep') bodyWrites++;
            // The cost: a body is written only when the message ends, or comes back from having ended.
            if (ends || wasEnded) bodyWritesAllowed++;
            expect(bodyWrites).toBeLessThanOrEqual(bodyWritesAllowed);

            // The order of the store: a removal of the body's TTL, then the state write, then a TTL set.
            if (change.body.kind === 'remove') records.bodyTtl = undefined;
            if (next.crash) {
              // A crash between the two writes: the body never expires while its message would not.
              expect(records.bodyTtl === undefined || records.stateTtl !== undefined).toBe(true);
            }
            records.status = to;
            records.stateTtl = apply(change.state, records.stateTtl);
            if (next.crash && change.body.kind === 'set') {
              expect(records.stateTtl).toBeDefined();
            }
            if (change.body.kind === 'set') records.bodyTtl = change.body.expiresAt;
            discarded = discard || (discarded && isWaitingForOperator(to));

            // A live message, and one that waits for an operator who can see it, has no TTL at all.
            const waitsForOperator = isWaitingForOperator(records.status) && isLiveSide(tenant) && !discarded;
            if (!isTerminal(records.status) || waitsForOperator) {
              expect(records.stateTtl).toBeUndefined();
              expect(records.bodyTtl).toBeUndefined();
            }
            // A message that ends (a final status; a test-side one that nobody waits for; a discard)
            // gets both TTLs one retention from now.
            if (ends) {
              const expected = expiresAtAfter(now, RETENTION_DAYS);
              expect(records.stateTtl).toBe(expected);
              expect(records.bodyTtl).toBe(expected);
            }
            // Steady state: the body has a TTL exactly when its state record has one.
            expect(records.bodyTtl === undefined).toBe(records.stateTtl === undefined);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

/**
 * Decision 0212: an id an index names without a state record is gone when DynamoDB's TTL may have
 * deleted the record (created more than the retention ago), else missing. The model: a record
 * created at `created`, ended `endedAfter` later (its TTL one retention after that, as
 * lifetimeChange sets it), is deleted some time after its retention ran out, never before.
 */
describe('mayBeDeleted', () => {
  const instant = fc.integer({
    min: Date.parse('2020-01-01T00:00:00.000Z'),
    max: Date.parse('2035-01-01T00:00:00.000Z'),
  });
  const retention = fc.integer({ min: 1, max: 400 });
  /** How long after its end, or after its creation, a read comes: mostly near the retention's end. */
  const aroundRetention = fc.oneof(
    fc.integer({ min: -5_000, max: 5_000 }),
    fc.integer({ min: -3 * DAY_MS, max: 3 * DAY_MS }),
    fc.integer({ min: -400 * DAY_MS, max: 400 * DAY_MS }),
  );
  const endedAfter = fc.oneof(fc.constant(0), fc.nat({ max: 2_000 }), fc.nat({ max: 500 * DAY_MS }));
  const iso = (ms: number) => new Date(ms).toISOString();

  it('calls gone every message whose record DynamoDB may have deleted, however late it ended', () => {
    fc.assert(
      fc.property(instant, endedAfter, aroundRetention, retention, (created, ended, offset, days) => {
        const expiresAt = expiresAtAfter(new Date(created + ended), days);
        const now = new Date(created + ended + days * DAY_MS + offset);
        // Deletable (its TTL passed) implies gone: no deleted record is ever reported missing.
        if (retentionRanOut(expiresAt, now)) expect(mayBeDeleted(iso(created), now, days)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it('calls gone no more than a second before a message that ended at once may be deleted, and stays gone', () => {
    fc.assert(
      fc.property(
        instant,
        aroundRetention,
        fc.nat({ max: 100 * DAY_MS }),
        retention,
        (created, offset, later, days) => {
          const now = new Date(created + days * DAY_MS + offset);
          if (!mayBeDeleted(iso(created), now, days)) return;
          expect(
            retentionRanOut(expiresAtAfter(new Date(created), days), new Date(now.getTime() + 1_000)),
          ).toBe(true);
          expect(mayBeDeleted(iso(created), new Date(now.getTime() + later), days)).toBe(true);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('is the boundary of an orphan body: the retention after the creation, exclusive', () => {
    const now = new Date('2026-12-05T10:00:00.000Z');
    for (const [age, gone] of [
      [RETENTION_DAYS * DAY_MS - 1, false],
      [RETENTION_DAYS * DAY_MS, false],
      [RETENTION_DAYS * DAY_MS + 1, true],
    ] as const) {
      const created = iso(now.getTime() - age);
      expect({ age, gone: mayBeDeleted(created, now, RETENTION_DAYS) }).toEqual({ age, gone });
      expect(bodyOrphaned(created, now, RETENTION_DAYS)).toBe(gone);
    }
  });
});

describe('discardedAt: whether an operator discarded a message, now', () => {
  const stamp = '2026-12-06T05:00:00.000Z';
  it('is the stamp of a live-side waiting message with a TTL: only a discard gives it one', () => {
    for (const status of MESSAGE_STATUSES.filter(isWaitingForOperator)) {
      expect(discardedAt({ status, tenant: 'acme', expires_at: 1, discarded_at: stamp })).toBe(stamp);
    }
  });
  it('is undefined once a retry or a redrive took the TTL off (the stamp stays behind), for a final status, and on the test side', () => {
    expect(discardedAt({ status: 'unknown', tenant: 'acme', discarded_at: stamp })).toBeUndefined();
    expect(
      discardedAt({ status: 'sent', tenant: 'acme', expires_at: 1, discarded_at: stamp }),
    ).toBeUndefined();
    expect(
      discardedAt({ status: 'failed', tenant: 'acme.test', expires_at: 1, discarded_at: stamp }),
    ).toBeUndefined();
  });
});
