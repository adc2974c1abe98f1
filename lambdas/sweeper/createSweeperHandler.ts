import type { Context } from 'aws-lambda';
import { errorForLog } from '../core/errorForLog.js';
import { PostdateError } from '../core/postdateError.js';
import { parseZonedTimestamp } from '../core/timestamps.js';
import type { DueCursor } from '../ports/DueIndex.js';
import type { SweepCursors } from '../ports/SweepCursors.js';
import { type SweepDeps, type SweepReport, sweep } from './sweep.js';

/**
 * A pass that left work undone (a shard unreadable or not read to its end, a gate item unread,
 * copies refused, a waiting count unread, the DLQ's stale copies not tidied); the next run tries again. A shard cut short while the senders held every
 * live copy (`report.held`: no relay took mail, or everything paused) is the held backlog, not
 * undone work: it alarms through RelayUnavailable or the pause, not on every sweep.
 */
export class SweepIncompleteError extends PostdateError {
  override readonly name = 'SweepIncompleteError';
  constructor(readonly report: SweepReport) {
    super(
      `sweep incomplete: ${report.shardErrors.length} shard(s) unreadable, ${report.gateErrors.length} gate item(s) unread, ${report.truncatedShards.length} shard(s) not read to the end${report.outOfTime ? ' (out of time)' : ''}, ${report.failed} copy(ies) not enqueued, ${report.waiting.errors.length} waiting count(s) unread${report.deadLetters?.error === undefined ? '' : `, the DLQ not tidied (${report.deadLetters.error})`}`,
      { class: 'transient' },
    );
  }
}

export function isIncomplete(report: SweepReport): boolean {
  return (
    report.shardErrors.length > 0 ||
    report.gateErrors.length > 0 ||
    (report.truncatedShards.length > 0 && report.held === undefined) ||
    report.failed > 0 ||
    report.waiting.errors.length > 0 ||
    report.deadLetters?.error !== undefined
  );
}

/** What one invocation may be told beyond the schedule's tick. */
export interface SweepRun {
  /** The send queue holds no copy sent before this (SweepDeps `queueEmptiedAt`, decision 0180). */
  readonly queueEmptiedAt?: Date;
}

/** An invocation event the sweeper cannot act on: nothing was read or written. */
export class SweepEventError extends PostdateError {
  override readonly name = 'SweepEventError';
}

/** How far ahead of the function's clock a `queueEmptiedAt` may be (another machine's clock). */
const QUEUE_EMPTIED_SKEW_MS = 60_000;

/**
 * What an invocation event tells the run: the schedule's tick tells nothing; `{ "queueEmptiedAt":
 * "<ISO 8601 time>" }` (an operator after purging the send queue; the local stack at its start) tells
 * when the queue was emptied. A time that is no time, or one in the future (a typo would make the run
 * read the whole index), is refused before anything is read.
 */
export function sweepRunOf(event: unknown, now: Date): SweepRun {
  if (typeof event !== 'object' || event === null || !Object.hasOwn(event, 'queueEmptiedAt')) return {};
  const value = (event as { queueEmptiedAt: unknown }).queueEmptiedAt;
  const queueEmptiedAt = typeof value === 'string' ? parseZonedTimestamp(value) : null;
  if (queueEmptiedAt === null) {
    throw new SweepEventError(
      'queueEmptiedAt: must be an ISO 8601 time with a zone, e.g. 2026-12-04T10:00:00Z',
      {
        class: 'permanent',
      },
    );
  }
  if (queueEmptiedAt.getTime() > now.getTime() + QUEUE_EMPTIED_SKEW_MS) {
    throw new SweepEventError(
      `queueEmptiedAt: ${queueEmptiedAt.toISOString()} is in the future (now ${now.toISOString()}): give the time the queue was purged`,
      { class: 'permanent' },
    );
  }
  return { queueEmptiedAt };
}

/** What the sweeper function is built from: a pass's dependencies, and where it keeps its cursors. */
export interface SweeperDeps extends SweepDeps {
  /**
   * Where each shard's pass stopped, kept in the table (decision 0199): read at the first run of an
   * environment, written after a run that moved it. Absent (a test): kept in memory only.
   */
  readonly cursors?: SweepCursors;
}

