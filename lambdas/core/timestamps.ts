/** The request's date-times: ISO-8601 with a zone, checked for impossible dates. */

const ISO_WITH_ZONE =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-](\d{2}):(\d{2}))$/i;

/** Parses an ISO-8601 date-time that carries a zone (`Z` or `±hh:mm`); null if invalid or impossible. */
export function parseZonedTimestamp(value: string): Date | null {
  const match = ISO_WITH_ZONE.exec(value);
  if (!match) return null;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(match[i] ?? '0')) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day > daysInMonth) return null;
  if (match[9] !== undefined && (Number(match[9]) > 23 || Number(match[10]) > 59)) return null;
  const time = Date.parse(value.toUpperCase());
  return Number.isFinite(time) ? new Date(time) : null;
}

const SECONDS_PER_DAY = 86_400;

/** The last instant a send may be scheduled for: `now` plus POSTDATE_MAX_HORIZON_DAYS, in ms. */
export function horizonEndMs(now: Date, maxHorizonDays: number): number {
  return now.getTime() + maxHorizonDays * SECONDS_PER_DAY * 1000;
}
