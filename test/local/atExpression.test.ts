import { describe, expect, it } from 'vitest';
import { parseAtExpression, ScheduleExpressionError } from '../../local/scheduler/atExpression.js';

describe('the at() expression of a one-time schedule', () => {
  it('names a UTC instant when no time zone is given', () => {
    expect(parseAtExpression('at(2026-12-01T09:00:00)')).toBe(Date.parse('2026-12-01T09:00:00Z'));
  });

  it('is evaluated in ScheduleExpressionTimezone, daylight saving time included', () => {
    expect(parseAtExpression('at(2026-12-01T09:00:00)', 'Europe/Berlin')).toBe(
      Date.parse('2026-12-01T08:00:00Z'),
    );
    expect(parseAtExpression('at(2026-07-01T09:00:00)', 'Europe/Berlin')).toBe(
      Date.parse('2026-07-01T07:00:00Z'),
    );
    expect(parseAtExpression('at(2026-07-01T09:00:00)', 'America/New_York')).toBe(
      Date.parse('2026-07-01T13:00:00Z'),
    );
  });

  it.each([
    'at(2026-12-01 09:00:00)',
    'at(2026-12-01T09:00)',
    'at(2026-02-30T09:00:00)',
    'at(2026-12-01T24:00:00)',
    'at(2026-12-01T09:00:00Z)',
    'rate(5 minutes)',
  ])('rejects %s', (expression) => {
    expect(() => parseAtExpression(expression)).toThrow(ScheduleExpressionError);
  });

  it('rejects an unknown time zone', () => {
    expect(() => parseAtExpression('at(2026-12-01T09:00:00)', 'Mars/Olympus')).toThrow(
      ScheduleExpressionError,
    );
  });
});
