import type { Log } from '../../lambdas/ports/Log.js';
import type { RelayFailureMessage, RelayFailureQueue } from '../../lambdas/ports/RelayFailureQueue.js';
import type { SdkStreamRecord } from '../../lambdas/store/streamRecord.js';
import { isIncomplete } from '../../lambdas/sweeper/createSweeperHandler.js';
import type { SweeperGate } from '../../lambdas/sweeper/relayToken.js';
import { type SweepDeps, type SweepReport, sweep } from '../../lambdas/sweeper/sweep.js';
import { parseStreamFailure, type StreamFailureInfo } from './streamFailure.js';
import type { StreamRangeReader } from './streamRange.js';

/**
 * Handles a failed batch's records again with the stream reader's own logic (the relay's, the event
 * producer's): the same code its Lambda runs, so a replay is as idempotent as the stream's own
 * retries. Answers the records that failed again and the state records whose image it could not read.
 */
export type StreamReplay = (
  records: readonly SdkStreamRecord[],
  batch: StreamFailureInfo,
) => Promise<{ readonly failed: readonly string[]; readonly invalid: number }>;

export interface RedriveStreamFailuresDeps {
  /** The reader's on-failure destination. */
  readonly failures: RelayFailureQueue;
  readonly replay: StreamReplay;
  /** Reads a failed batch's records back while the stream still retains them (24 hours). */
  readonly streamRange: StreamRangeReader;
  /**
   * A backstop for failures whose records are gone: the sweeper's parts (the relay's; it runs once,
   * with grace 0), its sending gate among them, so it hands back no copy the senders hold (the
   * scheduled sweeper's rule). Without one (the event producer: its events come from the stream
   * only) such a failure stays on the queue unless `discardGone`.
   */
  readonly sweep?: (Omit<SweepDeps, 'graceSeconds'> & { readonly gate: SweeperGate }) | undefined;
  /** Delete failures whose records are gone and that no sweep covers (the operator has recorded them). */
  readonly discardGone?: boolean;
  /** Stop after this many failure messages. @default 1000 */
  readonly maxMessages?: number;
  /** How long a received failure message stays hidden while it is worked on. @default 300 */
  readonly hideSeconds?: number;
  readonly log?: Log;
}

export interface RedriveStreamFailuresReport {
  /** Failure messages received. */
  readonly messages: number;
  /** Failure messages whose records were read back and handled again, then deleted. */
  readonly replayed: number;
  /** Failure messages whose records the stream no longer holds (past its 24-hour retention). */
  readonly gone: number;
  /** Of those, the ones covered by the sweep and then deleted. */
  readonly sweptOver: number;
  /** Of those, the ones deleted uncovered because the operator asked (`discardGone`). */
  readonly discarded: number;
  /** Failure messages left on the queue (a record failed again, the message is unreadable, or gone). */
  readonly kept: number;
  /**
   * Failure messages on the queue as the run ends, visible or hidden by another reader (SQS's
   * approximate counts): the kept ones, released at once for the next run, any past `maxMessages`
   * or sent meanwhile, and any a run cut off still hides.
   */
  readonly remaining: number;
  /** Replayed state records whose image the reader could not read (skipped, as the live reader does). */
  readonly invalidRecords: number;
  /** Where each gone batch was: what an operator records before discarding it. */
  readonly goneBatches: readonly StreamFailureInfo[];
  /** The grace-0 sweep, when one ran. */
  readonly sweep: SweepReport | null;
}

