import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTerminal, MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import { RECORD_LAYOUT, refusedRecord } from '../../lambdas/core/recordLayout.js';
import { isPaused, type PauseState } from '../../lambdas/core/relayBreaker.js';
import {
  copyLostWithQueue,
  decideSweep,
  lostCopyDelaySeconds,
  PAUSE_UNREAD,
  pauseHoldsEverything,
  refusedGauge,
  SWEEP_MAX_INTERVAL_SECONDS,
  type SweptRecord,
  stampIsVoid,
  sweepIntervalMs,
  voidStampsDueBefore,
} from '../../lambdas/core/sweepDecision.js';
import { testSideOf } from '../../lambdas/core/testSide.js';

/**
 * The sweeper's decision on one overdue entry (DESIGN §5a, issue 15 §4): re-dispatch a message that
 * is past its time and not moving, with its current rev — and, for one that stays stalled (a copy
 * waiting behind a backlog looks the same), less and less often.
 */
const NOW = new Date('2026-12-01T09:00:00.000Z');
const GRACE = 300;
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000).toISOString();
const record = (overrides: Partial<SweptRecord> = {}): SweptRecord => ({
  tenant: 'acme',
  rev: 3,
  status: 'scheduled',
  due_at: ago(GRACE + 1),
  ...overrides,
});

/** The sweeper's decision at NOW on a stall it has re-dispatched `earlier` times, overdue again by the grace. */
function nextStamp(earlier: number, grace: number) {
  const seen = ago(grace + 1);
  const decision = decideSweep({
    record: record({ due_at: seen, sweep_due_at: seen, sweep_count: earlier }),
    now: NOW,
    graceSeconds: grace,
  });
  if (decision.action !== 'redispatch') throw new Error('expected a re-dispatch');
  return decision;
}

describe('the sweeper re-dispatches', () => {
  it('a live message overdue by more than the grace, with the rev of its record', () => {
    expect(decideSweep({ record: record(), now: NOW, graceSeconds: GRACE })).toMatchObject({
      action: 'redispatch',
      rev: 3,
      seenDueAt: ago(GRACE + 1),
      sweepCount: 1,
    });
  });

  it('nothing that is gone, terminal, or not overdue by the grace (the index lagged)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...MESSAGE_STATUSES),
        fc.integer({ min: -10_000, max: 10_000 }),
        (status, overdueBy) => {
          const decision = decideSweep({
            record: record({ status, due_at: ago(overdueBy) }),
            now: NOW,
            graceSeconds: GRACE,
          });
          const expected = !isTerminal(status) && overdueBy > GRACE;
          expect(decision.action === 'redispatch').toBe(expected);
        },
      ),
    );
    expect(decideSweep({ record: undefined, now: NOW, graceSeconds: GRACE })).toEqual({
      action: 'skip',
      reason: 'gone',
    });
    expect(decideSweep({ record: record({ due_at: undefined }), now: NOW, graceSeconds: GRACE }).action).toBe(
      'skip',
    );
  });
});

describe('a stall that goes on', () => {
  it('is not re-dispatched again before twice the wait of the last time, up to the cap', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 7200 }), (earlier, grace) => {
        const decision = nextStamp(earlier, grace);
        expect(decision.sweepCount).toBe(earlier + 1);
        // Overdue again (by the grace) exactly one interval from now.
        const againAt = Date.parse(decision.nextDueAt) + grace * 1000;
        const interval = againAt - NOW.getTime();
        expect(interval).toBe(sweepIntervalMs(earlier + 1, grace));
        expect(interval).toBeGreaterThanOrEqual(grace * 1000);
        expect(interval).toBeLessThanOrEqual(Math.max(grace, SWEEP_MAX_INTERVAL_SECONDS) * 1000);
      }),
    );
  });

  it('waits longer after each re-dispatch until the cap: 2, 4, 8 … graces', () => {
    const waits = [1, 2, 3, 4, 5, 6].map((count) => sweepIntervalMs(count, GRACE) / 1000);
    expect(waits).toEqual([600, 1200, 2400, 3600, 3600, 3600]);
    for (let count = 1; count < 60; count++) {
      expect(sweepIntervalMs(count + 1, GRACE)).toBeGreaterThanOrEqual(sweepIntervalMs(count, GRACE));
    }
  });

  it('starts again at one when another writer moved the record since (its due_at is not the one the sweeper set)', () => {
    const decision = decideSweep({
      record: record({ due_at: ago(GRACE + 1), sweep_due_at: ago(5000), sweep_count: 7 }),
      now: NOW,
      graceSeconds: GRACE,
    });
    expect(decision).toMatchObject({ action: 'redispatch', sweepCount: 1 });
  });
});

