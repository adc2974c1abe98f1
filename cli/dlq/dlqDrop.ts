/**
 * `postdate dlq drop`: an operator gives up on dead messages (runbook §1 step 5). A dead message
 * waits for an operator with no TTL (DESIGN §2), so deleting its copy alone would leave it waiting
 * forever: in the `DeadMessages` gauge, its body and attachments kept. A drop therefore ends the
 * message exactly as `messages discard` does — the same store write (`ApiStore.discard`): the status
 * stays `dead`, it stops waiting and its records start the retention (core/messageLifetime.ts) — and
 * only then deletes the copy. A copy whose message moved on (a retry gave it a newer rev, it ended
 * or was discarded already, its record is gone) is only deleted. Decisions 0136, 0141.
 */

import type { DispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { isWaitingForOperator, type MessageStatus } from '../../lambdas/core/messageStatus.js';
import {
  type DeadLetter,
  type DeadLetterRecord,
  staleDeadLetter,
} from '../../lambdas/core/staleDeadLetter.js';
import type { ApiStore, TransitionResult } from '../../lambdas/ports/ApiStore.js';
import { expiresAtAfter, type MessageStateRecord } from '../../lambdas/store/messageRecord.js';
import { readStateRecord } from '../../lambdas/store/stateReads.js';
import { UsageError } from '../cliErrors.js';
import {
  assertMessageIds,
  handleChosenCopies,
  type NotDead,
  notDeadAmong,
  notInTheDeadLetterQueue,
} from '../deadLetters/chosenIds.js';
import { type Output, paint, printTable } from '../output.js';
import { type DlqDeps, sendDeadLetterQueue } from './dlqDeps.js';

export interface DropDeps extends DlqDeps {
  readonly table: NonNullable<DlqDeps['table']>;
  /** The API's store: its `discard`, the one write that ends a message an operator gives up on. */
  readonly store: Pick<ApiStore, 'discard' | 'finishBodyLifetime'>;
  /** POSTDATE_RETENTION_DAYS of the stack: how long a given-up message's records are kept. */
  readonly retentionDays: number;
}

/** What happens to one copy, decided from the copy's rev and its message's record. */
export type DropStep =
  /** The copy is the message's current one and the message waits for an operator: end it, then delete. */
  | { readonly kind: 'discard' }
  /**
   * The message moved on (or is gone): the copy is only deleted. `earlier`: it still waits in `dead`,
   * and this copy is not one a redrive sends (of an earlier death, or unmarked: decisions 0149, 0167);
   * its current copy may be further on in the DLQ.
   */
  | { readonly kind: 'delete'; readonly reason: string; readonly earlier?: true }
  /** The copy is a live message's current one (the queue's backstop): it stays. */
  | { readonly kind: 'keep'; readonly reason: string };

/**
 * The rule, pure (test/cli/dlqDrop.test.ts has its properties). Which copy is stale is the one rule
 * the sweeper uses too (core/staleDeadLetter.ts); the drop adds the operator's giving up. A live
 * message's current copy is never deleted here: it may be its only copy, and giving up on a live
 * message is `messages cancel`.
 */
export function dropDecision(copy: DeadLetter, record: DeadLetterRecord | null, now: Date): DropStep {
  const stale = staleDeadLetter(copy, record, now);
  if (record === null) return { kind: 'delete', reason: stale ?? 'no record' };
  if (stale !== undefined) {
    const earlier =
      record.rev === copy.rev && isWaitingForOperator(record.status) && record.expires_at === undefined;
    return earlier ? { kind: 'delete', reason: stale, earlier } : { kind: 'delete', reason: stale };
  }
  if (isWaitingForOperator(record.status))
    return record.expires_at === undefined
      ? { kind: 'discard' }
      : { kind: 'delete', reason: `discarded already (${record.status})` };
  return {
    kind: 'keep',
    reason: `it is ${record.status} at this rev: cancel it first (messages cancel), or redrive it`,
  };
}

export interface DropRow {
  readonly id: string;
  /** The copy's rev. */
  readonly rev: number;
  /** discarded: the message ended and its copy was deleted; dropped: only the copy; kept: neither. */
  readonly outcome: 'discarded' | 'dropped' | 'kept';
  /** The message's status afterwards (null: no record). */
  readonly status: MessageStatus | null;
  readonly reason: string;
}

export interface DropReport {
  readonly dryRun: boolean;
  readonly requested: readonly string[];
  /** One row per copy found (in a dry run: what would happen). */
  readonly results: readonly DropRow[];
  readonly notFound: readonly string[];
  /** Of `notFound`, those whose message is in the table and not `dead`: nothing to drop (0255). */
  readonly notDead: readonly NotDead[];
  readonly scanned: number;
  /** Every id was found and nothing was kept. */
  readonly ok: boolean;
}

export interface DropOptions {
  readonly ids: readonly string[];
  readonly dryRun?: boolean;
  readonly hideSeconds?: number;
  readonly maxScan?: number;
}

/** The ids to drop, checked before any queue is touched. @throws UsageError */
export function assertDropIds(ids: readonly string[]): void {
  if (ids.length === 0) throw new UsageError('give the ids to drop with --ids <id...>');
  assertMessageIds(ids);
}

export async function dlqDrop(deps: DropDeps, options: DropOptions, out: Output): Promise<DropReport> {
  assertDropIds(options.ids);
  const dryRun = options.dryRun === true;
  const dlq = sendDeadLetterQueue(deps);
  const results: DropRow[] = [];
  const scan = await handleChosenCopies(
    dlq,
    options.ids,
    options,
    { out, verb: dryRun ? 'looked at' : 'dropped' },
    async (letter, copy) => {
      const { row, earlier } = await dropOne(deps, copy, dryRun);
      results.push(row);
      if (row.outcome === 'kept') return 'refused';
      if (!dryRun) await dlq.remove(letter.receipt);
      const done = dryRun ? 'keep' : 'done';
      // Not its death's copy (an earlier death's, or unmarked): the message still waits, so look on for it.
      return earlier ? { earlier: done } : done;
    },
  );
  const report: DropReport = {
    dryRun,
    requested: [...options.ids],
    results,
    notFound: scan.notFound,
    notDead: await notDeadAmong(deps.table, scan.notFound),
    scanned: scan.scanned,
    ok: scan.notFound.length === 0 && results.every((row) => row.outcome !== 'kept'),
  };
  render(report, out);
  return report;
}

/**
 * Decides for one copy and, unless rehearsing, ends its message; the caller deletes the copy.
 * `earlier`: the copy was of an earlier death of a message that still waits (its current copy is elsewhere).
 */
async function dropOne(
  deps: DropDeps,
  copy: DispatchPayload,
  dryRun: boolean,
): Promise<{ readonly row: DropRow; readonly earlier: boolean }> {
  const row = (
    outcome: DropRow['outcome'],
    status: MessageStatus | null,
    reason: string,
    earlier = false,
  ) => ({
    row: { id: copy.id, rev: copy.rev, outcome, status, reason },
    earlier,
  });
  let record: MessageStateRecord | null =
    (await readStateRecord(deps.table.documents, deps.table.tableName, copy.id)) ?? null;
  const now = deps.now();
  const expiresAt = expiresAtAfter(now, deps.retentionDays);
  const ended = `given up: it stays ${record?.status ?? 'dead'}, stops waiting and expires ${new Date(expiresAt * 1000).toISOString()}`;
  // Once more when the record changed between the read and the write (a redrive, a retry, a discard).
  for (let round = 0; round < 2; round++) {
    const step = dropDecision(copy, record, now);
    if (step.kind === 'keep') return row('kept', record?.status ?? null, step.reason);
    if (step.kind === 'delete') {
      // An ended record's body ends with it: this finishes a drop whose body write failed (decision 0145).
      if (record !== null && !dryRun) await deps.store.finishBodyLifetime(record);
      return row('dropped', record?.status ?? null, step.reason, step.earlier === true);
    }
    if (record === null || dryRun) return row('discarded', record?.status ?? null, ended);
    const result: TransitionResult = await deps.store.discard({
      tenant: record.tenant,
      id: copy.id,
      now,
      expiresAt,
    });
    if (result.kind === 'updated') return row('discarded', result.state.status, ended);
    record = result.kind === 'not-found' ? null : result.current;
  }
  return row('kept', record?.status ?? null, 'the message kept changing: run the drop again');
}

function render(report: DropReport, out: Output): void {
  if (out.json) {
    out.data(report);
    return;
  }
  if (report.results.length > 0) {
    printTable(
      out,
      [
        { header: 'ID', value: (row: DropRow) => row.id },
        { header: 'REV', value: (row) => String(row.rev), align: 'right' },
        {
          header: report.dryRun ? 'WOULD BE' : 'OUTCOME',
          value: (row) => row.outcome,
          tone: (row) => (row.outcome === 'kept' ? 'red' : 'green'),
        },
        { header: 'STATUS', value: (row) => row.status ?? '-' },
        { header: 'WHY', value: (row) => row.reason },
      ],
      report.results,
    );
  }
  const count = (outcome: DropRow['outcome']) => report.results.filter((r) => r.outcome === outcome).length;
  out.line(
    `${report.dryRun ? 'would give up' : 'gave up'} ${count('discarded')}, ${report.dryRun ? 'would drop' : 'dropped'} ${count('dropped')} stale, kept ${count('kept')} of ${report.requested.length} requested (scanned ${report.scanned})`,
  );
  for (const line of notInTheDeadLetterQueue(report, 'drop')) out.warn(paint(out, 'red', line));
}
