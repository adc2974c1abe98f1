/**
 * `postdate dlq drop`: deletes the chosen ids' copies from the DLQ without sending them, for messages
 * an operator has decided must not go out. Their records stay `dead` (terminal; they expire with the
 * retention).
 */
import type { DispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { UsageError } from '../cliErrors.js';
import { assertMessageIds, handleChosenCopies } from '../deadLetters/chosenIds.js';
import { type Output, paint } from '../output.js';
import { type DlqDeps, sendDeadLetterQueue } from './dlqDeps.js';

export interface DropReport {
  readonly dryRun: boolean;
  readonly requested: readonly string[];
  /** Copies deleted from the DLQ (or, in a dry run, that would be). */
  readonly dropped: readonly Pick<DispatchPayload, 'id' | 'rev'>[];
  readonly notFound: readonly string[];
  readonly scanned: number;
}

export interface DropOptions {
  readonly ids: readonly string[];
  readonly dryRun?: boolean;
  readonly hideSeconds?: number;
  readonly maxScan?: number;
}

export async function dlqDrop(deps: DlqDeps, options: DropOptions, out: Output): Promise<DropReport> {
  if (options.ids.length === 0) throw new UsageError('give the ids to drop with --ids <id...>');
  assertMessageIds(options.ids);
  const dryRun = options.dryRun === true;
  const dlq = sendDeadLetterQueue(deps);
  const scan = await handleChosenCopies(
    dlq,
    options.ids,
    options,
    { out, verb: 'dropped' },
    async (letter) => {
      if (dryRun) return 'keep';
      await dlq.remove(letter.receipt);
      return 'done';
    },
  );
  const report: DropReport = {
    dryRun,
    requested: [...options.ids],
    dropped: scan.handled,
    notFound: scan.notFound,
    scanned: scan.scanned,
  };
  if (out.json) {
    out.data(report);
    return report;
  }
  out.line(
    `${dryRun ? 'would drop' : 'dropped'} ${report.dropped.length} of ${report.requested.length} requested messages (scanned ${report.scanned}); their records stay dead`,
  );
  if (report.notFound.length > 0)
    out.warn(paint(out, 'red', `not in the DLQ: ${report.notFound.join(', ')}`));
  return report;
}