describe('a stamp whose copy the send queue lost (a purge, the local emulator restarted: queueEmptiedAt)', () => {
  // A stamp moves `due_at` ahead (the backoff) because a copy waits on the queue; once the queue held
  // nothing from before `queueEmptiedAt`, a stamp made before it stands for a copy that is gone.
  const live = fc.constantFrom(...MESSAGE_STATUSES.filter((status) => !isTerminal(status)));
  const stamp = fc.record({
    status: live,
    count: fc.integer({ min: 1, max: 30 }),
    sweptAgo: fc.integer({ min: 1, max: 7200 }),
    dueIn: fc.integer({ min: -7200, max: 3600 }),
    leaseIn: fc.option(fc.integer({ min: -600, max: 600 }), { nil: undefined }),
    emptiedAgo: fc.integer({ min: 0, max: 7200 }),
    grace: fc.integer({ min: 1, max: 900 }),
    noRelay: fc.boolean(),
    pause: fc.constantFrom<PauseState | typeof PAUSE_UNREAD | undefined>(undefined, PAUSE_UNREAD, {
      version: 1,
      kinds: {},
      all: { reason: 'r', at: NOW.toISOString(), except: [] },
    }),
  });
  const stamped = (s: {
    status: SweptRecord['status'];
    count: number;
    sweptAgo: number;
    dueIn: number;
    leaseIn: number | undefined;
  }) =>
    record({
      status: s.status,
      due_at: ago(-s.dueIn),
      sweep_due_at: ago(-s.dueIn),
      sweep_count: s.count,
      swept_at: ago(s.sweptAgo),
      ...(s.leaseIn === undefined ? {} : { lease_until: ago(-s.leaseIn) }),
    });

  it('is void: the message is re-dispatched now, its count from one, whatever its lease or the holds (the copy they would hold is gone)', () => {
    fc.assert(
      fc.property(stamp, (s) => {
        fc.pre(s.sweptAgo > s.emptiedAgo);
        const decision = decideSweep({
          record: stamped(s),
          now: NOW,
          graceSeconds: s.grace,
          noRelay: s.noRelay,
          ...(s.pause === undefined ? {} : { pause: s.pause }),
          queueEmptiedAt: new Date(NOW.getTime() - s.emptiedAgo * 1000),
        });
        expect(decision).toEqual({
          action: 'redispatch',
          rev: 3,
          status: s.status,
          seenDueAt: ago(-s.dueIn),
          nextDueAt: new Date(NOW.getTime() + sweepIntervalMs(1, s.grace) - s.grace * 1000).toISOString(),
          sweepCount: 1,
        });
      }),
    );
  });

  it('changes nothing otherwise: a stamp made after the queue was emptied, a record moved on since its stamp, or no emptying known (AWS)', () => {
    fc.assert(
      fc.property(stamp, fc.boolean(), (s, movedOn) => {
        const base = stamped(s);
        // Moved on: another writer wrote the record since its stamp, and since the emptying (a record
        // last written before it had its copy on the lost queue: decision 0264, below).
        const seen = movedOn ? { ...base, sweep_due_at: ago(9999), updated_at: ago(s.emptiedAgo) } : base;
        fc.pre(movedOn || s.sweptAgo <= s.emptiedAgo);
        const input = {
          record: seen,
          now: NOW,
          graceSeconds: s.grace,
          noRelay: s.noRelay,
          ...(s.pause === undefined ? {} : { pause: s.pause }),
        };
        const queueEmptiedAt = new Date(NOW.getTime() - s.emptiedAgo * 1000);
        expect(decideSweep({ ...input, queueEmptiedAt })).toEqual(decideSweep(input));
      }),
    );
  });

  it('lies, for every stamp made before the queue was emptied, before the end of the window a told run reads', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 86_400 }),
        fc.integer({ min: 1, max: 90_000 }),
        (earlier, grace, madeBefore) => {
          const queueEmptiedAt = new Date(NOW.getTime() + madeBefore * 1000);
          // The stamp the sweeper writes at NOW, re-dispatch `earlier + 1` of the stall.
          expect(Date.parse(nextStamp(earlier, grace).nextDueAt)).toBeLessThan(
            voidStampsDueBefore(queueEmptiedAt, grace).getTime(),
          );
        },
      ),
    );
  });

  it('is void only when made strictly before the emptying: a copy sent at that instant may be on the new queue', () => {
    const at = ago(60);
    const stampedAt = (sweptAt: string) =>
      record({ due_at: ago(-600), sweep_due_at: ago(-600), sweep_count: 3, swept_at: sweptAt });
    const queueEmptiedAt = new Date(at);
    expect(stampIsVoid(stampedAt(ago(61)), queueEmptiedAt)).toBe(true);
    expect(stampIsVoid(stampedAt(at), queueEmptiedAt)).toBe(false);
    expect(stampIsVoid(stampedAt(ago(59)), queueEmptiedAt)).toBe(false);
  });

  it('never revives what is terminal, gone or refused', () => {
    const queueEmptiedAt = NOW;
    const refused = refusedRecord({
      id: 'm',
      tenant: 'acme',
      rev: 4,
      layout: RECORD_LAYOUT + 1,
      status: 'scheduled',
      due_at: ago(-60),
      sweep_due_at: ago(-60),
      sweep_count: 2,
      swept_at: ago(60),
    });
    if (refused === undefined) throw new Error('expected a refused record');
    expect(decideSweep({ record: refused, now: NOW, graceSeconds: GRACE, queueEmptiedAt })).toEqual({
      action: 'skip',
      reason: 'refused',
    });
    for (const status of MESSAGE_STATUSES.filter(isTerminal)) {
      const done = record({
        status,
        due_at: ago(-60),
        sweep_due_at: ago(-60),
        sweep_count: 2,
        swept_at: ago(60),
      });
      expect(decideSweep({ record: done, now: NOW, graceSeconds: GRACE, queueEmptiedAt }).action).toBe(
        'skip',
      );
    }
    expect(decideSweep({ record: undefined, now: NOW, graceSeconds: GRACE, queueEmptiedAt }).action).toBe(
      'skip',
    );
  });
});

