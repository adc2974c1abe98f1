import type { Context } from 'aws-lambda';
import { PostdateError } from '../core/postdateError.js';
import { parseZonedTimestamp } from '../core/timestamps.js';
import type { DueCursor } from '../ports/DueIndex.js';
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

/**
 * The sweeper's handler logic: one pass per invocation, logged and returned. It never throws for
 * a shard or a copy: it does all it can and reports the rest (the Lambda wrapper turns an
 * incomplete pass into an error so that it is alarmed). With the invocation's context, the pass
 * stops in time for the gauges and the DLQ's care (sweep.ts `SWEEP_RESERVED_MS`).
 */
export function createSweeperHandler(
  deps: SweepDeps,
): (context?: Pick<Context, 'getRemainingTimeInMillis'>, run?: SweepRun) => Promise<SweepReport> {
  // What this environment learns, kept from one run to the next: the DLQ's copies (decision 0148),
  // and where each shard's pass stopped (decision 0195).
  const wired = {
    ...deps,
    deadLetterRenewal: deps.deadLetterRenewal ?? {},
    resumeFrom: deps.resumeFrom ?? new Map<number, DueCursor>(),
  };
  return async function sweepOnce(
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
    run: SweepRun = {},
  ): Promise<SweepReport> {
    const report = await sweep({
      ...wired,
      ...(context === undefined ? {} : { remainingMs: () => context.getRemainingTimeInMillis() }),
      ...(run.queueEmptiedAt === undefined ? {} : { queueEmptiedAt: run.queueEmptiedAt }),
    });
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
