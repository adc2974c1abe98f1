import { describe, expect, it } from 'vitest';
import { rateBetween, windowRates } from '../../bench/stats.js';

describe('windowRates', () => {
  it('counts events per window from the origin; the last window is rated over its own length', () => {
    const origin = 1_000_000;
    // 10 events in the first 5 s, 5 in the next, then 2 in the first second of the third window.
    const times = [
      ...Array.from({ length: 10 }, (_, i) => origin + i * 500),
      ...Array.from({ length: 5 }, (_, i) => origin + 5_000 + i * 1_000),
      origin + 10_000,
      origin + 10_999,
    ];
    const windows = windowRates(times, origin, 5);
    expect(windows.map((w) => [w.start, w.count])).toEqual([
      [0, 10],
      [5, 5],
      [10, 2],
    ]);
    expect(windows.map((w) => w.perSecond)).toEqual([2, 1, 2]);
  });

  it('puts events before the origin in the first window and has nothing for no events', () => {
    expect(windowRates([900, 1_100], 1_000, 5).map((w) => w.count)).toEqual([2]);
    expect(windowRates([], 0, 5)).toEqual([]);
  });
});

describe('rateBetween', () => {
  it('is the rate between two fractions of the events, leaving the ends out', () => {
    // 101 events: 100 at 10/s, then one straggler 60 s later.
    const times = [...Array.from({ length: 100 }, (_, i) => i * 100), 70_000];
    expect(rateBetween(times, 0.01, 0.9)).toBeCloseTo(10, 5);
    expect(rateBetween(times, 0, 1)).toBeLessThan(2);
  });
});
