import { Temporal } from '@js-temporal/polyfill';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  formatLocalDateTime,
  heldUntil,
  InvalidQuietHoursError,
  type LocalDateTime,
  localDateTimeAt,
  parseSendAtLocal,
  type QuietHours,
  quietHoursDecision,
  sendAtFromLocal,
  validateTimeZone,
  zonedInstant,
} from '../../lambdas/core/localTime.js';

/*
 * DESIGN §16 against an independent oracle: the Temporal polyfill (its own zone arithmetic over the
 * same tz data), whose `disambiguation: 'compatible'` is the rule DESIGN states. The quiet-hours
 * oracle is declarative: the window ends at the first instant after the due one whose wall clock is
 * outside it (decision 0194), and that instant is either one whose clock shows `end` or a transition,
 * so it is the earliest such candidate that is outside. Instants and wall times are drawn near the
 * zones' transitions (found with the oracle), where the rules differ from plain arithmetic.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const FROM = Date.UTC(2010, 0, 1);
const UNTIL = Date.UTC(2028, 0, 1);

/** The zones that hurt: a gap and overlap each, abolished DST, 30-minute DST, odd offsets, a lost day. */
const ZONES = [
  'Europe/Berlin',
  'America/New_York',
  'America/Sao_Paulo',
  'Australia/Lord_Howe',
  'Asia/Kathmandu',
  'Pacific/Apia',
  'Africa/Casablanca',
  'America/Santiago',
  'Pacific/Chatham',
  'UTC',
] as const;

/** The oracle's transitions of `zone` after `from` and before `until` (epoch ms). */
function transitionsBetween(zone: string, from: number, until: number): number[] {
  const found: number[] = [];
  let at = Temporal.Instant.fromEpochMilliseconds(from)
    .toZonedDateTimeISO(zone)
    .getTimeZoneTransition('next');
  while (at && at.epochMilliseconds < until) {
    found.push(at.epochMilliseconds);
    at = at.getTimeZoneTransition('next');
  }
  return found;
}

/** Each zone's transitions from 2010 to 2028, as the oracle sees them. */
const TRANSITIONS = new Map<string, readonly number[]>(
  ZONES.map((zone) => [zone, transitionsBetween(zone, FROM, UNTIL)]),
);

const zdt = (ms: number, zone: string) => Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(zone);
const plainOf = (local: LocalDateTime) =>
  new Temporal.PlainDateTime(local.year, local.month, local.day, local.hour, local.minute, local.second);
const localOf = (p: Temporal.PlainDateTime): LocalDateTime => ({
  year: p.year,
  month: p.month,
  day: p.day,
  hour: p.hour,
  minute: p.minute,
  second: p.second,
});

/** A zone, and an instant: anywhere in 2010–2028, or (mostly) within a day of one of its transitions. */
const zoneAndInstant = fc.constantFrom(...ZONES).chain((zone) => {
  const transitions = TRANSITIONS.get(zone) ?? [];
  const anywhere = fc.integer({ min: FROM, max: UNTIL });
  const near = transitions.length
    ? fc
        .tuple(
          fc.constantFrom(...transitions),
          fc.oneof(fc.integer({ min: -3 * HOUR, max: 3 * HOUR }), fc.integer({ min: -DAY, max: DAY })),
        )
        .map(([t, d]) => t + d)
    : anywhere;
  return fc.tuple(
    fc.constant(zone),
    fc.oneof({ arbitrary: near, weight: 4 }, { arbitrary: anywhere, weight: 1 }),
  );
});

/** A zone and a wall time: mostly the wall clock just before a transition, shifted by minutes into its gap or overlap. */
const zoneAndLocal = fc
  .tuple(
    fc.oneof(
      { arbitrary: zoneAndInstant, weight: 1 },
      {
        arbitrary: fc
          .constantFrom(...ZONES.filter((zone) => (TRANSITIONS.get(zone) ?? []).length > 0))
          .chain((zone) =>
            fc.tuple(
              fc.constant(zone),
              fc.constantFrom(...(TRANSITIONS.get(zone) ?? [])).map((t) => t - 1),
            ),
          ),
        weight: 2,
      },
    ),
    fc.integer({ min: -90, max: 90 }),
    fc.integer({ min: 0, max: 59 }),
  )
  .map(([[zone, ms], minutes, second]) => {
    const wall = zdt(ms, zone).toPlainDateTime().round({ smallestUnit: 'minute', roundingMode: 'floor' });
    return [zone, localOf(wall.add({ minutes }).with({ second }))] as const;
  });

