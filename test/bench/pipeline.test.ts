import { describe, expect, it } from 'vitest';
import { combinedRate, ratePerSecond } from '../../bench/pipeline.js';

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

describe('combinedRate', () => {
  it('is all the messages over all the time, not the mean of the rates', () => {
    // 100 messages in 1 s and 100 in 4 s: 200 in 5 s, where the mean of the rates would be 62.5.
    expect(
      combinedRate([
        { messages: 100, perSecond: 100 },
        { messages: 100, perSecond: 25 },
      ]),
    ).toBe(40);
  });

  it('is NaN for no runs', () => {
    expect(combinedRate([])).toBeNaN();
  });
});
