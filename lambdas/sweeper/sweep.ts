import { isTerminal } from '../core/messageStatus.js';
import type { DispatchQueue, QueuedCopy } from '../ports/DispatchQueue.js';
import type { Log } from '../ports/Log.js';
import type { DueCursor, DueIndex } from '../store/dueIndex.js';
import { INDEX_SHARDS } from '../store/tableLayout.js';

/** The structured logger the sweeper writes to (Powertools Logger fits). */
export type SweepLog = Pick<Log, 'info' | 'warn'>;

export interface SweepDeps {
  readonly dueIndex: DueIndex;
  readonly queue: DispatchQueue;
  readonly now: () => Date;
  /** POSTDATE_SWEEP_GRACE_SECONDS: how overdue an entry must be before it is re-dispatched. */
  readonly graceSeconds: number;
  /** @default INDEX_SHARDS.due */
  readonly shards?: number;
  /** At most this many entries per shard and run, so one run stays bounded. @default 500 */
  readonly maxPerShard?: number;
  /** @default 100 */
  readonly pageSize?: number;
  readonly log?: SweepLog;
}

export interface SweepReport {
  /** Entries read from the index. */
  readonly examined: number;
  /** Copies put on the queue. */
  readonly redispatched: number;
  /** Copies the queue refused (they are found again by the next run). */
  readonly failed: number;
  /** Entries with a terminal status (an index read that lags a transition), left alone. */
  readonly skipped: number;
  /** Shards that had more overdue entries than `maxPerShard`: the next run continues. */
  readonly truncatedShards: readonly number[];
  /** Shards whose query failed, with the error's name. */
  readonly shardErrors: readonly { readonly shard: number; readonly error: string }[];
}

/**
 * One anti-entropy pass (DESIGN §5a). For every shard of the sparse `due` index, reads the entries
 * whose `due_at` is older than now − grace — `scheduled` past send_at, `sending` past its lease,
 * `retrying` past its backoff — and puts `{id, rev}` with the entry's CURRENT rev on the send queue
 * with no delay. It never writes the table and never bumps a rev, so it can run at any moment next
 * to anything: a copy of a message that meanwhile moved on is dropped by the sender's rev and status
 * rules, and a duplicate copy can at worst lose a claim. It can never cause a second send.
 */
export async function sweep(deps: SweepDeps): Promise<SweepReport> {
  const shards = deps.shards ?? INDEX_SHARDS.due;
  const maxPerShard = deps.maxPerShard ?? 500;
  const pageSize = Math.min(deps.pageSize ?? 100, maxPerShard);
  const before = new Date(deps.now().getTime() - deps.graceSeconds * 1000).toISOString();
  let examined = 0;
  let redispatched = 0;
  let failed = 0;
  let skipped = 0;
  const truncatedShards: number[] = [];
  const shardErrors: { shard: number; error: string }[] = [];

  for (let shard = 0; shard < shards; shard++) {
    let cursor: DueCursor | undefined;
    let seen = 0;
    try {
      do {
        const page = await deps.dueIndex.overdue({
          shard,
          before,
          limit: Math.min(pageSize, maxPerShard - seen),
          cursor,
        });
        cursor = page.cursor;
        seen += page.entries.length;
        examined += page.entries.length;
        const copies: QueuedCopy[] = [];
        for (const entry of page.entries) {
          if (isTerminal(entry.status)) skipped++;
          else copies.push({ payload: { id: entry.id, rev: entry.rev }, delaySeconds: 0 });
        }
        if (copies.length > 0) {
          const result = await deps.queue.enqueue(copies);
          failed += result.failed.length;
          redispatched += copies.length - result.failed.length;
          for (const copy of copies) {
            if (!result.failed.includes(copy)) {
              deps.log?.info('sweeper re-dispatched a stuck message', {
                messageId: copy.payload.id,
                rev: copy.payload.rev,
              });
            }
          }
        }
      } while (cursor !== undefined && seen < maxPerShard);
      if (cursor !== undefined) truncatedShards.push(shard);
    } catch (error) {
      const name = error instanceof Error ? error.name : 'non-error';
      shardErrors.push({ shard, error: name });
      deps.log?.warn('sweeper could not read a shard of the due index', { shard, error: name });
    }
  }
  return { examined, redispatched, failed, skipped, truncatedShards, shardErrors };
}