describe('send_at_local → send_at is Temporal with disambiguation "compatible" (DESIGN §16)', () => {
  it('the gap moves forward by its length, the overlap takes the earlier (examples)', () => {
    const at = (text: string, zone: string) => sendAtFromLocal(text, zone);
    expect(at('2027-03-28T02:30', 'Europe/Berlin')).toEqual({
      ok: true,
      value: new Date('2027-03-28T01:30:00Z'),
    });
    expect(at('2026-10-04T02:15', 'Australia/Lord_Howe')).toEqual({
      ok: true,
      value: new Date('2026-10-03T15:45:00Z'),
    });
    expect(at('2011-12-30T12:00', 'Pacific/Apia')).toEqual({
      ok: true,
      value: new Date('2011-12-30T22:00:00Z'),
    });
    expect(at('2027-11-07T01:30', 'America/New_York')).toEqual({
      ok: true,
      value: new Date('2027-11-07T05:30:00Z'),
    });
  });

  it('property: zonedInstant agrees with the oracle, often in a gap or an overlap', () => {
    let unusual = 0;
    fc.assert(
      fc.property(zoneAndLocal, ([zone, local]) => {
        const expected = plainOf(local).toZonedDateTime(zone, { disambiguation: 'compatible' });
        const earlier = plainOf(local).toZonedDateTime(zone, { disambiguation: 'earlier' });
        const later = plainOf(local).toZonedDateTime(zone, { disambiguation: 'later' });
        if (!earlier.equals(later)) unusual++;
        expect(zonedInstant(local, zone).getTime()).toBe(expected.epochMilliseconds);
        const text = formatLocalDateTime(local);
        expect(sendAtFromLocal(text, zone)).toEqual({
          ok: true,
          value: new Date(expected.epochMilliseconds),
        });
      }),
      { numRuns: 1500 },
    );
    expect(unusual).toBeGreaterThan(250);
  });
});

describe("the view's send_at_local and time_zone (DESIGN §16)", () => {
  it('property: localDateTimeAt is the oracle wall clock, and reading it back gives the instant (the earlier pass in an overlap)', () => {
    fc.assert(
      fc.property(zoneAndInstant, ([zone, ms]) => {
        const wall = zdt(ms, zone).toPlainDateTime();
        const shown = localDateTimeAt(new Date(ms), zone);
        expect(shown).toEqual(localOf(wall));
        const back = sendAtFromLocal(formatLocalDateTime(shown), zone);
        const earlier = wall
          .round({ smallestUnit: 'second', roundingMode: 'floor' })
          .toZonedDateTime(zone, { disambiguation: 'earlier' });
        expect(back).toEqual({ ok: true, value: new Date(earlier.epochMilliseconds) });
        if (zdt(earlier.epochMilliseconds, zone).offsetNanoseconds === zdt(ms, zone).offsetNanoseconds)
          expect(earlier.epochMilliseconds).toBe(Math.floor(ms / 1000) * 1000);
      }),
      { numRuns: 1500 },
    );
  });
});

// ── Quiet hours ─────────────────────────────────────────────────────────────────────────────

const secondsOfDay = (hhmm: string) => Number(hhmm.slice(0, 2)) * 3600 + Number(hhmm.slice(3)) * 60;

/** The oracle's "is the wall clock at `ms` inside [start, end)": start included, end not. */
function insideOracle(ms: number, window: QuietHours, zone: string): boolean {
  const wall = zdt(ms, zone);
  const second = wall.hour * 3600 + wall.minute * 60 + wall.second + (wall.millisecond > 0 ? 0.5 : 0);
  const [start, end] = [secondsOfDay(window.start), secondsOfDay(window.end)];
  return start < end ? second >= start && second < end : second >= start || second < end;
}

