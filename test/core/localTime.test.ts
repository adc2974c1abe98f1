import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  formatLocalDateTime,
  heldUntil,
  InvalidQuietHoursError,
  isTimeZone,
  type LocalDateTime,
  localDateTimeAt,
  parseSendAtLocal,
  type QuietHours,
  quietHoursDecision,
  sendAtFromLocal,
  UnknownTimeZoneError,
  validateTimeZone,
  zonedInstant,
} from '../../lambdas/core/localTime.js';
import { LOCAL_TIME_FIELDS, localTimeRules } from '../../lambdas/core/messageSchema.js';
import { PostdateError } from '../../lambdas/core/postdateError.js';
import { PARSE_CONTEXT, zodErrors } from '../../lambdas/core/problem.js';

/*
 * DESIGN §16, as specifications. The oracle below reads Intl directly (the offset in force at an
 * instant, the zone's transitions found by sampling and bisection) and never calls the module under
 * test, so the properties check the module against the rule, not against itself.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The properties' window: the next 400 days from a fixed date (DESIGN §3's default horizon). */
const FROM = Date.UTC(2026, 11, 1);
const UNTIL = FROM + 400 * DAY;

const formatters = new Map<string, Intl.DateTimeFormat>();
function wallFieldsOf(ms: number, zone: string): number[] {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(ms).map((part) => [part.type, Number(part.value)]));
  return [parts.year, parts.month, parts.day, parts.hour, parts.minute, parts.second] as number[];
}
/** The wall clock at an instant in a zone, read as if it were UTC (ms): years 2026–2028 only. */
function wallOf(ms: number, zone: string): number {
  const [y, mo, d, h, mi, s] = wallFieldsOf(ms, zone) as [number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s);
}
const offsetOf = (ms: number, zone: string) => wallOf(ms, zone) - Math.floor(ms / 1000) * 1000;

interface Transition {
  readonly at: number;
  readonly before: number;
  readonly after: number;
}
interface Segment {
  readonly from: number;
  readonly to: number;
  readonly offset: number;
}
/**
 * Sampled weekly and bisected to the second. Checked once against 6-hourly sampling on this
 * machine's tz data (2025c): the same 260 transitions in 130 zones, never two within 35 days of
 * each other (Africa/Casablanca's Ramadan); the oracle's own test below keeps them 2 steps apart.
 */
const SAMPLE_STEP = 7 * DAY;
const ORACLE_FROM = FROM - 3 * DAY;
const ORACLE_TO = UNTIL + 6 * DAY;
const transitionCache = new Map<string, readonly Transition[]>();
function transitionsOf(zone: string): readonly Transition[] {
  const cached = transitionCache.get(zone);
  if (cached) return cached;
  const found: Transition[] = [];
  let previous = ORACLE_FROM;
  let previousOffset = offsetOf(previous, zone);
  for (let at = ORACLE_FROM + SAMPLE_STEP; at <= ORACLE_TO; at += SAMPLE_STEP) {
    const offset = offsetOf(at, zone);
    if (offset !== previousOffset) {
      let [low, high] = [previous, at];
      while (high - low > 1000) {
        const middle = low + Math.floor((high - low) / 2000) * 1000;
        if (offsetOf(middle, zone) === previousOffset) low = middle;
        else high = middle;
      }
      found.push({ at: high, before: previousOffset, after: offset });
    }
    previous = at;
    previousOffset = offset;
  }
  transitionCache.set(zone, found);
  return found;
}
function segmentsOf(zone: string): Segment[] {
  const segments: Segment[] = [];
  let from = ORACLE_FROM;
  let offset = offsetOf(ORACLE_FROM, zone);
  for (const transition of transitionsOf(zone)) {
    segments.push({ from, to: transition.at, offset });
    from = transition.at;
    offset = transition.after;
  }
  segments.push({ from, to: ORACLE_TO, offset });
  return segments;
}
/** Every instant whose wall clock in the zone is `wall` (ms as if UTC), earliest first. */
function instantsShowing(wall: number, zone: string): number[] {
  return segmentsOf(zone)
    .map((segment) => ({ segment, at: wall - segment.offset }))
    .filter(({ segment, at }) => at >= segment.from && at < segment.to)
    .map(({ at }) => at)
    .sort((a, b) => a - b);
}
/** The length of the spring gap that swallows `wall`, or 0 when the wall time exists. */
function gapAround(wall: number, zone: string): number {
  const gap = transitionsOf(zone).find(
    (t) => t.after > t.before && wall >= t.at + t.before && wall < t.at + t.after,
  );
  return gap ? gap.after - gap.before : 0;
}