describe('a message an operator paused', () => {
  const kinds = fc.constantFrom('digest', 'invoice', 'campaign');
  const pauseState = fc.record({
    version: fc.constant(1),
    kinds: fc.dictionary(kinds, fc.constant({ reason: 'r', at: NOW.toISOString() })),
    all: fc.option(
      fc.record({
        reason: fc.constant('r'),
        at: fc.constant(NOW.toISOString()),
        except: fc.uniqueArray(kinds),
      }),
      { nil: undefined },
    ),
  });

  it('is never re-dispatched while its kind is held by the pause, and swept as before otherwise', () => {
    fc.assert(
      fc.property(pauseState, fc.option(kinds, { nil: undefined }), (rawPause, kind) => {
        const pause: PauseState =
          rawPause.all === undefined ? { version: 1, kinds: rawPause.kinds } : rawPause;
        const overdue = record(kind === undefined ? {} : { tags: { kind } });
        const decision = decideSweep({ record: overdue, now: NOW, graceSeconds: GRACE, pause });
        const held =
          (kind !== undefined && Object.hasOwn(pause.kinds, kind)) ||
          (pause.all !== undefined && (kind === undefined || !pause.all.except.includes(kind)));
        expect(decision.action).toBe(held ? 'skip' : 'redispatch');
        if (held) expect(decision).toEqual({ action: 'skip', reason: 'paused' });
      }),
    );
  });

  it('holds every message exactly when no kind (nor a message without one) could be re-dispatched', () => {
    fc.assert(
      fc.property(pauseState, (rawPause) => {
        const pause: PauseState =
          rawPause.all === undefined ? { version: 1, kinds: rawPause.kinds } : rawPause;
        // The kinds the pause may name, one it never names, and a message without a kind.
        const flowing = ['digest', 'invoice', 'campaign', 'other', undefined].filter(
          (kind) =>
            decideSweep({
              record: record(kind === undefined ? {} : { tags: { kind } }),
              now: NOW,
              graceSeconds: GRACE,
              pause,
            }).action === 'redispatch',
        );
        expect(pauseHoldsEverything(pause)).toBe(flowing.length === 0);
      }),
    );
    expect(pauseHoldsEverything(undefined)).toBe(false);
  });
});