/**
 * Redrives what a stream event source finally gave up on (DESIGN §5a, §11). The on-failure
 * destination holds where a failed batch was — shard and sequence range — not its records. For each
 * failure message:
 *
 * 1. If the stream still holds the range, its records are read back and handled again, in order,
 *    with the reader's own logic (`replay`). Records in the range that the reader's stream filter
 *    kept from it are skipped by that logic too, which checks the filter again in code.
 * 2. If the records are gone (past the stream's 24-hour retention), the relay's messages are found
 *    from the table instead: one sweep with grace 0 re-dispatches every non-terminal message already
 *    due (a message due later is dispatched by the regular sweeper once its time has passed). The
 *    event producer has no such backstop: its failure stays on the queue, named in the report, until
 *    the operator discards it.
 *
 * A failure message is deleted only after its records were handled without a failure (or, when
 * gone, after a complete sweep, or on the operator's word); otherwise it stays, visible again as the
 * run ends, for the next run. Safe to run at any time and more than once.
 */
export async function redriveStreamFailures(
  deps: RedriveStreamFailuresDeps,
): Promise<RedriveStreamFailuresReport> {
  const maxMessages = deps.maxMessages ?? 1000;
  const hideSeconds = deps.hideSeconds ?? 300;
  let messages = 0;
  let replayed = 0;
  let kept = 0;
  let invalidRecords = 0;
  const gone: { readonly message: RelayFailureMessage; readonly info: StreamFailureInfo }[] = [];
  // Hidden while the run works, so none is received twice; every one the run did not delete is
  // released as the run ends, whatever ended it (a throw included).
  const received: RelayFailureMessage[] = [];
  const removed = new Set<string>();
  const remove = async (message: RelayFailureMessage) => {
    await deps.failures.remove(message.receipt);
    removed.add(message.receipt);
  };
  let sweepReport: SweepReport | null = null;
  let sweptOver = 0;
  let discarded = 0;
  try {
    while (messages < maxMessages) {
      const batch = await deps.failures.receive(Math.min(10, maxMessages - messages), hideSeconds);
      if (batch.length === 0) break;
      received.push(...batch);
      for (const message of batch) {
        messages++;
        const parsed = parseStreamFailure(message.body);
        if (!parsed.ok) {
          kept++;
          deps.log?.error('stream failure message is unreadable; left on the queue', {
            reason: parsed.reason,
          });
          continue;
        }
        const read = await deps.streamRange.read(parsed.info);
        if (read.kind === 'gone') {
          deps.log?.warn('failed batch is no longer in the stream', {
            shardId: parsed.info.shardId,
            startSequenceNumber: parsed.info.startSequenceNumber,
            reason: read.reason,
          });
          gone.push({ message, info: parsed.info });
          continue;
        }
        const outcome = await deps.replay(read.records, parsed.info);
        invalidRecords += outcome.invalid;
        if (outcome.failed.length === 0) {
          await remove(message);
          replayed++;
        } else {
          kept++;
          deps.log?.warn('replayed batch failed again; left on the queue', {
            shardId: parsed.info.shardId,
            failed: outcome.failed.length,
          });
        }
      }
    }

    if (gone.length > 0 && deps.sweep !== undefined) {
      sweepReport = await sweep({ ...deps.sweep, graceSeconds: 0 });
      // Only a complete sweep vouches for the records the batch held (the sweeper's own rule).
      if (!isIncomplete(sweepReport)) {
        for (const { message } of gone) await remove(message);
        sweptOver = gone.length;
      }
    } else if (gone.length > 0 && deps.discardGone === true) {
      for (const { message } of gone) await remove(message);
      discarded = gone.length;
    }
  } finally {
    await deps.failures.release(received.filter((message) => !removed.has(message.receipt)));
  }
  kept += gone.length - sweptOver - discarded;
  // Counted after the release: the kept ones, any past `maxMessages`, any that came meanwhile, and
  // any another reader (an earlier run cut off, Ctrl-C) still hides: none of them is done with.
  const counts = await deps.failures.counts();
  const remaining = counts.visible + counts.notVisible;
  return {
    messages,
    replayed,
    gone: gone.length,
    sweptOver,
    discarded,
    kept,
    remaining,
    invalidRecords,
    goneBatches: gone.map(({ info }) => info),
    sweep: sweepReport,
  };
}