const localOf = (wall: number): LocalDateTime => {
  const date = new Date(wall);
  return {
    year: date.getUTCFullYear(),
    month: date.getUTCMonth() + 1,
    day: date.getUTCDate(),
    hour: date.getUTCHours(),
    minute: date.getUTCMinutes(),
    second: date.getUTCSeconds(),
  };
};
const at = (iso: string) => new Date(iso);
const local = (text: string): LocalDateTime => {
  const parsed = parseSendAtLocal(text);
  if (!parsed.ok) throw new Error(`test fixture ${text} does not parse`);
  return parsed.value;
};
const instantOf = (text: string, zone: string) => zonedInstant(local(text), zone).toISOString();

const ZONES = Intl.supportedValuesOf('timeZone');
/** The transitions inside the window (the oracle knows a few days either side). */
const transitionsInWindow = (zone: string) =>
  transitionsOf(zone).filter((t) => t.at >= FROM && t.at <= UNTIL);
const DST_ZONES = ZONES.filter((zone) => transitionsInWindow(zone).length > 0);

describe('the oracle', () => {
  it('sees transitions far enough apart that weekly sampling cannot miss one between two it found', () => {
    for (const zone of DST_ZONES) {
      const list = transitionsOf(zone);
      for (let i = 1; i < list.length; i++)
        expect((list[i] as Transition).at - (list[i - 1] as Transition).at).toBeGreaterThan(2 * SAMPLE_STEP);
    }
  });
});

describe('time_zone: an IANA name (DESIGN §16)', () => {
  it.each([
    'Europe/Berlin',
    'America/New_York',
    'Australia/Lord_Howe',
    'Pacific/Apia',
    'Asia/Kolkata',
    'Asia/Calcutta',
    'UTC',
    'Etc/UTC',
    'Etc/GMT+5',
    'US/Eastern',
    'Europe/Kyiv',
  ])('accepts %s', (zone) => {
    expect(isTimeZone(zone)).toBe(true);
    expect(validateTimeZone(zone)).toEqual({ ok: true, value: zone });
  });

  it('accepts every zone Node knows', () => {
    expect(ZONES.length).toBeGreaterThan(300);
    expect(ZONES.filter((zone) => !isTimeZone(zone))).toEqual([]);
  });

  it.each([
    'Mars/Olympus_Mons',
    'Europe/Berlinn',
    '+01:00',
    'Z',
    'CEST',
    '',
    'europe/berlin',
    'utc',
    ' Europe/Berlin',
    'Europe/Berlin/',
    '../etc/passwd',
  ])('refuses %j with a field error naming /time_zone', (zone) => {
    expect(isTimeZone(zone)).toBe(false);
    const answer = validateTimeZone(zone);
    expect(answer.ok).toBe(false);
    if (!answer.ok) {
      expect(answer.errors).toHaveLength(1);
      expect(answer.errors[0]?.field).toBe('/time_zone');
    }
  });

  it.each(['EUROPE/BERLIN', 'Europe/BERLIN', 'America/New_york', 'Etc/Gmt+5', 'Utc'])(
    'refuses %j, a zone of the list in another case, for the API; a record holding it still reads',
    (zone) => {
      expect(validateTimeZone(zone)).toMatchObject({ ok: false, errors: [{ field: '/time_zone' }] });
      // Admitted before it was refused: a message stored with it still goes, in the zone it names.
      expect(isTimeZone(zone)).toBe(true);
    },
  );

  it('a conversion in an unknown zone throws a typed error naming the field, with the cause', () => {
    let thrown: unknown;
    try {
      zonedInstant(local('2027-01-01T09:00'), 'Mars/Olympus_Mons');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UnknownTimeZoneError);
    expect(thrown).toBeInstanceOf(PostdateError);
    expect(thrown).toMatchObject({ name: 'UnknownTimeZoneError', field: '/time_zone', class: 'permanent' });
    expect(() =>
      heldUntil(at('2027-01-01T00:00:00Z'), { start: '21:00', end: '08:00' }, 'Nope/Nope'),
    ).toThrow(UnknownTimeZoneError);
    expect(() => localDateTimeAt(at('2027-01-01T00:00:00Z'), 'Nope/Nope')).toThrow(UnknownTimeZoneError);
    // A stored window that is not one (a record written by hand) is a typed error too, never a guess.
    expect(() => heldUntil(at('2027-01-01T00:00:00Z'), { start: '21:00', end: '21:00' }, 'UTC')).toThrow(
      InvalidQuietHoursError,
    );
    expect(() => heldUntil(at('2027-01-01T00:00:00Z'), { start: '25:00', end: '08:00' }, 'UTC')).toThrow(
      expect.objectContaining({ field: '/quiet_hours', class: 'permanent' }),
    );
  });
});

