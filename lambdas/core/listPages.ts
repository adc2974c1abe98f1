/**
 * One page of a listing fanned out over index shards (DESIGN §3 "newest first, paged"; §4 "No hot
 * partitions": a tenant's entries are spread over shards, so a page reads every shard and merges).
 * The rule that carries the promise a script pages by (decision 0247): every entry that existed when
 * page 1 was read is listed once, newest first, and none that came in above the cursor since.
 */

/** Where one shard of a listing stands: not started, after a sort key, or exhausted. */
export type ShardPosition =
  | { readonly kind: 'start' }
  | { readonly kind: 'after'; readonly sortKey: string }
  | { readonly kind: 'done' };

/**
 * What one shard answered from its position: its sort keys newest first (at most the page's limit)
 * and whether it holds more after them.
 */
export interface ShardRead {
  readonly keys: readonly string[];
  readonly more: boolean;
}

/** One entry of the merged page: its sort key and the shard it came from. */
export interface PageEntry {
  readonly shard: number;
  readonly sortKey: string;
}

/**
 * Merges the shards' reads (one per shard, in shard order) into the page's newest `limit` entries
 * and the positions the next page starts from. A shard is done once the page took all it had; one
 * that gave entries goes on after its last; one with nothing on the page held nothing newer than
 * the page's last entry when read (its newest lost the merge), so it too goes on after that entry:
 * read from its top again, it would list what was enqueued (or came into the status) since page 1,
 * newer than everything already listed.
 */
export function mergeShardReads(
  reads: readonly ShardRead[],
  previous: readonly ShardPosition[],
  limit: number,
): { entries: PageEntry[]; positions: ShardPosition[] } {
  const entries = reads
    .flatMap((read, shard) => read.keys.map((sortKey) => ({ shard, sortKey })))
    .sort((a, b) => (a.sortKey < b.sortKey ? 1 : a.sortKey > b.sortKey ? -1 : 0))
    .slice(0, limit);
  const lastOnPage = entries[entries.length - 1];
  const positions = reads.map((read, shard): ShardPosition => {
    const taken = entries.filter((entry) => entry.shard === shard);
    if (taken.length === read.keys.length && !read.more) return { kind: 'done' };
    const last = taken[taken.length - 1] ?? lastOnPage;
    if (last) return { kind: 'after', sortKey: last.sortKey };
    return previous[shard] ?? { kind: 'start' };
  });
  return { entries, positions };
}
