/** Small statistics over samples (milliseconds or any unit); every function copies before sorting. */

export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  // Nearest rank: the smallest value with at least p% of the samples at or below it.
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] ?? Number.NaN;
}

export const median = (samples: readonly number[]): number => percentile(samples, 50);

export function maximum(samples: readonly number[]): number {
  return samples.length === 0 ? Number.NaN : Math.max(...samples);
}

export interface Spread {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export function spread(samples: readonly number[]): Spread {
  return {
    n: samples.length,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    max: maximum(samples),
  };
}

export const round = (value: number, digits = 2): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Events per second between the `from` and `to` fractions of `sortedTimes` (epoch ms, ascending):
 * e.g. 0.01–0.2 is the rate over the first fifth, with the first 1 % (the start-up) left out.
 */
export function rateBetween(sortedTimes: readonly number[], from: number, to: number): number {
  const n = sortedTimes.length;
  const first = Math.min(n - 1, Math.max(0, Math.floor(from * n)));
  const last = Math.min(n - 1, Math.max(0, Math.ceil(to * n) - 1));
  const start = sortedTimes[first];
  const end = sortedTimes[last];
  if (start === undefined || end === undefined || end <= start) return Number.NaN;
  return (last - first) / ((end - start) / 1000);
}

export interface RateWindow {
  /** Seconds since the origin at which the window starts. */
  readonly start: number;
  readonly count: number;
  readonly perSecond: number;
}

/**
 * Events per second in consecutive windows of `windowSeconds` from `origin` (epoch ms) to the last
 * event; the last window may be shorter and its rate is over its own length. Events before the
 * origin count in the first window.
 */
export function windowRates(
  sortedTimes: readonly number[],
  origin: number,
  windowSeconds: number,
): RateWindow[] {
  const last = sortedTimes[sortedTimes.length - 1];
  if (last === undefined) return [];
  const windowMs = windowSeconds * 1000;
  const span = Math.max(0, last - origin);
  const count = Math.max(1, Math.ceil((span + 1) / windowMs));
  const counts = new Array<number>(count).fill(0);
  for (const time of sortedTimes) {
    const index = Math.min(count - 1, Math.max(0, Math.floor((time - origin) / windowMs)));
    counts[index] = (counts[index] ?? 0) + 1;
  }
  return counts.map((events, index) => {
    const length = index === count - 1 ? Math.max(1, span + 1 - index * windowMs) / 1000 : windowSeconds;
    return { start: index * windowSeconds, count: events, perSecond: round(events / length, 2) };
  });
}