/**
 * The sweeper's handler logic: one pass per invocation, logged and returned. It never throws for
 * a shard or a copy: it does all it can and reports the rest (the Lambda wrapper turns an
 * incomplete pass into an error so that it is alarmed). With the invocation's context, the pass
 * stops in time for the gauges and the DLQ's care (sweep.ts `SWEEP_RESERVED_MS`).
 */
export function createSweeperHandler(
  deps: SweeperDeps,
): (context?: Pick<Context, 'getRemainingTimeInMillis'>, run?: SweepRun) => Promise<SweepReport> {
  // What this environment learns, kept from one run to the next: the DLQ's copies (decision 0148),
  // and where each shard's pass stopped (decision 0195), which the table keeps too (decision 0199).
  const { cursors, ...sweepDeps } = deps;
  const wired = {
    ...sweepDeps,
    deadLetterRenewal: deps.deadLetterRenewal ?? {},
    resumeFrom: deps.resumeFrom ?? new Map<number, DueCursor>(),
  };
  const kept = cursors === undefined ? undefined : keptCursors(cursors, wired.resumeFrom, deps);
  return async function sweepOnce(
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
    run: SweepRun = {},
  ): Promise<SweepReport> {
    await kept?.recall();
    const report = await sweep({
      ...wired,
      ...(context === undefined ? {} : { remainingMs: () => context.getRemainingTimeInMillis() }),
      ...(run.queueEmptiedAt === undefined ? {} : { queueEmptiedAt: run.queueEmptiedAt }),
    });
    await kept?.keep();
    const summary = {
      ...(run.queueEmptiedAt === undefined ? {} : { queueEmptiedAt: run.queueEmptiedAt.toISOString() }),
      examined: report.examined,
      redispatched: report.redispatched,
      failed: report.failed,
      skipped: report.skipped,
      unstamped: report.unstamped,
      waiting: report.waiting.counts,
      paused: report.paused,
      refused: report.refused,
      ...(report.held === undefined ? {} : { held: report.held }),
      truncatedShards: report.truncatedShards,
      outOfTime: report.outOfTime,
      shardErrors: report.shardErrors,
      gateErrors: report.gateErrors,
      ...(report.deadLetters === undefined
        ? {}
        : {
            staleDeadLettersRemoved: report.deadLetters.removed,
            deadLettersRenewed: report.deadLetters.renewed,
            deadLettersMade: report.deadLetters.made,
          }),
    };
    if (isIncomplete(report)) deps.log?.warn('sweep incomplete', summary);
    else deps.log?.info('sweep finished', summary);
    return report;
  };
}

/**
 * The cursors of `resumeFrom` as the table keeps them. `recall` reads them once, at an environment's
 * first run (a warm one knows them better than the table: it may have moved them since); `keep`
 * writes them after a run that moved them, and only then: what the table holds is remembered as
 * last read or written. Neither throws: a cursor the table does not give back costs a cold start its
 * place in the shards, as before decision 0199, never the run.
 */
function keptCursors(
  cursors: SweepCursors,
  resumeFrom: Map<number, DueCursor>,
  deps: Pick<SweepDeps, 'log' | 'now'>,
) {
  /** What the table holds ({@link cursorsKey}); undefined: unknown (not read yet, or a read or write failed). */
  let held: string | undefined;
  let recalled = false;
  return {
    async recall(): Promise<void> {
      if (recalled) return;
      recalled = true;
      try {
        const stored = await cursors.read();
        for (const [shard, cursor] of stored) resumeFrom.set(shard, cursor);
        held = cursorsKey(stored);
      } catch (error) {
        deps.log?.warn('sweeper could not read where its last runs stopped: every shard from its start', {
          error: errorForLog(error),
        });
      }
    },
    async keep(): Promise<void> {
      const current = cursorsKey(resumeFrom);
      if (current === held) return;
      try {
        await cursors.write(resumeFrom, deps.now());
        held = current;
      } catch (error) {
        held = undefined;
        deps.log?.warn('sweeper could not keep where this run stopped (a cold start would begin again)', {
          error: errorForLog(error),
        });
      }
    },
  };
}

/** The cursors as one string, the same whatever order a shard's cursor lists its attributes in. */
function cursorsKey(cursors: ReadonlyMap<number, DueCursor>): string {
  const shards = [...cursors].sort(([a], [b]) => a - b);
  return JSON.stringify(
    shards.map(([shard, cursor]) => [shard, Object.entries(cursor).sort(([a], [b]) => a.localeCompare(b))]),
  );
}
