import { WAITING_FOR_OPERATOR } from '../core/messageStatus.js';
import type { WaitingStatus } from '../core/metricNames.js';
import { runWithConcurrency } from '../core/runWithConcurrency.js';
import type { DueIndex } from '../ports/DueIndex.js';

/** How many messages wait for an operator, per status; a status whose count failed is absent. */
export interface WaitingCounts {
  readonly counts: Partial<Record<WaitingStatus, number>>;
  /** Statuses whose count could not be read (a shard's query failed), with the error's name. */
  readonly errors: readonly { readonly status: WaitingStatus; readonly error: string }[];
}

interface ShardCount {
  readonly status: WaitingStatus;
  readonly count: number;
  readonly error: string | null;
}

/** Queries at once: 3 statuses × 16 shards, each a small COUNT query. */
const COUNT_CONCURRENCY = 8;

/**
 * Counts the `due` index's waiting partitions (one COUNT query per status and shard). A status is
 * reported only when every one of its shards answered: a partial count would let its alarm clear.
 */
export async function countWaiting(dueIndex: DueIndex, shards: number): Promise<WaitingCounts> {
  const statuses = WAITING_FOR_OPERATOR as readonly WaitingStatus[];
  const jobs = statuses.flatMap((status) =>
    Array.from({ length: shards }, (_, shard) => ({ status, shard })),
  );
  const results = await runWithConcurrency(
    jobs,
    COUNT_CONCURRENCY,
    async ({ status, shard }): Promise<ShardCount> => {
      try {
        return { status, count: await dueIndex.countWaiting(status, shard), error: null };
      } catch (error) {
        return { status, count: 0, error: error instanceof Error ? error.name : 'non-error' };
      }
    },
  );
  const counts: Partial<Record<WaitingStatus, number>> = {};
  const errors: { status: WaitingStatus; error: string }[] = [];
  for (const status of statuses) {
    const mine = results.filter((result) => result.status === status);
    const failure = mine.find((result) => result.error !== null);
    if (failure?.error) errors.push({ status, error: failure.error });
    else counts[status] = mine.reduce((sum, result) => sum + result.count, 0);
  }
  return { counts, errors };
}
