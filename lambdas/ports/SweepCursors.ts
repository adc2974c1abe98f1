import type { DueCursor } from './DueIndex.js';

/**
 * Where the sweeper's runs stopped in the `due` shards they could not read to the end, kept outside
 * the function's memory so that a cold start goes on from there (decisions 0195, 0199). Only the
 * sweeper function keeps them; a one-off sweep (the CLI's redrive) neither reads nor writes them.
 */
export interface SweepCursors {
  /** The cursors kept, by shard; none kept: empty. */
  read(): Promise<ReadonlyMap<number, DueCursor>>;
  /** Keeps these in place of what was kept (a shard not among them is read from its start). */
  write(cursors: ReadonlyMap<number, DueCursor>, now: Date): Promise<void>;
}