describe('a test message (DESIGN §14), which no relay gate holds', () => {
  const kinds = fc.constantFrom('digest', 'invoice', 'campaign');
  const pauseState = fc.option(
    fc.record({
      version: fc.constant(1),
      kinds: fc.dictionary(kinds, fc.constant({ reason: 'r', at: NOW.toISOString() })),
      all: fc.constant({ reason: 'r', at: NOW.toISOString(), except: [] as string[] }),
    }),
    { nil: undefined },
  );

  it('is re-dispatched through an outage and any pause; a live one is left to the senders that hold it', () => {
    fc.assert(
      fc.property(pauseState, fc.boolean(), fc.option(kinds, { nil: undefined }), (pause, noRelay, kind) => {
        const tags = kind === undefined ? {} : { tags: { kind } };
        const input = { now: NOW, graceSeconds: GRACE, noRelay, ...(pause ? { pause } : {}) };
        const test = decideSweep({ ...input, record: record({ tenant: testSideOf('acme'), ...tags }) });
        expect(test.action).toBe('redispatch');
        const live = decideSweep({ ...input, record: record(tags) });
        const paused = pause !== undefined && isPaused(pause, kind);
        expect(live).toEqual(
          noRelay
            ? { action: 'skip', reason: 'no-relay' }
            : paused
              ? { action: 'skip', reason: 'paused' }
              : expect.objectContaining({ action: 'redispatch' }),
        );
      }),
    );
  });

  it('is re-dispatched while the pauses could not be read; a live one is held, as a sender that cannot read its gate holds its copy', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.option(kinds, { nil: undefined }), (noRelay, kind) => {
        const tags = kind === undefined ? {} : { tags: { kind } };
        const input = { now: NOW, graceSeconds: GRACE, noRelay, pause: PAUSE_UNREAD } as const;
        const test = decideSweep({ ...input, record: record({ tenant: testSideOf('acme'), ...tags }) });
        expect(test.action).toBe('redispatch');
        expect(decideSweep({ ...input, record: record(tags) })).toEqual({
          action: 'skip',
          reason: 'gate-unread',
        });
      }),
    );
  });
});

describe('a held message the sender settles before its gates (decision 0257)', () => {
  const holds = [
    { noRelay: true },
    { pause: { version: 1, kinds: {}, all: { reason: 'r', at: NOW.toISOString(), except: [] } } },
    { pause: PAUSE_UNREAD },
  ] as const;

  it('is re-dispatched past its not_after, whatever holds the rest: the sender expires it before any gate', () => {
    for (const hold of holds) {
      const lapsed = record({ not_after: ago(1) });
      expect(decideSweep({ record: lapsed, now: NOW, graceSeconds: GRACE, ...hold })).toMatchObject({
        action: 'redispatch',
        rev: 3,
      });
      // Its deadline still ahead: held as before.
      const ahead = record({ not_after: ago(-60) });
      expect(decideSweep({ record: ahead, now: NOW, graceSeconds: GRACE, ...hold }).action).toBe('skip');
    }
  });

  it('is re-dispatched when its sender died (a lease expired by the grace): the takeover settles it before any gate; a live lease is still left alone', () => {
    for (const hold of holds) {
      const dead = record({ status: 'sending', due_at: ago(3600), lease_until: ago(GRACE + 1) });
      expect(decideSweep({ record: dead, now: NOW, graceSeconds: GRACE, ...hold })).toMatchObject({
        action: 'redispatch',
        status: 'sending',
      });
      const live = record({ status: 'sending', due_at: ago(3600), lease_until: ago(-60) });
      expect(decideSweep({ record: live, now: NOW, graceSeconds: GRACE, ...hold })).toEqual({
        action: 'skip',
        reason: 'not-overdue',
      });
    }
  });
});

describe('a sending message, whose due entry the claim leaves at its send time (docs/data-model.md)', () => {
  it('is not overdue while its lease lives, however old its due entry', () => {
    const leased = record({ status: 'sending', due_at: ago(3600), lease_until: ago(-60) });
    expect(decideSweep({ record: leased, now: NOW, graceSeconds: GRACE })).toEqual({
      action: 'skip',
      reason: 'not-overdue',
    });
    const justExpired = record({ status: 'sending', due_at: ago(3600), lease_until: ago(GRACE - 1) });
    expect(decideSweep({ record: justExpired, now: NOW, graceSeconds: GRACE }).action).toBe('skip');
  });

  it('is re-dispatched once its lease expired by the grace, the write conditional on the due entry seen', () => {
    const stranded = record({ status: 'sending', due_at: ago(3600), lease_until: ago(GRACE + 1) });
    expect(decideSweep({ record: stranded, now: NOW, graceSeconds: GRACE })).toMatchObject({
      action: 'redispatch',
      seenDueAt: ago(3600),
      sweepCount: 1,
    });
  });
});

