import type { Context } from 'aws-lambda';
import { PostdateError } from '../core/postdateError.js';
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

/**
 * The sweeper's handler logic: one pass per invocation, logged and returned. It never throws for
 * a shard or a copy: it does all it can and reports the rest (the Lambda wrapper turns an
 * incomplete pass into an error so that it is alarmed). With the invocation's context, the pass
 * stops in time for the gauges and the DLQ's care (sweep.ts `SWEEP_RESERVED_MS`).
 */
export function createSweeperHandler(
  deps: SweepDeps,
): (context?: Pick<Context, 'getRemainingTimeInMillis'>) => Promise<SweepReport> {
  // What this environment learns of the DLQ's copies, kept from one run to the next (decision 0148).
  const wired = { ...deps, deadLetterRenewal: deps.deadLetterRenewal ?? {} };
  return async function sweepOnce(context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SweepReport> {
    const report = await sweep(
      context === undefined ? wired : { ...wired, remainingMs: () => context.getRemainingTimeInMillis() },
    );
    const summary = {
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