/** The oracle's end of the window: the earliest instant after `due` showing `end`, or a transition, that is outside. */
function endOracle(due: number, window: QuietHours, zone: string): number | undefined {
  if (!insideOracle(due, window, zone)) return undefined;
  const candidates: number[] = [];
  const firstDay = zdt(due, zone).toPlainDate().subtract({ days: 1 });
  for (let d = 0; d < 6; d++) {
    const wall = firstDay.add({ days: d }).toPlainDateTime(Temporal.PlainTime.from(window.end));
    for (const disambiguation of ['earlier', 'later'] as const) {
      const instant = wall.toZonedDateTime(zone, { disambiguation });
      if (instant.toPlainDateTime().equals(wall)) candidates.push(instant.epochMilliseconds);
    }
  }
  candidates.push(...transitionsBetween(zone, due, due + 5 * DAY));
  const outside = candidates.filter((c) => c > due && !insideOracle(c, window, zone));
  return outside.length ? Math.min(...outside) : undefined;
}

const hhmm = (minutes: number) =>
  `${String(Math.floor(minutes / 60) % 24).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

/** A window of two different HH:MM, often with a bound near the wall time of the instant drawn. */
function windowNear(ms: number, zone: string) {
  const wall = zdt(ms, zone);
  const minuteOfDay = wall.hour * 60 + wall.minute;
  const bound = fc.oneof(
    fc.integer({ min: 0, max: 1439 }),
    fc.integer({ min: -90, max: 90 }).map((d) => (((minuteOfDay + d) % 1440) + 1440) % 1440),
  );
  return fc
    .tuple(bound, bound)
    .filter(([start, end]) => start !== end)
    .map(([start, end]): QuietHours => ({ start: hhmm(start), end: hhmm(end) }));
}

const dueAndWindow = zoneAndInstant.chain(([zone, ms]) =>
  fc.tuple(fc.constant(zone), fc.constant(ms), windowNear(ms, zone)),
);

describe('quiet hours against the oracle (DESIGN §16, decision 0194)', () => {
  const utc = (text: string) => new Date(text);
  it('an end in the spring gap ends at the gap’s end; a window in the autumn overlap ends at its first end after due', () => {
    // Berlin 2027-03-28: 01:59:59 CET → 03:00 CEST. Quiet 22:00–02:30, due 01:50 CET: ends 03:00 CEST.
    expect(heldUntil(utc('2027-03-28T00:50:00Z'), { start: '22:00', end: '02:30' }, 'Europe/Berlin')).toEqual(
      utc('2027-03-28T01:00:00Z'),
    );
    // A window starting in the gap (02:15–06:00): the clock jumps into it at 03:00 and it ends at 06:00.
    expect(heldUntil(utc('2027-03-28T01:00:00Z'), { start: '02:15', end: '06:00' }, 'Europe/Berlin')).toEqual(
      utc('2027-03-28T04:00:00Z'),
    );
    // Berlin 2027-10-31: 02:59:59 CEST → 02:00 CET. Quiet 02:30–03:00, due 02:40 CEST: the fall-back leaves it.
    expect(heldUntil(utc('2027-10-31T00:40:00Z'), { start: '02:30', end: '03:00' }, 'Europe/Berlin')).toEqual(
      utc('2027-10-31T01:00:00Z'),
    );
    // …and it comes round again at 02:30 CET: due then, it waits for 03:00 CET.
    expect(heldUntil(utc('2027-10-31T01:40:00Z'), { start: '02:30', end: '03:00' }, 'Europe/Berlin')).toEqual(
      utc('2027-10-31T02:00:00Z'),
    );
    // Crossing midnight across New York's spring night (02:00 → 03:00): quiet 23:00–07:00 lasts 7 hours.
    expect(
      heldUntil(utc('2027-03-14T04:00:00Z'), { start: '23:00', end: '07:00' }, 'America/New_York'),
    ).toEqual(utc('2027-03-14T11:00:00Z'));
    // Lord Howe's 30-minute spring (02:00 → 02:30): quiet 01:00–02:15 ends at 02:30 (+11).
    expect(
      heldUntil(utc('2026-10-03T14:45:00Z'), { start: '01:00', end: '02:15' }, 'Australia/Lord_Howe'),
    ).toEqual(utc('2026-10-03T15:30:00Z'));
  });

  it('start == end is no window: the API refuses it and a stored one is unreadable, never a guess', () => {
    const window = { start: '22:00', end: '22:00' };
    expect(() => heldUntil(utc('2027-01-01T22:30:00Z'), window, 'UTC')).toThrow(InvalidQuietHoursError);
    expect(
      quietHoursDecision({ due: utc('2027-01-01T22:30:00Z'), quietHours: window, timeZone: 'UTC' }),
    ).toMatchObject({ kind: 'unreadable' });
  });

  it('property: held exactly when the oracle clock is inside, until the oracle end, often at a transition', () => {
    let held = 0;
    fc.assert(
      fc.property(dueAndWindow, ([zone, due, window]) => {
        const expected = endOracle(due, window, zone);
        const actual = heldUntil(new Date(due), window, zone);
        expect(actual?.getTime()).toBe(expected);
        if (expected !== undefined) held++;
      }),
      { numRuns: 1200 },
    );
    expect(held).toBeGreaterThan(200);
  });
});

describe('every zone Node knows, at random instants 1970–2037 (no targeting: a zone the list above misses)', () => {
  it('property: the wall clock, the instant a wall time names, and the end of a window agree with the oracle', () => {
    const anyZone = fc.constantFrom(...Intl.supportedValuesOf('timeZone'));
    const instant = fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2037, 0, 1) });
    const minutes = fc.integer({ min: 0, max: 1439 });
    fc.assert(
      fc.property(
        anyZone,
        instant,
        minutes,
        minutes,
        fc.integer({ min: -120, max: 120 }),
        (zone, ms, start, end, shift) => {
          const wall = zdt(ms, zone).toPlainDateTime();
          expect(localDateTimeAt(new Date(ms), zone)).toEqual(localOf(wall));
          const local = wall.round({ smallestUnit: 'minute', roundingMode: 'floor' }).add({ minutes: shift });
          expect(zonedInstant(localOf(local), zone).getTime()).toBe(
            local.toZonedDateTime(zone).epochMilliseconds,
          );
          if (start === end) return;
          const window = { start: hhmm(start), end: hhmm(end) };
          expect(heldUntil(new Date(ms), window, zone)?.getTime()).toBe(endOracle(ms, window, zone));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the fields as the API reads them (DESIGN §16)', () => {
  it('property: a date-time is admitted exactly when it is a date of the calendar (oracle: Temporal, overflow reject)', () => {
    const field = (max: number) => fc.integer({ min: 0, max });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9999 }),
        field(13),
        field(32),
        field(24),
        field(60),
        fc.option(field(60)),
        (y, mo, d, h, mi, s) => {
          const two = (n: number) => String(n).padStart(2, '0');
          const text = `${String(y).padStart(4, '0')}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}${s === null ? '' : `:${two(s)}`}`;
          let real = true;
          try {
            Temporal.PlainDateTime.from(
              { year: y, month: mo, day: d, hour: h, minute: mi, second: s ?? 0 },
              { overflow: 'reject' },
            );
          } catch {
            real = false;
          }
          // Temporal reads second 60 as 59 (a leap second); a wall clock of 60 seconds is no time to send.
          if (s === 60) real = false;
          expect(parseSendAtLocal(text).ok).toBe(real);
        },
      ),
      { numRuns: 2000 },
    );
    expect(parseSendAtLocal('2026-02-30T09:00')).toMatchObject({
      ok: false,
      errors: [{ field: '/send_at_local' }],
    });
    expect(parseSendAtLocal('2028-02-29T09:00').ok).toBe(true);
  });

  it('refuses fractions and offsets (an instant is send_at), accepts with or without seconds', () => {
    expect(parseSendAtLocal('2026-12-03T09:00')).toMatchObject({ ok: true });
    expect(parseSendAtLocal('2026-12-03T09:00:05')).toMatchObject({ ok: true, value: { second: 5 } });
    for (const text of [
      '2026-12-03T09:00:00.5',
      '2026-12-03T09:00:00+01:00',
      '2026-12-03T09:00Z',
      '2026-12-03 09:00',
    ])
      expect(parseSendAtLocal(text)).toMatchObject({ ok: false, errors: [{ field: '/send_at_local' }] });
  });

  it('knows each zone the oracle knows here, and names /time_zone for one it does not', () => {
    for (const zone of ZONES) expect(validateTimeZone(zone)).toEqual({ ok: true, value: zone });
    for (const zone of ['Mars/Olympus_Mons', 'Europe/Berlinn', '+01:00', ''])
      expect(validateTimeZone(zone)).toMatchObject({ ok: false, errors: [{ field: '/time_zone' }] });
  });
});