describe('a message a newer writer made (decision 0166), as the reader hands it on', () => {
  const refused = fc
    .oneof(
      fc.record({
        layout: fc.integer({ min: RECORD_LAYOUT + 1, max: 1_000_000 }),
        status: fc.constant('scheduled'),
      }),
      fc.record({
        status: fc.string().filter((status) => !(MESSAGE_STATUSES as readonly string[]).includes(status)),
      }),
    )
    .map((raw) => refusedRecord({ id: 'm-1', tenant: 'acme', rev: 1, ...raw }));

  it('is never re-dispatched, whatever the pauses or the relays: it waits for an upgrade, and its record is not stamped', () => {
    fc.assert(
      fc.property(refused, fc.boolean(), fc.boolean(), (read, noRelay, test) => {
        if (read === undefined) throw new Error('the rule refuses a newer layout and an unknown status');
        const tenant = test ? { tenant: testSideOf('acme') } : {};
        expect(
          decideSweep({ record: { ...read, ...tenant }, now: NOW, graceSeconds: GRACE, noRelay }),
        ).toEqual({
          action: 'skip',
          reason: 'refused',
        });
      }),
    );
  });

  // Decision 0166: the alarm is on while a refused message waits. Only a run that read the whole
  // index knows how many wait, so only it may clear the alarm; any run that saw one may raise it.
  it('is counted in a gauge the alarm can hold: a run that read the whole index publishes what it counted, 0 too', () => {
    fc.assert(
      fc.property(fc.nat(1000), (count) => {
        expect(refusedGauge({ refused: count, wholeIndexRead: true })).toBe(count);
      }),
    );
  });

  it('is never cleared by a run that did not read the whole index, and still raised by what that run saw', () => {
    fc.assert(
      fc.property(fc.nat(1000), (count) => {
        const gauge = refusedGauge({ refused: count, wholeIndexRead: false });
        // None seen: no datum, which keeps the alarm's state (missing data is ignored) — neither on nor off.
        if (count === 0) expect(gauge).toBeUndefined();
        // A refused record it read keeps the alarm on (threshold ≥ 1).
        else expect(gauge).toBeGreaterThanOrEqual(1);
      }),
    );
  });
});

