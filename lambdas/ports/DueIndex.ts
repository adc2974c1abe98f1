import type { MessageStatus } from '../core/messageStatus.js';

/** One entry of the sparse `due` index: what its INCLUDE projection carries. */
export interface DueEntry {
  readonly id: string;
  readonly rev: number;
  readonly status: MessageStatus;
  readonly due_at: string;
}

/** Where the next page starts (DynamoDB's LastEvaluatedKey, opaque to callers). */
export type DueCursor = Readonly<Record<string, unknown>>;

export interface OverdueQuery {
  /** The shard number n of `due_pk = due#{n}`. */
  readonly shard: number;
  /** ISO time: entries with `due_at` strictly before it, oldest first. */
  readonly before: string;
  readonly limit: number;
  /** Where to go on from; one at or past `before` (a wider window's) has nothing after it: an empty last page. */
  readonly cursor?: DueCursor | undefined;
}

export interface DuePage {
  readonly entries: readonly DueEntry[];
  readonly cursor: DueCursor | undefined;
}

/** The sweeper's reads of the `due` index: overdue entries, and the messages that wait for an operator. */
export interface DueIndex {
  overdue(query: OverdueQuery): Promise<DuePage>;
  /** How many messages of this status wait in one shard of the index's waiting partitions. */
  countWaiting(status: MessageStatus, shard: number): Promise<number>;
  /** The messages of this status waiting in one shard, oldest first (`due_at`: since when). */
  waiting(status: MessageStatus, shard: number): Promise<readonly DueEntry[]>;
  /**
   * The `dead` messages in one shard whose DLQ copy is not known to be there (no put of it recorded
   * since the death, decision 0159), oldest first (`due_at`: since when). They wait for an operator too.
   */
  uncopiedDead(shard: number): Promise<readonly DueEntry[]>;
}
