import { describe, expect, it } from 'vitest';
import { ratePerSecond } from '../../bench/pipeline.js';

describe('ratePerSecond', () => {
  it('divides by the time from the start to the latest receive, whatever their order', () => {
    const start = 1_000_000;
    const times = [start + 2_000, start + 4_000, start + 500].map((t) => new Date(t));
    expect(ratePerSecond(8, start, times)).toBe(2);
  });

  it('is NaN when nothing arrived after the start', () => {
    expect(ratePerSecond(3, 1_000, [])).toBeNaN();
    expect(ratePerSecond(3, 1_000, [new Date(1_000)])).toBeNaN();
  });
});
