/**
 * Parsing of EventBridge Scheduler one-time expressions: `at(yyyy-mm-ddThh:mm:ss)` evaluated in an
 * IANA time zone (`ScheduleExpressionTimezone`, UTC when absent). Pure: no clock, no I/O.
 */

/** Raised for an expression or time zone the Scheduler API would reject with ValidationException. */
export class ScheduleExpressionError extends Error {
  override readonly name = 'ScheduleExpressionError';
}

const AT_PATTERN = /^at\((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\)$/;

/** True when the expression is a recurring one (`rate(...)` or `cron(...)`), which the emulator stores but never fires. */
export function isRecurringExpression(expression: string): boolean {
  return /^(rate|cron)\(.+\)$/.test(expression);
}

/** Checks that `timeZone` is an IANA zone name the runtime knows. */
export function assertTimeZone(timeZone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    throw new ScheduleExpressionError(`Invalid ScheduleExpressionTimezone ${timeZone}`);
  }
}

/**
 * The instant (epoch ms) that `at(...)` names in `timeZone`. A wall-clock time that a DST change
 * skips resolves to the later offset, like java.time's ZonedDateTime.
 */
export function parseAtExpression(expression: string, timeZone = 'UTC'): number {
  const match = AT_PATTERN.exec(expression);
  if (!match) throw new ScheduleExpressionError(`Invalid Schedule Expression ${expression}`);
  assertTimeZone(timeZone);
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const wallClock = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(wallClock);
  if (
    check.getUTCFullYear() !== year ||
    check.getUTCMonth() !== month - 1 ||
    check.getUTCDate() !== day ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  ) {
    throw new ScheduleExpressionError(`Invalid Schedule Expression ${expression}`);
  }
  const firstGuess = wallClock - zoneOffsetMs(wallClock, timeZone);
  return wallClock - zoneOffsetMs(firstGuess, timeZone);
}

/** How far `timeZone` is ahead of UTC at `epochMs`. */
function zoneOffsetMs(epochMs: number, timeZone: string): number {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const part = (type: Intl.DateTimeFormatPartTypes): number =>
    Number(format.formatToParts(new Date(epochMs)).find((p) => p.type === type)?.value ?? 0);
  const asUtc = Date.UTC(
    part('year'),
    part('month') - 1,
    part('day'),
    part('hour'),
    part('minute'),
    part('second'),
  );
  return asUtc - Math.floor(epochMs / 1000) * 1000;
}
