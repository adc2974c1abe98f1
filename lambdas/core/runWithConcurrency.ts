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
