import type { DeadLetterPayload } from '../core/dispatchPayload.js';
import type { RefusedRecord } from '../core/recordLayout.js';
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
 * The sweeper's reads and its writes on state records. The writes move only the record's place in
 * the `due` index and its sweep stamps — never its status or rev — so they cannot take part in a send.
 */
export interface SweepRecords {
  /**
   * The records of these ids, read consistently; a newer writer's as its refusal
   * (core/recordLayout.ts); ids without a readable record are absent.
   */
  read(ids: readonly string[]): Promise<ReadonlyMap<string, SweptRecord | RefusedRecord>>;
  /** `moved-on` when the record is no longer as seen (someone else wrote it since): nothing written. */
  recordRedispatch(input: RedispatchRecord): Promise<'recorded' | 'moved-on'>;
  /**
   * The DLQ holds the copy of this death (the sweeper just made it): the record leaves the partition
   * of dead messages whose copy is owed (store/deadLetterEntry.ts, decision 0159). `moved-on`: it was
   * recorded already, or the message is no longer at this death.
   */
  recordDeadLetter(letter: DeadLetterPayload): Promise<'recorded' | 'moved-on'>;
}
