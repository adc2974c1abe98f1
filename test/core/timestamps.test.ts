import { describe, expect, it } from 'vitest';
import { parseZonedTimestamp } from '../../lambdas/core/timestamps.js';

describe('parseZonedTimestamp', () => {
  it.each([
    ['2026-12-01T09:00:00Z', '2026-12-01T09:00:00.000Z'],
    ['2026-12-01T09:00Z', '2026-12-01T09:00:00.000Z'],
    ['2026-12-01t09:00:00z', '2026-12-01T09:00:00.000Z'],
    ['2026-12-01T10:00:00+01:00', '2026-12-01T09:00:00.000Z'],
    ['2028-02-29T00:00:00Z', '2028-02-29T00:00:00.000Z'],
  ])('reads %s', (input, iso) => {
    expect(parseZonedTimestamp(input)?.toISOString()).toBe(iso);
  });

  it.each([
    '2026-12-01T09:00:00',
    '2026-12-01',
    '2027-02-29T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-12-01T24:00:00Z',
    '2026-12-01T09:00:60Z',
    '2026-12-01T09:00:00+25:00',
    '1733043600',
    'tomorrow',
  ])('refuses %s', (input) => {
    expect(parseZonedTimestamp(input)).toBeNull();
  });
});
