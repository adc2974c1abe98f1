import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import { checkTransition } from '../../lambdas/core/stateMachine.js';
import { decideUnsent, isPastDeadline, isSupersededBy } from '../../lambdas/core/unsentDecision.js';

/**
 * What must not go out (DESIGN §4 freshness, §5 deadlines): past `not_after` a message becomes
 * `expired` instead of being sent, settled only where the state machine lets the sender, and
 * otherwise sends nothing; a message whose group has a newer version is `superseded` (the check the
 * sender makes under its claim, on the head it reads there once); quiet hours the sender cannot read
 * (a zone its runtime does not know) fail the message, never throw.
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
});

describe('deciding what must not go out', () => {
  it('sends a live message and expires one past its deadline', () => {
    const group = { key: 'g', version: 2 };
    expect(decideUnsent({ status: 'scheduled', group, not_after: at(60_000) }, NOW)).toEqual({
      kind: 'send',
    });
    expect(decideUnsent({ status: 'retrying', group, not_after: at(-1) }, NOW)).toEqual({
      kind: 'settle',
      to: 'expired',
    });
  });

  it('drops, never settles, where the state machine forbids the move (a redriven dead message past its deadline)', () => {
    const decision = decideUnsent({ status: 'dead', not_after: at(-1) }, NOW);
    expect(decision).toMatchObject({ kind: 'drop', to: 'expired', reason: 'past not_after' });
  });

  it('never sends what is past its deadline, and settles only along the state machine', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...MESSAGE_STATUSES),
        fc.option(fc.integer({ min: -60_000, max: 60_000 }), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
        (status, deadlineOffset, version) => {
          const record = {
            status,
            not_after: deadlineOffset === undefined ? null : at(deadlineOffset),
            group: version === undefined ? null : { key: 'g', version },
          };
          const decision = decideUnsent(record, NOW);
          const past = deadlineOffset !== undefined && deadlineOffset < 0;
          if (!past) {
            expect(decision).toEqual({ kind: 'send' });
            return;
          }
          expect(decision.kind).not.toBe('send');
          if (decision.kind !== 'settle' && decision.kind !== 'drop') return;
          expect(decision.to).toBe('expired');
          expect(decision.kind === 'settle').toBe(checkTransition(status, decision.to, 'sender').allowed);
        },
      ),
    );
  });
});

/*
 * Quiet hours (docs/design.md §16 Local time and quiet hours) are part of the same decision: every
 * copy the sender would send — the first time, after a retry's backoff, an outage, a pause, a
 * redrive — comes through here, so the rule has one home. The window is read here through Intl
 * directly, not through the module under test.
 */