describe('a copy the emptied queue lost that no stamp stands for (decision 0264: a restart of the local emulator)', () => {
  // The relay's delayed copy, a retry's hidden copy, a lease's copy in flight: each lived only on the
  // queue. Replaced at once with the exact remaining delay, the message goes at its time, not the
  // grace after it; the record is not written, and AWS's runs (no emptying known) are as before.
  const live = fc.constantFrom<SweptRecord['status']>('scheduled', 'retrying', 'sending');
  const lost = fc.record({
    status: live,
    dueIn: fc.integer({ min: -7200, max: 3600 }),
    sendAtIn: fc.integer({ min: -7200, max: 899 }),
    leaseIn: fc.option(fc.integer({ min: -600, max: 600 }), { nil: undefined }),
    writtenAgo: fc.integer({ min: 1, max: 7200 }),
    emptiedAgo: fc.integer({ min: 0, max: 600 }),
    grace: fc.integer({ min: 1, max: 900 }),
    noRelay: fc.boolean(),
    test: fc.boolean(),
    pause: fc.constantFrom<PauseState | typeof PAUSE_UNREAD | undefined>(undefined, PAUSE_UNREAD, {
      version: 1,
      kinds: {},
      all: { reason: 'r', at: NOW.toISOString(), except: [] },
    }),
  });
  type Lost = typeof lost extends fc.Arbitrary<infer T> ? T : never;
  const emptiedAt = (l: Lost) => new Date(NOW.getTime() - l.emptiedAgo * 1000);
  const lostRecord = (l: Lost) =>
    record({
      tenant: l.test ? testSideOf('acme') : 'acme',
      status: l.status,
      due_at: ago(-l.dueIn),
      // Due within 15 minutes of the emptying: its copy was on the queue.
      send_at: new Date(emptiedAt(l).getTime() + l.sendAtIn * 1000).toISOString(),
      updated_at: ago(l.emptiedAgo + l.writtenAgo),
      ...(l.leaseIn === undefined ? {} : { lease_until: ago(-l.leaseIn) }),
    });
  const decide = (l: Lost, queueEmptiedAt: Date | undefined) =>
    decideSweep({
      record: lostRecord(l),
      now: NOW,
      graceSeconds: l.grace,
      noRelay: l.noRelay,
      ...(l.pause === undefined ? {} : { pause: l.pause }),
      ...(queueEmptiedAt === undefined ? {} : { queueEmptiedAt }),
    });

  it('is put back with its rev and the exact remaining delay, whatever the holds, unless overdue and not held (then re-dispatched and stamped as always)', () => {
    fc.assert(
      fc.property(lost, (l) => {
        const decision = decide(l, emptiedAt(l));
        const untold = decide(l, undefined);
        if (untold.action === 'redispatch') {
          // Overdue by the grace and not held: as in AWS, a re-dispatch now, stamped.
          expect(decision).toEqual(untold);
          return;
        }
        const dueMs = Math.max(
          NOW.getTime() + l.dueIn * 1000,
          l.status === 'sending' && l.leaseIn !== undefined ? NOW.getTime() + l.leaseIn * 1000 : -Infinity,
        );
        expect(decision).toEqual({
          action: 'replace',
          rev: 3,
          delaySeconds: Math.min(900, Math.max(0, Math.floor((dueMs - NOW.getTime()) / 1000))),
        });
      }),
    );
  });

  it('arrives neither early nor a second late: its delay ends within the second before the message may move, or at once when that passed', () => {
    fc.assert(
      fc.property(lost, (l) => {
        const r = lostRecord(l);
        if (r.due_at === undefined) throw new Error('no due_at');
        const delay = lostCopyDelaySeconds(r, r.due_at, NOW);
        const dueIn = (Date.parse(r.due_at) - NOW.getTime()) / 1000;
        const leaseIn = r.status === 'sending' && l.leaseIn !== undefined ? l.leaseIn : -Infinity;
        const movesIn = Math.max(dueIn, leaseIn);
        if (movesIn <= 0) expect(delay).toBe(0);
        else if (movesIn >= 900) expect(delay).toBe(900);
        else {
          expect(delay).toBeLessThanOrEqual(movesIn);
          expect(movesIn - delay).toBeLessThan(1);
        }
      }),
    );
  });

  it('is nothing when no emptying is known (AWS), or the record was written (by the api, a sender or the sweeper) at or after it', () => {
    fc.assert(
      fc.property(lost, fc.integer({ min: 0, max: 600 }), fc.boolean(), (l, after, bySweeper) => {
        expect(copyLostWithQueue(lostRecord(l), undefined)).toBe(false);
        expect(decide(l, undefined).action).not.toBe('replace');
        const since = new Date(emptiedAt(l).getTime() + after * 1000).toISOString();
        const written = bySweeper
          ? { ...lostRecord(l), swept_at: since }
          : { ...lostRecord(l), updated_at: since };
        expect(copyLostWithQueue(written, emptiedAt(l))).toBe(false);
      }),
    );
  });

  it('is nothing for a scheduled message due 15 minutes or more after the emptying: its copy waits in the Scheduler, which keeps it', () => {
    fc.assert(
      fc.property(lost, fc.integer({ min: 900, max: 400 * 86_400 }), (l, sendAtIn) => {
        const queueEmptiedAt = emptiedAt(l);
        const later = {
          ...lostRecord(l),
          status: 'scheduled' as const,
          send_at: new Date(queueEmptiedAt.getTime() + sendAtIn * 1000).toISOString(),
        };
        expect(copyLostWithQueue(later, queueEmptiedAt)).toBe(false);
        expect(
          copyLostWithQueue(
            { ...later, send_at: new Date(queueEmptiedAt.getTime() + 899_999).toISOString() },
            queueEmptiedAt,
          ),
        ).toBe(true);
      }),
    );
  });

  it('never revives what is terminal, gone or refused', () => {
    for (const status of MESSAGE_STATUSES.filter(isTerminal)) {
      const done = record({ status, due_at: ago(-60), send_at: ago(-60), updated_at: ago(600) });
      expect(copyLostWithQueue(done, NOW)).toBe(false);
      expect(decideSweep({ record: done, now: NOW, graceSeconds: GRACE, queueEmptiedAt: NOW }).action).toBe(
        'skip',
      );
    }
  });
});
