/**
 * Runs `work` over `items` with at most `limit` at once and resolves with the results in input
 * order. `work` should not throw (the sender and the relay route every failure to a result); if it
 * does, the first error propagates after every other item has finished.
 */
export async function runWithConcurrency<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      const item = items[index] as T;
      results[index] = await work(item, index);
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker);
  const settled = await Promise.allSettled(workers);
  for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason;
  return results;
}

/** A lane of `runInLanes`, as the work holding it sees it. */
export interface Lane {
  /**
   * Gives the lane up while `during` runs — a wait that needs none, such as an early copy's wait for
   * its send time — and takes one back afterwards, ahead of the items that have not started yet.
   */
  away<T>(during: () => Promise<T>): Promise<T>;
}

/**
 * Like runWithConcurrency, but an item may step out of its lane while it waits (`lane.away`): at
 * most `limit` items work at once, however many wait. Results in input order; if `work` throws, the
 * first error propagates after every other item has finished.
 */
export async function runInLanes<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number, lane: Lane) => Promise<R>,
): Promise<R[]> {
  let free = Math.max(1, limit);
  // Whoever comes back from a wait goes first: its moment has come, a new item's has not yet.
  const returning: Array<() => void> = [];
  const starting: Array<() => void> = [];
  const take = (queue: Array<() => void>): Promise<void> => {
    if (free > 0) {
      free -= 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => queue.push(resolve));
  };
  const give = (): void => {
    const next = returning.shift() ?? starting.shift();
    if (next === undefined) free += 1;
    else next();
  };
  const lane: Lane = {
    async away(during) {
      give();
      try {
        return await during();
      } finally {
        await take(returning);
      }
    },
  };
  const settled = await Promise.allSettled(
    items.map(async (item, index) => {
      await take(starting);
      try {
        return await work(item, index, lane);
      } finally {
        give();
      }
    }),
  );
  const results: R[] = [];
  for (const outcome of settled) {
    if (outcome.status === 'rejected') throw outcome.reason;
    results.push(outcome.value);
  }
  return results;
}
