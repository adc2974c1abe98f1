import { MESSAGE_STATUS, WAITING_FOR_OPERATOR } from '../core/messageStatus.js';
import type { WaitingStatus } from '../core/metricNames.js';
import { runWithConcurrency } from '../core/runWithConcurrency.js';
import type { DueEntry, DueIndex } from '../ports/DueIndex.js';

/** How many messages wait for an operator, per status; a status whose count failed is absent. */
export interface WaitingCounts {
  readonly counts: Partial<Record<WaitingStatus, number>>;
  /** Statuses whose count could not be read (a shard's query failed), with the error's name. */
  readonly errors: readonly { readonly status: WaitingStatus; readonly error: string }[];
  /**
   * The `dead` ones whose DLQ copy is not known to be there (decision 0159), counted among `dead`;
   * absent when a shard could not be read.
   */
  readonly uncopiedDead?: readonly DueEntry[];
}

interface ShardRead {
  readonly status: WaitingStatus;
  readonly count: number;
  /** The entries of an `owed#dead#` shard, which are listed rather than counted. */
  readonly entries?: readonly DueEntry[];
  readonly error: string | null;
}

/** Queries at once: 3 statuses × 16 shards, each a small COUNT query, and 16 small listings. */
const COUNT_CONCURRENCY = 8;

/**
 * Counts the `due` index's waiting partitions (one COUNT query per status and shard), and lists the
 * partition of dead messages whose DLQ copy is owed (one query per shard; nearly always empty), which
 * wait for an operator too: they count as `dead`, and the sweeper makes their copies
 * (staleDeadLetters.ts). A status is reported only when every one of its shards answered: a partial
 * count would let its alarm clear.
 */
export async function countWaiting(dueIndex: DueIndex, shards: number): Promise<WaitingCounts> {
  const statuses = WAITING_FOR_OPERATOR as readonly WaitingStatus[];
  const jobs = [
    ...statuses.flatMap((status) =>
      Array.from({ length: shards }, (_, shard) => ({ status, shard, uncopied: false })),
    ),
    ...Array.from({ length: shards }, (_, shard) => ({
      status: MESSAGE_STATUS.dead as WaitingStatus,
      shard,
      uncopied: true,
    })),
  ];
  const results = await runWithConcurrency(
    jobs,
    COUNT_CONCURRENCY,
    async ({ status, shard, uncopied }): Promise<ShardRead> => {
      try {
        if (!uncopied) return { status, count: await dueIndex.countWaiting(status, shard), error: null };
        const entries = await dueIndex.uncopiedDead(shard);
        return { status, count: entries.length, entries, error: null };
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
  const listings = results.filter((_, i) => jobs[i]?.uncopied);
  const uncopiedDead: DueEntry[] = [];
  for (const listing of listings) {
    if (listing.entries === undefined) return { counts, errors };
    uncopiedDead.push(...listing.entries);
  }
  return { counts, errors, uncopiedDead };
}
