import type { SweptRecord } from '../core/sweepDecision.js';

/** A re-dispatch the sweeper records on the state record, so the next one for this stall waits longer. */
export interface RedispatchRecord {
  readonly id: string;
  readonly rev: number;
  readonly status: SweptRecord['status'];
  /** The `due_at` the decision was made on: the write lands only if it is still there. */
  readonly seenDueAt: string;
  readonly nextDueAt: string;
  readonly sweepCount: number;
  readonly now: Date;
}

/**
 * The sweeper's reads and its one write on state records. The write moves only the record's place in
 * the `due` index and its sweep stamps — never its status or rev — so it cannot take part in a send.
 */
export interface SweepRecords {
  /** The records of these ids, read consistently; ids without a readable record are absent. */
  read(ids: readonly string[]): Promise<ReadonlyMap<string, SweptRecord>>;
  /** `moved-on` when the record is no longer as seen (someone else wrote it since): nothing written. */
  recordRedispatch(input: RedispatchRecord): Promise<'recorded' | 'moved-on'>;
}
