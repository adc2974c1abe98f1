/**
 * Local time and quiet hours (DESIGN §16): a wall-clock time in an IANA zone turned into the instant
 * it names, the instant shown back as a wall clock, and the quiet-hours rule the sender applies
 * whenever a message comes due. Pure: the zone rules are the runtime's `Intl` data (Node 20 has no
 * Temporal), the clock is an argument. docs/decisions/0056-local-time.md says why each rule is what it is.
 * The request fields' schemas are messageSchema.ts's.
 *
 * Daylight saving, as java.time and Temporal's `compatible` disambiguation do it:
 * - a wall time that does not exist (the spring gap) moves forward by the gap's length: 02:30 in a
 *   02:00→03:00 gap is 03:30;
 * - a wall time that exists twice (the autumn overlap) is the earlier instant.
 */
import { ERROR_CLASS, PostdateError } from './postdateError.js';
import type { FieldError, Validated } from './problem.js';

/** A wall-clock date and time with no zone: what a clock on the recipient's wall shows. */
export interface LocalDateTime {
  readonly year: number;
  /** 1–12. */
  readonly month: number;
  readonly day: number;
  /** 0–23. */
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

/** Quiet hours in the message's `time_zone`: `HH:MM` each, start ≠ end; end < start crosses midnight. */
export interface QuietHours {
  readonly start: string;
  readonly end: string;
}

/** A zone the runtime does not know (a hand-written record, an older runtime): never a guess. */
export class UnknownTimeZoneError extends PostdateError {
  override readonly name = 'UnknownTimeZoneError';
  readonly field = '/time_zone';
  constructor(cause?: unknown) {
    super('time_zone is not a time zone this runtime knows', { class: ERROR_CLASS.permanent, cause });
  }
}

/** A quiet-hours window that is not one (start = end, not `HH:MM`): never a guess. */
export class InvalidQuietHoursError extends PostdateError {
  override readonly name = 'InvalidQuietHoursError';
  readonly field = '/quiet_hours';
  constructor() {
    super('quiet_hours must be two different HH:MM times', { class: ERROR_CLASS.permanent });
  }
}

const SECOND = 1000;
const DAY = 86_400 * SECOND;

// ── Zones ─────────────────────────────────────────────────────────────────────────────────────

/** How an IANA name is spelled: components that start with a capital (`Etc/GMT+5`, `EST5EDT`). */
const IANA_NAME = /^[A-Z][A-Za-z0-9_+-]*(?:\/[A-Z][A-Za-z0-9_+-]*)*$/;
/** Longer than any name in the tz database (the longest is 32): refused before `Intl` reads it. */
export const MAX_ZONE_LENGTH = 64;
export const TIME_ZONE_MESSAGE =
  'must be an IANA time zone name as the tz database spells it, e.g. Europe/Berlin';

/**
 * Names of the tz database that Node 20's list leaves out and users type most: the `etcetera` file's
 * zones and the links to them in `backward` (UTC, GMT and the fixed offsets `Etc/GMT+5`), spelled as
 * the tz database spells them.
 */
const UNLISTED_SPELLINGS: readonly string[] = [
  ...['UTC', 'UCT', 'GMT', 'GMT0', 'GMT+0', 'GMT-0', 'Greenwich', 'Universal', 'Zulu'].flatMap((name) => [
    name,
    `Etc/${name}`,
  ]),
  ...Array.from({ length: 12 }, (_, hours) => `Etc/GMT+${hours + 1}`),
  ...Array.from({ length: 14 }, (_, hours) => `Etc/GMT-${hours + 1}`),
];
/** Every spelling known to be the tz database's, and the same in lower case (a match there alone is mis-cased). */
let spelled: { readonly exact: ReadonlySet<string>; readonly lowerCase: ReadonlySet<string> } | undefined;

/** Node's own list of zones (`Intl.supportedValuesOf('timeZone')`), read once, when first asked. */
let listed: ReadonlySet<string> | undefined;

function listedZones(): ReadonlySet<string> {
  listed ??= new Set(Intl.supportedValuesOf('timeZone'));
  return listed;
}

/**
 * Whether `name` is a time zone a stored record may hold: one of `Intl.supportedValuesOf('timeZone')`,
 * or a name `Intl` reads in the form of the tz database (each part starts with a capital: `UTC`,
 * `Asia/Kolkata`, `US/Eastern`). What the sender and the view read; the API admits less
 * ({@link isTimeZoneAsSpelled}), so a record it admitted before keeps going.
 */
export function isTimeZone(name: string): boolean {
  if (listedZones().has(name)) return true;
  if (name.length > MAX_ZONE_LENGTH || !IANA_NAME.test(name)) return false;
  try {
    formatterFor(name);
    return true;
  } catch {
    // Unknown to Intl: the answer is "not a zone", the RangeError says nothing more.
    return false;
  }
}

/**
 * Whether the API admits `name` as `time_zone`: a time zone ({@link isTimeZone}) spelled as the tz
 * database spells it. Case matters, as in the tz database and java.time: `europe/berlin` and
 * `EUROPE/BERLIN` are refused even though `Intl` reads them, so one zone has one spelling in records
 * and metrics (decisions 0056, 0259). A name in Node's list (or UTC, GMT and the `Etc` zones, which it
 * leaves out) is matched exactly, and a case variant of one is refused; Node lists no other aliases, so
 * one of those is held to the form only (`US/EASTERN` passes).
 */
export function isTimeZoneAsSpelled(name: string): boolean {
  if (spelled === undefined) {
    const exact = new Set([...listedZones(), ...UNLISTED_SPELLINGS]);
    spelled = { exact, lowerCase: new Set([...exact].map((zone) => zone.toLowerCase())) };
  }
  if (spelled.exact.has(name)) return true;
  return !spelled.lowerCase.has(name.toLowerCase()) && isTimeZone(name);
}

/** `time_zone` checked for the API: the name, or a field error naming `/time_zone` (never echoing the value). */
export function validateTimeZone(name: string): Validated<string> {
  return isTimeZoneAsSpelled(name)
    ? { ok: true, value: name }
    : { ok: false, errors: [{ field: '/time_zone', message: TIME_ZONE_MESSAGE }] };
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone (building one costs far more than using it); throws for an unknown zone. */
function formatterFor(zone: string): Intl.DateTimeFormat {
  let format = formatters.get(zone);
  if (format) return format;
  try {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch (error) {
    throw new UnknownTimeZoneError(error);
  }
  formatters.set(zone, format);
  return format;
}

/**
 * The wall clock at an instant, as milliseconds read as if UTC ("wall ms"): whole seconds, so
 * `wallAt(t) - t` is the zone's offset at `t` (to the second: old local mean times have seconds).
 */
function wallAt(instantMs: number, zone: string): number {
  const fields = { year: 0, month: 1, day: 1, hour: 0, minute: 0, second: 0 };
  let beforeChrist = false;
  for (const part of formatterFor(zone).formatToParts(instantMs)) {
    if (part.type === 'era') beforeChrist = part.value.startsWith('B');
    else if (part.type in fields) fields[part.type as keyof typeof fields] = Number(part.value);
  }
  return wallMsOf({ ...fields, year: beforeChrist ? 1 - fields.year : fields.year });
}

const offsetAt = (instantMs: number, zone: string) =>
  wallAt(instantMs, zone) - Math.floor(instantMs / SECOND) * SECOND;

function wallMsOf(local: LocalDateTime): number {
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0–99 as 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(local.year, local.month - 1, local.day);
  date.setUTCHours(local.hour, local.minute, local.second, 0);
  return date.getTime();
}

function localOf(wallMs: number): LocalDateTime {
  const date = new Date(wallMs);
  return {
    year: date.getUTCFullYear(),
    month: date.getUTCMonth() + 1,
    day: date.getUTCDate(),
    hour: date.getUTCHours(),
    minute: date.getUTCMinutes(),
    second: date.getUTCSeconds(),
  };
}

/**
 * Every instant whose wall clock is `wallMs`, earliest first: none in a gap, two in an overlap.
 * The offsets tried are those a day before and a day after, as Temporal's reference code does: no
 * zone changes its offset twice within two days (the closest in the tz data are weeks apart).
 */
function instantsShowing(wallMs: number, zone: string): number[] {
  const offsets = new Set([offsetAt(wallMs - DAY, zone), offsetAt(wallMs + DAY, zone)]);
  return [...offsets]
    .map((offset) => wallMs - offset)
    .filter((instant) => wallAt(instant, zone) === wallMs)
    .sort((a, b) => a - b);
}

/**
 * The instants a wall time resolves to: those that show it, or — in a gap — the one instant it
 * moves forward to by the gap's length (Temporal's `compatible`: shift by the offset change, take
 * the later instant showing the shifted time).
 */
function resolveWall(wallMs: number, zone: string): number[] {
  const showing = instantsShowing(wallMs, zone);
  if (showing.length > 0) return showing;
  const offsetBefore = offsetAt(wallMs - DAY, zone);
  const gap = offsetAt(wallMs + DAY, zone) - offsetBefore;
  const later = instantsShowing(wallMs + gap, zone).at(-1);
  return [later ?? wallMs - offsetBefore];
}

/** The instant a wall-clock time names in `zone`: forward by the gap in a gap, the earlier in an overlap. */
export function zonedInstant(local: LocalDateTime, zone: string): Date {
  return new Date(resolveWall(wallMsOf(local), zone)[0] as number);
}

/** The wall clock an instant shows in `zone` (the message view's `send_at_local`). */
export function localDateTimeAt(instant: Date, zone: string): LocalDateTime {
  return localOf(wallAt(instant.getTime(), zone));
}

// ── send_at_local ─────────────────────────────────────────────────────────────────────────────

const LOCAL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/i;
const WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)$/i;
const WITH_FRACTION = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[.,]\d+$/i;
const SEND_AT_LOCAL_MESSAGES = {
  offset: 'must be a local time without an offset or Z (an instant is send_at)',
  fraction: 'must be a local time to the second, without a fraction: 2026-12-03T09:00:00',
  form: 'must be a local date-time like 2026-12-03T09:00 or 2026-12-03T09:00:00',
  range: 'is not a date and time of the calendar (month 01–12, a day of that month, 00:00:00–23:59:59)',
} as const;

/** `send_at_local` read: `YYYY-MM-DDTHH:MM` or `…:SS`, no offset, a real calendar date. */
export function parseSendAtLocal(text: string): Validated<LocalDateTime> {
  const refuse = (message: string): Validated<LocalDateTime> => ({
    ok: false,
    errors: [{ field: '/send_at_local', message }],
  });
  const match = LOCAL_DATE_TIME.exec(text);
  if (!match) {
    const why = WITH_OFFSET.test(text) ? 'offset' : WITH_FRACTION.test(text) ? 'fraction' : 'form';
    return refuse(SEND_AT_LOCAL_MESSAGES[why]);
  }
  const [year, month, day, hour, minute, second] = match.slice(1).map((field) => Number(field ?? '0')) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const valid =
    year >= 1 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth(year, month) &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59;
  return valid
    ? { ok: true, value: { year, month, day, hour, minute, second } }
    : refuse(SEND_AT_LOCAL_MESSAGES.range);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** A wall-clock time as `YYYY-MM-DDTHH:MM:SS` (the message view's form: always with seconds). */
export function formatLocalDateTime(local: LocalDateTime): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${String(local.year).padStart(4, '0')}-${two(local.month)}-${two(local.day)}T${two(local.hour)}:${two(local.minute)}:${two(local.second)}`;
}

/** `send_at_local` in `time_zone` as the instant to store as `send_at`, or every bad field. */
export function sendAtFromLocal(sendAtLocal: string, timeZone: string): Validated<Date> {
  const local = parseSendAtLocal(sendAtLocal);
  const zone = validateTimeZone(timeZone);
  if (!local.ok || !zone.ok) {
    const errors: FieldError[] = [...(local.ok ? [] : local.errors), ...(zone.ok ? [] : zone.errors)];
    return { ok: false, errors };
  }
  return { ok: true, value: zonedInstant(local.value, zone.value) };
}

// ── Quiet hours ───────────────────────────────────────────────────────────────────────────────

/** A quiet-hours bound: `HH:MM`, 00:00–23:59. */
export const HH_MM = /^([01]\d|2[0-3]):([0-5]\d)$/;
export const HH_MM_MESSAGE = 'must be a time of day HH:MM, 00:00–23:59';
export const SAME_START_AND_END_MESSAGE =
  'must differ from start (a window from a time to itself is ambiguous: omit quiet_hours for none)';

/** The window in seconds of the day: [start, end), crossing midnight when end < start. */
interface Window {
  readonly start: number;
  readonly end: number;
}

/** Two different `HH:MM` (what the API admits): a stored window the sender can read. */
const isWindow = (quietHours: QuietHours) =>
  HH_MM.test(quietHours.start) && HH_MM.test(quietHours.end) && quietHours.start !== quietHours.end;

function windowOf(quietHours: QuietHours): Window {
  const start = HH_MM.exec(quietHours.start);
  const end = HH_MM.exec(quietHours.end);
  if (!start || !end || quietHours.start === quietHours.end) throw new InvalidQuietHoursError();
  const seconds = (match: RegExpExecArray) => Number(match[1]) * 3600 + Number(match[2]) * 60;
  return { start: seconds(start), end: seconds(end) };
}

/** Whether a wall time (wall ms) is inside the window: its start included, its end not. */
function isInside(wallMs: number, window: Window): boolean {
  const second = (((wallMs % DAY) + DAY) % DAY) / SECOND;
  return window.start < window.end
    ? second >= window.start && second < window.end
    : second >= window.start || second < window.end;
}

/** A hold never reaches this many days; not finding an end within them is a broken zone, not a wait. */
const MAX_HOLD_DAYS = 4;

/**
 * When a message that comes due at `due` may go, given quiet hours in `zone`: undefined when `due`
 * is outside the window; otherwise the window's end — the first instant after `due` whose wall clock
 * is outside it (docs/decisions/0194-a-quiet-window-ends-when-the-clock-leaves-it.md). The clock leaves
 * the window by reaching its end, or by jumping out of it: over an end in a spring gap (02:00→03:00
 * with an end at 02:30 ends it at 03:00, not 03:30), or back out of it at a fall-back. So the walk
 * goes from `due` one stretch of constant offset at a time; after a fall-back the window can come
 * round twice in one night, and a message due in the second pass waits for the second end.
 */
export function heldUntil(due: Date, quietHours: QuietHours, zone: string): Date | undefined {
  const window = windowOf(quietHours);
  const dueMs = due.getTime();
  if (!isInside(wallAt(dueMs, zone), window)) return undefined;
  for (let from = dueMs; from < dueMs + MAX_HOLD_DAYS * DAY; ) {
    // Inside the window at `from`, on a wall clock `offset` ahead until the next transition.
    const offset = offsetAt(from, zone);
    const wall = from + offset;
    const wallOfDay = ((wall % DAY) + DAY) % DAY;
    const end = from + ((window.end * SECOND - wallOfDay + DAY) % DAY);
    const transition = nextTransition(from, offset, zone);
    if (transition === undefined || end < transition) return new Date(end);
    if (!isInside(wallAt(transition, zone), window)) return new Date(transition);
    from = transition;
  }
  throw new PostdateError(`no end of quiet hours within ${MAX_HOLD_DAYS} days`, {
    class: ERROR_CLASS.permanent,
  });
}

/**
 * The first whole second within a day after `from` at which `zone`'s offset is no longer `offset`
 * (found by bisection), or undefined when it keeps it for that day: no zone changes its offset twice
 * within two days (see {@link instantsShowing}), so one look a day ahead is enough.
 */
function nextTransition(from: number, offset: number, zone: string): number | undefined {
  let low = Math.floor(from / SECOND) * SECOND;
  let high = low + DAY;
  if (offsetAt(high, zone) === offset) return undefined;
  while (high - low > SECOND) {
    const middle = low + Math.floor((high - low) / (2 * SECOND)) * SECOND;
    if (offsetAt(middle, zone) === offset) low = middle;
    else high = middle;
  }
  return high;
}

/** What quiet hours make of a message that comes due now: hold is no attempt (DESIGN §16). */
export type QuietHoursDecision =
  | { readonly kind: 'send' }
  | { readonly kind: 'hold'; readonly until: Date }
  /** Its `not_after` comes before the window ends: it can never go, so it expires. */
  | { readonly kind: 'expire' }
  /**
   * Its window cannot be read — a zone this runtime does not know (a hand-written record, an outbox
   * on a runtime with newer tz data), no zone, a window that is not one: it can never go as stored.
   */
  | { readonly kind: 'unreadable'; readonly reason: string };

export interface QuietHoursInput {
  /** When the message comes due: its send time, or now after a retry, an outage or a pause. */
  readonly due: Date;
  readonly quietHours?: QuietHours | null;
  readonly timeZone?: string | null;
  readonly notAfter?: Date | null;
}

/**
 * Quiet hours combined with `not_after`: send when due outside them; hold until their end; expire
 * when `not_after` comes before that end (a deadline at the end itself still lets it go, as a
 * deadline is only past once it is behind us). Whether `not_after` is already past at `due` is the
 * sender's deadline check (core/unsentDecision.ts), made before this one. A window that cannot be
 * read is an answer, never a throw: the sender fails the message rather than keep a copy that never goes.
 */
export function quietHoursDecision(input: QuietHoursInput): QuietHoursDecision {
  if (input.quietHours == null) return { kind: 'send' };
  // Read as a record may hold them (isTimeZone: what the API admits or once admitted; two different
  // HH:MM), the zone named, cut to a name's length.
  const zone = input.timeZone;
  const unreadable = (why: string) =>
    ({ kind: 'unreadable', reason: `${why}; quiet hours cannot be read` }) as const;
  if (zone == null) return unreadable('quiet_hours without a time_zone');
  if (!isTimeZone(zone))
    return unreadable(`time_zone ${zone.slice(0, MAX_ZONE_LENGTH)} is not a time zone this sender knows`);
  if (!isWindow(input.quietHours)) return unreadable('quiet_hours are not two different HH:MM times');
  const until = heldUntil(input.due, input.quietHours, zone);
  if (until === undefined) return { kind: 'send' };
  if (input.notAfter != null && input.notAfter.getTime() < until.getTime()) return { kind: 'expire' };
  return { kind: 'hold', until };
}