describe('quiet hours in the decision (docs/design.md §16)', () => {
  const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe'];
  const wallMinutes = (instant: number, zone: string): number => {
    const parts = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      hour: 'numeric',
      minute: 'numeric',
    }).formatToParts(instant);
    const field = (type: string) => Number(parts.find((part) => part.type === type)?.value);
    return field('hour') * 60 + field('minute');
  };
  const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3));
  const hhmm = (minutes: number) =>
    `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
  const inside = (instant: number, quiet: { start: string; end: string }, zone: string) => {
    const minute = wallMinutes(instant, zone);
    const [start, end] = [minutesOf(quiet.start), minutesOf(quiet.end)];
    return start < end ? minute >= start && minute < end : minute >= start || minute < end;
  };

  it('holds a message due at 22:00 in Berlin until 08:00 there, and lets it go at 08:00', () => {
    const quiet = { quiet_hours: { start: '21:00', end: '08:00' }, time_zone: 'Europe/Berlin' };
    const tenPm = new Date('2026-12-03T21:00:00Z');
    expect(decideUnsent({ status: 'scheduled', ...quiet }, tenPm)).toEqual({
      kind: 'hold',
      until: new Date('2026-12-04T07:00:00Z'),
    });
    // After a retry's backoff, the same: a retrying message is held too.
    expect(decideUnsent({ status: 'retrying', ...quiet }, tenPm)).toMatchObject({ kind: 'hold' });
    expect(decideUnsent({ status: 'scheduled', ...quiet }, new Date('2026-12-04T07:00:00Z'))).toEqual({
      kind: 'send',
    });
  });

  it('expires one whose not_after comes before the window ends; a deadline at the end lets it wait', () => {
    const quiet = { quiet_hours: { start: '21:00', end: '08:00' }, time_zone: 'Europe/Berlin' };
    const tenPm = new Date('2026-12-03T21:00:00Z');
    expect(
      decideUnsent({ status: 'scheduled', ...quiet, not_after: '2026-12-04T06:59:59.999Z' }, tenPm),
    ).toEqual({ kind: 'settle', to: 'expired' });
    expect(
      decideUnsent({ status: 'scheduled', ...quiet, not_after: '2026-12-04T07:00:00.000Z' }, tenPm),
    ).toMatchObject({ kind: 'hold' });
  });

  it('property: past the deadline or superseded wins; otherwise held exactly when due inside the window, until an instant after it outside it, or expired when not_after is before that', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...MESSAGE_STATUSES),
        fc.constantFrom(...ZONES),
        fc.integer({ min: 0, max: 1439 }),
        fc.integer({ min: 1, max: 1439 }),
        fc.integer({ min: 0, max: 400 * 86_400 }),
        fc.option(fc.integer({ min: -3_600, max: 2 * 86_400 }), { nil: undefined }),
        (status, zone, start, length, nowSeconds, deadlineSeconds) => {
          const quiet = { start: hhmm(start), end: hhmm((start + length) % 1440) };
          const now = new Date(Date.UTC(2026, 11, 1) + nowSeconds * 1000);
          const notAfter =
            deadlineSeconds === undefined
              ? null
              : new Date(now.getTime() + deadlineSeconds * 1000).toISOString();
          const record = {
            status,
            not_after: notAfter,
            group: { key: 'g', version: 1 },
            time_zone: zone,
            quiet_hours: quiet,
          };
          const decision = decideUnsent(record, now);
          const past = deadlineSeconds !== undefined && deadlineSeconds < 0;
          if (past) {
            expect(decision.kind === 'settle' || decision.kind === 'drop').toBe(true);
            if (decision.kind === 'settle' || decision.kind === 'drop') expect(decision.to).toBe('expired');
            return;
          }
          if (!inside(now.getTime(), quiet, zone)) {
            expect(decision).toEqual({ kind: 'send' });
            return;
          }
          if (decision.kind === 'hold') {
            const until = decision.until.getTime();
            expect(until).toBeGreaterThan(now.getTime());
            expect(inside(until, quiet, zone)).toBe(false);
            // The window's end: a minute before it, the message was still inside (or not yet due);
            // or the clock jumped out of the window there (a gap over the end, decision 0194).
            if (wallMinutes(until, zone) === minutesOf(quiet.end))
              expect(until - 60_000 <= now.getTime() || inside(until - 60_000, quiet, zone)).toBe(true);
            if (notAfter !== null) expect(Date.parse(notAfter)).toBeGreaterThanOrEqual(until);
            return;
          }
          // Not sent inside the window: it can only expire, because not_after comes first.
          expect(decision.kind === 'settle' || decision.kind === 'drop').toBe(true);
          if (decision.kind === 'settle' || decision.kind === 'drop') expect(decision.to).toBe('expired');
          expect(notAfter).not.toBeNull();
          const waited = decideUnsent({ ...record, not_after: null }, now);
          expect(waited.kind).toBe('hold');
          if (waited.kind === 'hold') expect(Date.parse(notAfter ?? '')).toBeLessThan(waited.until.getTime());
        },
      ),
      { numRuns: 500 },
    );
  });

  it('quiet hours it cannot read fail the message, naming the zone, unless the deadline passed (never a throw)', () => {
    const night = { start: '21:00', end: '08:00' };
    expect(
      decideUnsent({ status: 'scheduled', time_zone: 'Mars/Olympus_Mons', quiet_hours: night }, NOW),
    ).toEqual({
      kind: 'fail',
      reason: 'time_zone Mars/Olympus_Mons is not a time zone this sender knows; quiet hours cannot be read',
    });
    // Spelled as the API never admits it (one zone, one spelling), or none at all, or no window.
    expect(
      decideUnsent({ status: 'retrying', time_zone: 'europe/berlin', quiet_hours: night }, NOW),
    ).toMatchObject({
      kind: 'fail',
      reason: expect.stringContaining('europe/berlin'),
    });
    expect(decideUnsent({ status: 'scheduled', quiet_hours: night }, NOW)).toEqual({
      kind: 'fail',
      reason: 'quiet_hours without a time_zone; quiet hours cannot be read',
    });
    expect(
      decideUnsent(
        { status: 'scheduled', time_zone: 'UTC', quiet_hours: { start: '21:00', end: '21:00' } },
        NOW,
      ),
    ).toMatchObject({ kind: 'fail', reason: expect.stringContaining('two different HH:MM') });
    expect(
      decideUnsent(
        { status: 'scheduled', time_zone: 'Mars/Olympus_Mons', quiet_hours: night, not_after: at(-1) },
        NOW,
      ),
    ).toEqual({ kind: 'settle', to: 'expired' });
  });

  it('property: any zone name and window — a fail exactly when the zone is unknown or the window is not one, its reason naming the zone (cut to 64)', () => {
    const known = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata'];
    const windowPart = fc.oneof(
      fc.integer({ min: 0, max: 1439 }).map(hhmm),
      fc.constantFrom('24:00', '9:00', '', 'noon'),
    );
    fc.assert(
      fc.property(
        fc.constantFrom(...MESSAGE_STATUSES),
        fc.oneof(
          fc.constantFrom(...known),
          fc.string({ maxLength: 80 }).map((tail) => `Mars/${tail}`),
        ),
        windowPart,
        windowPart,
        fc.integer({ min: 0, max: 400 * 86_400 }),
        (status, zone, start, end, nowSeconds) => {
          const now = new Date(Date.UTC(2026, 11, 1) + nowSeconds * 1000);
          const quiet = { start, end };
          const decide = () => decideUnsent({ status, time_zone: zone, quiet_hours: quiet }, now);
          expect(decide).not.toThrow();
          const decision = decide();
          const zoneKnown = known.includes(zone);
          const windowValid =
            /^([01]\d|2[0-3]):[0-5]\d$/.test(start) && /^([01]\d|2[0-3]):[0-5]\d$/.test(end) && start !== end;
          expect(decision.kind === 'fail').toBe(!zoneKnown || !windowValid);
          if (decision.kind === 'fail' && !zoneKnown) expect(decision.reason).toContain(zone.slice(0, 64));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('without quiet hours, a zone changes nothing', () => {
    expect(decideUnsent({ status: 'scheduled', time_zone: 'Europe/Berlin' }, NOW)).toEqual({
      kind: 'send',
    });
  });
});
