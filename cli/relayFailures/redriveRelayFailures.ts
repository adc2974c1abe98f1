import type { Log } from '../../lambdas/ports/Log.js';
import type { RelayFailureQueue } from '../../lambdas/ports/RelayFailureQueue.js';
import { type RelayDeps, relayRecords } from '../../lambdas/relay/relayRecords.js';
import { isIncomplete } from '../../lambdas/sweeper/createSweeperHandler.js';
import { type SweepDeps, type SweepReport, sweep } from '../../lambdas/sweeper/sweep.js';
import { parseRelayFailure } from './relayFailure.js';
import type { StreamRangeReader } from './streamRange.js';

export interface RedriveRelayFailuresDeps {
  readonly failures: RelayFailureQueue;
  /** Relays replayed records exactly as the stream handler does. */
  readonly relay: RelayDeps;
  /** Reads a failed batch's records back while the stream still retains them (24 hours). */
  readonly streamRange: StreamRangeReader;
  /** The sweeper's parts, for failures whose records are gone; it runs once, with grace 0. */
  readonly sweep: Omit<SweepDeps, 'graceSeconds'>;
  /** Stop after this many failure messages. @default 1000 */
  readonly maxMessages?: number;
  /** How long a received failure message stays hidden while it is worked on. @default 300 */
  readonly hideSeconds?: number;
  readonly log?: Log;
}

export interface RedriveRelayFailuresReport {
  /** Failure messages received. */
  readonly messages: number;
  /** Failure messages whose records were read back and relayed again, then deleted. */
  readonly replayed: number;
  /** Failure messages whose records were gone, covered by the sweep and then deleted. */
  readonly sweptOver: number;
  /** Failure messages left on the queue (a record failed again, or the message is unreadable). */
  readonly kept: number;
  /** Replayed state records whose image the relay could not read (skipped, as the live relay does). */
  readonly invalidRecords: number;
  /** The grace-0 sweep, when one ran. */
  readonly sweep: SweepReport | null;
}

/**
 * Re-dispatches what the relay finally gave up on (DESIGN §5a). The on-failure destination holds
 * where a failed batch was — shard and sequence range — not its records. For each failure message:
 *
 * 1. If the stream still holds the range, its records are read back and relayed again, in order,
 *    with the relay's own logic. This is exact: it creates the schedules of messages due days from
 *    now, deletes the stale schedules of cancels and reschedules, and is idempotent like any replay.
 * 2. If the records are gone (past the stream's 24-hour retention), the messages are found from the
 *    table instead: one sweep with grace 0 re-dispatches every non-terminal message already due.
 *    A message due later has no overdue entry yet; the regular sweeper dispatches it once its time
 *    has passed (up to grace + one sweep interval late, never lost).
 *
 * A failure message is deleted only after its records were relayed without a failure (or, when gone,
 * after a sweep that enqueued every copy); otherwise it stays for the next run. Safe to run at any
 * time and more than once.
 */
export async function redriveRelayFailures(
  deps: RedriveRelayFailuresDeps,
): Promise<RedriveRelayFailuresReport> {
  const maxMessages = deps.maxMessages ?? 1000;
  const hideSeconds = deps.hideSeconds ?? 300;
  let messages = 0;
  let replayed = 0;
  let kept = 0;
  let invalidRecords = 0;
  const needSweep: string[] = [];

  while (messages < maxMessages) {
    const batch = await deps.failures.receive(Math.min(10, maxMessages - messages), hideSeconds);
    if (batch.length === 0) break;
    for (const message of batch) {
      messages++;
      const parsed = parseRelayFailure(message.body);
      if (!parsed.ok) {
        kept++;
        deps.log?.error('relay failure message is unreadable; left on the queue', { reason: parsed.reason });
        continue;
      }
      const read = await deps.streamRange.read(parsed.info);
      if (read.kind === 'gone') {
        deps.log?.warn('failed batch is no longer in the stream; the sweep covers it', {
          shardId: parsed.info.shardId,
          startSequenceNumber: parsed.info.startSequenceNumber,
          reason: read.reason,
        });
        needSweep.push(message.receipt);
        continue;
      }
      const outcome = await relayRecords(read.records, deps.relay);
      invalidRecords += outcome.invalid;
      if (outcome.failed.length === 0) {
        await deps.failures.remove(message.receipt);
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

  let sweepReport: SweepReport | null = null;
  let sweptOver = 0;
  if (needSweep.length > 0) {
    sweepReport = await sweep({ ...deps.sweep, graceSeconds: 0 });
    // Only a complete sweep vouches for the records the batch held (the sweeper's own rule).
    if (!isIncomplete(sweepReport)) {
      for (const receipt of needSweep) await deps.failures.remove(receipt);
      sweptOver = needSweep.length;
    } else {
      kept += needSweep.length;
    }
  }
  return { messages, replayed, sweptOver, kept, invalidRecords, sweep: sweepReport };
}