describe('send_at_local: a wall-clock time without offset (DESIGN §16)', () => {
  it.each([
    ['2026-12-03T09:00', { year: 2026, month: 12, day: 3, hour: 9, minute: 0, second: 0 }],
    ['2026-12-03T09:00:30', { year: 2026, month: 12, day: 3, hour: 9, minute: 0, second: 30 }],
    ['2028-02-29T23:59:59', { year: 2028, month: 2, day: 29, hour: 23, minute: 59, second: 59 }],
  ])('reads %s', (text, expected) => {
    expect(parseSendAtLocal(text)).toEqual({ ok: true, value: expected });
  });

  it.each([
    '2026-12-03T09:00Z',
    '2026-12-03T09:00:00Z',
    '2026-12-03T09:00:00+01:00',
    '2026-12-03T09:00-05:00',
    '2026-12-03T09:00:00.000Z',
  ])('refuses %s: an offset names an instant, not a wall-clock time', (text) => {
    const answer = parseSendAtLocal(text);
    expect(answer).toMatchObject({ ok: false, errors: [{ field: '/send_at_local' }] });
    if (!answer.ok) expect(answer.errors[0]?.message).toMatch(/offset/);
  });

  it.each(['2026-12-03T09:00:00.5', '2026-12-03T09:00:00.000', '2026-12-03T09:00:00.123456'])(
    'refuses %s saying why: to the second, no fraction (as Python’s isoformat() gives with microseconds)',
    (text) => {
      const answer = parseSendAtLocal(text);
      expect(answer).toMatchObject({ ok: false, errors: [{ field: '/send_at_local' }] });
      if (!answer.ok) expect(answer.errors[0]?.message).toMatch(/fraction/);
    },
  );

  it.each([
    '2026-13-03T09:00',
    '2026-00-03T09:00',
    '2026-12-00T09:00',
    '2026-12-32T09:00',
    '2027-02-29T09:00',
    '2026-04-31T09:00',
    '2026-12-03T24:00',
    '2026-12-03T09:60',
    '2026-12-03T09:00:60',
    '2026-12-03',
    '2026-12-03 09:00',
    '2026-12-03T9:00',
    '26-12-03T09:00',
    'tomorrow at nine',
    '',
  ])('refuses %j with a field error naming /send_at_local', (text) => {
    expect(parseSendAtLocal(text)).toMatchObject({ ok: false, errors: [{ field: '/send_at_local' }] });
  });

  it('writes a wall-clock time back with seconds', () => {
    expect(formatLocalDateTime(local('2026-12-03T09:00'))).toBe('2026-12-03T09:00:00');
    expect(formatLocalDateTime(local('0999-01-02T03:04:05'))).toBe('0999-01-02T03:04:05');
  });
});

describe('(wall-clock time, zone) → the instant it names (DESIGN §16)', () => {
  it.each([
    // Ordinary times.
    ['2026-12-03T09:00', 'Europe/Berlin', '2026-12-03T08:00:00.000Z'],
    ['2027-07-01T09:00', 'Europe/Berlin', '2027-07-01T07:00:00.000Z'],
    ['2026-12-03T09:00', 'America/New_York', '2026-12-03T14:00:00.000Z'],
    ['2026-12-03T09:00', 'Asia/Kolkata', '2026-12-03T03:30:00.000Z'],
    ['2026-12-03T09:00:30', 'Asia/Kolkata', '2026-12-03T03:30:30.000Z'],
    ['2026-12-03T09:00', 'UTC', '2026-12-03T09:00:00.000Z'],
    // The spring gap: a time that does not exist moves forward by the gap's length.
    ['2027-03-28T02:30', 'Europe/Berlin', '2027-03-28T01:30:00.000Z'], // shown as 03:30 CEST
    ['2027-03-28T02:00', 'Europe/Berlin', '2027-03-28T01:00:00.000Z'], // shown as 03:00 CEST
    ['2027-03-28T03:00', 'Europe/Berlin', '2027-03-28T01:00:00.000Z'], // the first time after the gap
    ['2027-03-14T02:30', 'America/New_York', '2027-03-14T07:30:00.000Z'], // shown as 03:30 EDT
    ['2027-10-03T02:15', 'Australia/Lord_Howe', '2027-10-02T15:45:00.000Z'], // 30-min gap: 02:45 +11
    // The autumn overlap: a time that exists twice is the earlier instant.
    ['2027-10-31T02:30', 'Europe/Berlin', '2027-10-31T00:30:00.000Z'], // CEST, not CET (01:30Z)
    ['2027-11-07T01:30', 'America/New_York', '2027-11-07T05:30:00.000Z'], // EDT, not EST (06:30Z)
    ['2027-04-04T01:45', 'Australia/Lord_Howe', '2027-04-03T14:45:00.000Z'], // +11, not +10:30
    // Samoa skipped 30 December 2011 (−10 → +14): the whole day is a 24-hour gap.
    ['2011-12-29T23:30', 'Pacific/Apia', '2011-12-30T09:30:00.000Z'],
    ['2011-12-30T12:00', 'Pacific/Apia', '2011-12-30T22:00:00.000Z'], // shown as 31 Dec 12:00
    ['2011-12-31T12:00', 'Pacific/Apia', '2011-12-30T22:00:00.000Z'],
  ])('%s in %s is %s', (text, zone, iso) => {
    expect(instantOf(text, zone)).toBe(iso);
  });

  it('shows an instant as the wall clock in a zone (the message view)', () => {
    expect(formatLocalDateTime(localDateTimeAt(at('2026-12-03T08:00:00Z'), 'Europe/Berlin'))).toBe(
      '2026-12-03T09:00:00',
    );
    expect(formatLocalDateTime(localDateTimeAt(at('2027-03-28T01:30:00Z'), 'Europe/Berlin'))).toBe(
      '2027-03-28T03:30:00',
    );
    expect(formatLocalDateTime(localDateTimeAt(at('2027-10-31T01:30:00Z'), 'Europe/Berlin'))).toBe(
      '2027-10-31T02:30:00',
    );
    expect(formatLocalDateTime(localDateTimeAt(at('2011-12-30T10:00:00Z'), 'Pacific/Apia'))).toBe(
      '2011-12-31T00:00:00',
    );
    expect(formatLocalDateTime(localDateTimeAt(at('2026-12-03T03:30:59.999Z'), 'Asia/Kolkata'))).toBe(
      '2026-12-03T09:00:59',
    );
  });

  it('sendAtFromLocal answers the instant, or field errors naming each bad field', () => {
    expect(sendAtFromLocal('2026-12-03T09:00', 'Europe/Berlin')).toEqual({
      ok: true,
      value: at('2026-12-03T08:00:00Z'),
    });
    expect(sendAtFromLocal('2026-12-03T09:00Z', 'Mars/Olympus_Mons')).toMatchObject({
      ok: false,
      errors: [{ field: '/send_at_local' }, { field: '/time_zone' }],
    });
  });

  it('in every zone Node knows: each transition in the next 400 days, and an ordinary morning', () => {
    let gaps = 0;
    let overlaps = 0;
    for (const zone of ZONES) {
      const walls = [FROM + 100 * DAY + 9 * HOUR];
      for (const t of transitionsInWindow(zone)) {
        const middle = t.at + (t.before + t.after) / 2;
        walls.push(t.at + t.before, t.at + t.after, Math.floor(middle / 1000) * 1000);
        if (t.after > t.before) gaps++;
        else overlaps++;
      }
      for (const wall of walls) checkConversion(wall, zone);
    }
    // The machine's tz data has both kinds in the window (a sanity check on the oracle).
    expect(gaps).toBeGreaterThan(50);
    expect(overlaps).toBeGreaterThan(50);
  });

  it('property: shown back in its zone, the instant is the wall time asked for (+ the gap in a gap), the earlier one in an overlap', () => {
    fc.assert(
      fc.property(wallInZone(), ([zone, wall]) => checkConversion(wall, zone)),
      { numRuns: 1000 },
    );
  });
});

/** The rule of DESIGN §16 for one wall time, checked against the oracle. */
function checkConversion(wall: number, zone: string): void {
  const instant = zonedInstant(localOf(wall), zone).getTime();
  const showing = instantsShowing(wall, zone);
  if (showing.length > 0) {
    expect(wallOf(instant, zone)).toBe(wall);
    expect(instant).toBe(showing[0]);
  } else {
    const gap = gapAround(wall, zone);
    expect(gap).toBeGreaterThan(0);
    expect(wallOf(instant, zone)).toBe(wall + gap);
  }
  expect(formatLocalDateTime(localDateTimeAt(new Date(instant), zone))).toBe(
    new Date(wallOf(instant, zone)).toISOString().slice(0, 19),
  );
}

/** A zone and a wall time (ms as if UTC): anywhere in the window, or within 2 h of one of the zone's transitions. */
function wallInZone(): fc.Arbitrary<[string, number]> {
  const anywhere = fc
    .tuple(fc.constantFrom(...ZONES), fc.integer({ min: FROM, max: UNTIL }))
    .map(([zone, ms]): [string, number] => [zone, Math.floor(ms / 1000) * 1000]);
  const nearTransition = fc
    .tuple(
      fc.constantFrom(...DST_ZONES),
      fc.nat(),
      fc.boolean(),
      fc.integer({ min: -2 * 3600, max: 2 * 3600 }),
    )
    .map(([zone, pick, useAfter, seconds]): [string, number] => {
      const list = transitionsInWindow(zone);
      const t = list[pick % list.length] as Transition;
      return [zone, t.at + (useAfter ? t.after : t.before) + seconds * 1000];
    });
  return fc.oneof(anywhere, nearTransition);
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
/** Whether the wall clock at an instant is inside [start, end) (crossing midnight when end < start). */
function insideWindow(ms: number, quiet: QuietHours, zone: string): boolean {
  const [, , , h, mi, s] = wallFieldsOf(ms, zone) as number[];
  const second = (h as number) * 3600 + (mi as number) * 60 + (s as number);
  const start = minutesOf(quiet.start) * 60;
  const end = minutesOf(quiet.end) * 60;
  return start < end ? second >= start && second < end : second >= start || second < end;
}
const hhmm = (minutes: number) =>
  `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

describe('quiet hours: a message due inside them waits for their end (DESIGN §16)', () => {
  const night: QuietHours = { start: '21:00', end: '08:00' };

  it.each([
    // Berlin in winter is UTC+1.
    ['2026-12-03T21:00:00Z', night, 'Europe/Berlin', '2026-12-04T07:00:00.000Z'], // 22:00 → 08:00 next day
    ['2026-12-03T06:59:59Z', night, 'Europe/Berlin', '2026-12-03T07:00:00.000Z'], // 07:59:59 → 08:00
    ['2026-12-03T20:00:00Z', night, 'Europe/Berlin', '2026-12-04T07:00:00.000Z'], // 21:00 sharp is inside
    ['2026-12-03T22:59:00Z', night, 'Europe/Berlin', '2026-12-04T07:00:00.000Z'], // 23:59 → tomorrow
    ['2026-12-03T23:00:00Z', night, 'Europe/Berlin', '2026-12-04T07:00:00.000Z'], // 00:00 → today
    ['2026-12-03T12:30:00Z', { start: '13:00', end: '14:00' }, 'Europe/Berlin', '2026-12-03T13:00:00.000Z'],
    ['2026-12-03T03:29:00Z', { start: '08:00', end: '09:00' }, 'Asia/Kolkata', '2026-12-03T03:30:00.000Z'],
    // The night the clocks go forward: 08:00 CEST is 06:00Z.
    ['2027-03-27T22:00:00Z', night, 'Europe/Berlin', '2027-03-28T06:00:00.000Z'],
    // An end inside the gap: the window ends when the clock jumps past it, 02:00 CET → 03:00 CEST
    // (decision 0194: 03:00–03:30 is no quiet time; a message due at 03:10 goes then).
    ['2027-03-27T22:00:00Z', { start: '22:00', end: '02:30' }, 'Europe/Berlin', '2027-03-28T01:00:00.000Z'],
    // The clock falling back out of the window ends it too: 02:59:59 CEST → 02:00 CET is outside 02:30–03:00.
    ['2027-10-31T00:45:00Z', { start: '02:30', end: '03:00' }, 'Europe/Berlin', '2027-10-31T01:00:00.000Z'],
    // The night the clocks go back: an end in the overlap is the first 02:30 after the due time…
    ['2027-10-30T23:15:00Z', { start: '01:00', end: '02:30' }, 'Europe/Berlin', '2027-10-31T00:30:00.000Z'],
    // …and a message due at 02:10 CET (the second pass through 01:00–02:30) waits for 02:30 CET.
    ['2027-10-31T01:10:00Z', { start: '01:00', end: '02:30' }, 'Europe/Berlin', '2027-10-31T01:30:00.000Z'],
    // Lord Howe's 30-minute gap: 02:15 does not exist on 3 Oct 2027; the clock jumps to 02:30 (+11).
    [
      '2027-10-02T11:00:00Z',
      { start: '21:00', end: '02:15' },
      'Australia/Lord_Howe',
      '2027-10-02T15:30:00.000Z',
    ],
    // Cairo jumps 00:00 → 01:00 on 30 April 2027: 01:00–01:30 is outside 01:30–00:30, so the message
    // goes at 01:00, not a day later (an end moved by the gap, 01:30, would be inside the window).
    ['2027-04-29T21:45:00Z', { start: '01:30', end: '00:30' }, 'Africa/Cairo', '2027-04-29T22:00:00.000Z'],
    // Samoa had no 30 December 2011: a message held at 22:00 on the 29th goes at 08:00 on the 31st.
    ['2011-12-30T08:00:00Z', night, 'Pacific/Apia', '2011-12-30T18:00:00.000Z'],
  ])('due %s, quiet %o in %s → held until %s', (due, quiet, zone, until) => {
    expect(heldUntil(at(due), quiet, zone)?.toISOString()).toBe(until);
  });

  it.each([
    ['2026-12-03T07:00:00Z', night, 'Europe/Berlin'], // 08:00 sharp: the window has ended
    ['2026-12-03T19:59:59Z', night, 'Europe/Berlin'], // 20:59:59
    ['2026-12-03T11:00:00Z', night, 'Europe/Berlin'],
    ['2026-12-03T13:00:00Z', { start: '13:00', end: '14:00' }, 'Europe/Berlin'], // 14:00
    ['2026-12-03T04:00:00Z', night, 'Asia/Kolkata'], // 09:30
    ['2026-12-03T03:30:00Z', { start: '08:00', end: '09:00' }, 'Asia/Kolkata'], // 09:00
  ])('due %s, quiet %o in %s → not held', (due, quiet, zone) => {
    expect(heldUntil(at(due), quiet, zone)).toBeUndefined();
  });

  it('property: held exactly when due inside, until the first instant the wall clock is outside the window (brute force over minutes)', () => {
    fc.assert(
      fc.property(quietCase(), ([zone, quiet, due]) => {
        const until = heldUntil(new Date(due), quiet, zone);
        expect(until === undefined).toBe(!insideWindow(due, quiet, zone));
        if (until === undefined) return;
        expect(until.toISOString()).toBe(new Date(firstMinuteOutside(due, quiet, zone)).toISOString());
      }),
      { numRuns: 1000 },
    );
  });
});

/**
 * The brute force: minute by minute after `due`, the first instant whose wall clock (the oracle's
 * offset segments) is outside the window. Every wall-clock step in these years is on a whole minute.
 */
function firstMinuteOutside(due: number, quiet: QuietHours, zone: string): number {
  const [start, end] = [minutesOf(quiet.start), minutesOf(quiet.end)];
  const segments = segmentsOf(zone);
  for (let t = Math.floor(due / MINUTE) * MINUTE + MINUTE; t < due + 3 * DAY; t += MINUTE) {
    const offset = (segments.find((segment) => t >= segment.from && t < segment.to) as Segment).offset;
    const minute = Math.floor(((((t + offset) % DAY) + DAY) % DAY) / MINUTE);
    if (start < end ? minute < start || minute >= end : minute < start && minute >= end) return t;
  }
  throw new Error('the oracle found no end of the window within 3 days');
}

/** A zone, a quiet window (start ≠ end, on whole minutes) and a due instant, often near a transition. */
function quietCase(): fc.Arbitrary<[string, QuietHours, number]> {
  const window = fc
    .tuple(fc.integer({ min: 0, max: 1439 }), fc.integer({ min: 1, max: 1439 }))
    .map(([start, length]): QuietHours => ({ start: hhmm(start), end: hhmm((start + length) % 1440) }));
  const anywhere = fc
    .tuple(fc.constantFrom(...ZONES), window, fc.integer({ min: FROM, max: UNTIL }))
    .map(([zone, quiet, due]): [string, QuietHours, number] => [zone, quiet, due]);
  // Near a transition, with the window's start or end often at the transition's wall times.
  const nearTransition = fc
    .tuple(
      fc.constantFrom(...DST_ZONES),
      fc.nat(),
      window,
      fc.constantFrom('none', 'start', 'end'),
      fc.integer({ min: -90, max: 90 }),
      fc.integer({ min: -30 * 3600, max: 30 * 3600 }),
    )
    .map(([zone, pick, quiet, pin, shift, seconds]): [string, QuietHours, number] => {
      const list = transitionsInWindow(zone);
      const t = list[pick % list.length] as Transition;
      const wallMinutes = Math.floor(((((t.at + t.before) % DAY) + DAY) % DAY) / MINUTE);
      const pinned = hhmm((wallMinutes + shift + 1440) % 1440);
      const windowed =
        pin === 'start' && pinned !== quiet.end
          ? { start: pinned, end: quiet.end }
          : pin === 'end' && pinned !== quiet.start
            ? { start: quiet.start, end: pinned }
            : quiet;
      return [zone, windowed, t.at + seconds * 1000];
    });
  return fc.oneof(anywhere, nearTransition);
}

describe('quiet hours and not_after (DESIGN §16: unless not_after comes first)', () => {
  const night: QuietHours = { start: '21:00', end: '08:00' };
  const zone = 'Europe/Berlin';
  const due = at('2026-12-03T21:00:00Z'); // 22:00 in Berlin; the window ends at 07:00Z tomorrow

  it('sends a message due outside the window, or with no quiet hours', () => {
    expect(
      quietHoursDecision({ due: at('2026-12-03T11:00:00Z'), quietHours: night, timeZone: zone }),
    ).toEqual({
      kind: 'send',
    });
    expect(quietHoursDecision({ due, quietHours: null, timeZone: zone, notAfter: null })).toEqual({
      kind: 'send',
    });
    expect(quietHoursDecision({ due, quietHours: undefined, timeZone: null })).toEqual({ kind: 'send' });
  });

  it('holds one due inside until the end, when not_after allows it (a deadline at the end itself allows it)', () => {
    const until = at('2026-12-04T07:00:00Z');
    expect(quietHoursDecision({ due, quietHours: night, timeZone: zone })).toEqual({ kind: 'hold', until });
    expect(
      quietHoursDecision({ due, quietHours: night, timeZone: zone, notAfter: at('2026-12-04T07:00:00Z') }),
    ).toEqual({ kind: 'hold', until });
    expect(
      quietHoursDecision({ due, quietHours: night, timeZone: zone, notAfter: at('2026-12-05T00:00:00Z') }),
    ).toEqual({ kind: 'hold', until });
  });

  it('expires one whose not_after comes before the window ends', () => {
    expect(
      quietHoursDecision({
        due,
        quietHours: night,
        timeZone: zone,
        notAfter: at('2026-12-04T06:59:59.999Z'),
      }),
    ).toEqual({ kind: 'expire' });
  });

  it('property: send outside, hold until heldUntil, expire exactly when not_after is before it', () => {
    fc.assert(
      fc.property(
        quietCase(),
        fc.option(fc.integer({ min: -DAY, max: 3 * DAY })),
        ([tz, quiet, d], slack) => {
          const notAfter = slack === null ? null : new Date(d + slack);
          const decision = quietHoursDecision({
            due: new Date(d),
            quietHours: quiet,
            timeZone: tz,
            notAfter,
          });
          const until = heldUntil(new Date(d), quiet, tz);
          if (until === undefined) expect(decision).toEqual({ kind: 'send' });
          else if (notAfter !== null && notAfter.getTime() < until.getTime())
            expect(decision).toEqual({ kind: 'expire' });
          else expect(decision).toEqual({ kind: 'hold', until });
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the request fields (send_at_local, time_zone, quiet_hours) as a zod fragment', () => {
  // As the API will compose it: its own fields beside send_at and delay_seconds, and the rules.
  const Body = z
    .strictObject({ send_at: z.string().nullish(), delay_seconds: z.int().nullish(), ...LOCAL_TIME_FIELDS })
    .superRefine(localTimeRules);
  const errors = (body: unknown) => {
    const parsed = Body.safeParse(body, PARSE_CONTEXT);
    return parsed.success ? [] : zodErrors(parsed.error);
  };

  it('accepts a local time with its zone, quiet hours with a zone, or none of them', () => {
    expect(errors({ send_at_local: '2026-12-03T09:00', time_zone: 'Europe/Berlin' })).toEqual([]);
    expect(
      errors({
        send_at_local: '2026-12-03T09:00:00',
        time_zone: 'Asia/Kolkata',
        quiet_hours: { start: '21:00', end: '08:00' },
      }),
    ).toEqual([]);
    expect(errors({ send_at: '2026-12-03T09:00:00Z', time_zone: 'UTC', quiet_hours: night() })).toEqual([]);
    expect(errors({ time_zone: 'Europe/Berlin', quiet_hours: night() })).toEqual([]);
    expect(errors({})).toEqual([]);
  });

  it.each([
    [{ send_at_local: '2026-12-03T09:00Z', time_zone: 'Europe/Berlin' }, '/send_at_local'],
    [{ send_at_local: '2026-02-30T09:00', time_zone: 'Europe/Berlin' }, '/send_at_local'],
    [{ send_at_local: '2026-12-03T09:00', time_zone: 'Mars/Olympus_Mons' }, '/time_zone'],
    [{ send_at_local: '2026-12-03T09:00' }, '/time_zone'],
    [{ quiet_hours: { start: '21:00', end: '08:00' } }, '/time_zone'],
    [
      { send_at_local: '2026-12-03T09:00', time_zone: 'UTC', send_at: '2026-12-03T09:00:00Z' },
      '/send_at_local',
    ],
    [{ send_at_local: '2026-12-03T09:00', time_zone: 'UTC', delay_seconds: 60 }, '/send_at_local'],
    [{ time_zone: 'UTC', quiet_hours: { start: '21:00', end: '21:00' } }, '/quiet_hours/end'],
    [{ time_zone: 'UTC', quiet_hours: { start: '24:00', end: '08:00' } }, '/quiet_hours/start'],
    [{ time_zone: 'UTC', quiet_hours: { start: '21:00', end: '8:00' } }, '/quiet_hours/end'],
    [{ time_zone: 'UTC', quiet_hours: { start: '21:00', end: '08:60' } }, '/quiet_hours/end'],
    [{ time_zone: 'UTC', quiet_hours: { start: '21:00' } }, '/quiet_hours/end'],
    [{ time_zone: 'UTC', quiet_hours: { start: '21:00', end: '08:00', tz: 'x' } }, '/quiet_hours/tz'],
    [{ time_zone: 42 }, '/time_zone'],
  ])('refuses %o naming %s', (body, field) => {
    expect(errors(body).map((error) => error.field)).toContain(field);
  });

  it('its messages never echo the value', () => {
    const found = errors({ send_at_local: 'secret@example.com', time_zone: 'secret@example.com' });
    expect(found.length).toBeGreaterThan(0);
    for (const error of found) expect(error.message).not.toContain('secret');
  });
});

function night(): QuietHours {
  return { start: '21:00', end: '08:00' };
}
