/**
 * `postdate dlq redrive`: copies from the send queue's DLQ back to the send queue, chosen ids
 * (receive → send → delete, one at a time) or all (dlq/dlqMoveAll.ts). The sender's claim accepts a
 * redriven copy for a `dead` record with the same rev and death (docs/data-model.md). `--ids` moves no
 * stale copy (core/staleDeadLetter.ts: the sender would drop it) and one copy of a message: it deletes
 * the others, as `dlq drop` and the sweeper do, and looks on for the copy that redrives the message;
 * `--all` moves copies unchanged and the sender drops the stale ones. Either way redriving never sends
 * twice.
 */
import type { DispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { staleDeadLetter } from '../../lambdas/core/staleDeadLetter.js';
import { readStateRecord } from '../../lambdas/store/stateReads.js';
import { UsageError } from '../cliErrors.js';
import {
  assertMessageIds,
  handleChosenCopies,
  type NotDead,
  notDeadAmong,
  notInTheDeadLetterQueue,
} from '../deadLetters/chosenIds.js';
import { counted, type Output, paint, printTable } from '../output.js';
import { type RedriveDeps, redriveParts } from './dlqDeps.js';
import { type MoveTaskReport, redriveAll } from './dlqMoveAll.js';

export interface RedriveOptions {
  /** Message ids (the `id` of the `{v, id, rev}` body, not SQS message ids). */
  readonly ids?: readonly string[];
  readonly all?: boolean;
  /** Messages per second. */
  readonly rate?: number;
  readonly dryRun?: boolean;
  /** `--all`: return once the move task has started instead of following it. */
  readonly wait?: boolean;
  /** `--ids`: how long copies are hidden while the DLQ is scanned. @default 300 */
  readonly hideSeconds?: number;
  /** `--ids`: stop after this many copies were looked at. @default 100000 */
  readonly maxScan?: number;
}

export interface SelectiveRedriveReport {
  readonly mode: 'ids';
  readonly dryRun: boolean;
  readonly requested: readonly string[];
  /** Copies moved (or, in a dry run, that would be moved): one per copy found in the DLQ. */
  readonly moved: readonly Pick<DispatchPayload, 'id' | 'rev'>[];
  /** Requested ids with no copy in the DLQ that redrives them. */
  readonly notFound: readonly string[];
  /** Of `notFound`, those whose message is in the table and not `dead`: nothing to redrive (0253). */
  readonly notDead: readonly NotDead[];
  /** Copies of requested ids that no redrive can send (the sender drops them): deleted (in a dry run: would be). */
  readonly stale: readonly StaleCopy[];
  /** Copies found but not moved because the send queue refused them (they stay in the DLQ). */
  readonly failed: readonly Pick<DispatchPayload, 'id' | 'rev'>[];
  readonly scanned: number;
}

export interface StaleCopy extends Pick<DispatchPayload, 'id' | 'rev'> {
  readonly reason: string;
}

export type RedriveReport = SelectiveRedriveReport | MoveTaskReport;

/**
 * The redrive's choice, checked before any queue is touched (the entry point asks first too, so a bad
 * flag is exit 2 whether or not the stack answers). The rate is StartMessageMoveTask's range.
 * @throws UsageError
 */
export function assertRedriveOptions(options: Pick<RedriveOptions, 'ids' | 'all' | 'rate'>): void {
  const ids = options.ids ?? [];
  if (ids.length > 0 === (options.all === true)) {
    throw new UsageError('give either --ids <id...> or --all');
  }
  if (
    options.rate !== undefined &&
    (!Number.isFinite(options.rate) || options.rate < 1 || options.rate > 500)
  ) {
    throw new UsageError('--rate must be a number of messages per second from 1 to 500');
  }
  assertMessageIds(ids);
}

export async function dlqRedrive(
  deps: RedriveDeps,
  options: RedriveOptions,
  out: Output,
): Promise<RedriveReport> {
  assertRedriveOptions(options);
  const ids = options.ids ?? [];
  const report = options.all
    ? await redriveAll(deps, options, out)
    : await redriveIds(deps, ids, options, out);
  renderRedrive(report, out);
  return report;
}

/**
 * Moves exactly the copies whose payload id is one of `ids`, one copy at a time (send, then delete:
 * a crash in between leaves a harmless duplicate, never a lost copy). Every other copy received while
 * scanning is hidden until the scan ends and then released.
 */
async function redriveIds(
  deps: RedriveDeps,
  ids: readonly string[],
  options: RedriveOptions,
  out: Output,
): Promise<SelectiveRedriveReport> {
  const { dlq, sendQueue, pace } = redriveParts(deps, options.rate);
  const dryRun = options.dryRun === true;
  const failed: Pick<DispatchPayload, 'id' | 'rev'>[] = [];
  const stale: StaleCopy[] = [];
  /** The messages this run moved a copy of (in a dry run: would move). */
  const moved = new Set<string>();
  const scan = await handleChosenCopies(dlq, ids, options, { out, verb: 'moved' }, async (letter, copy) => {
    // The sender would drop a stale copy (the one rule, as `dlq drop` and the sweeper apply it): it is
    // deleted, not moved, and the walk looks on for the copy that redrives the message. So is a second
    // copy of a message this run moved, as the sweeper deletes it (core/staleDeadLetter.ts
    // `deadLetterCare`): a message is redriven once. A copy whose record this table does not hold is
    // moved as before, never deleted: a wrong table must not cost a copy, and the sender drops one
    // whose message is truly gone.
    const reason = moved.has(copy.id)
      ? 'a second copy: this run moved one of this message already'
      : await staleReason(deps, copy);
    if (reason !== undefined) {
      stale.push({ id: copy.id, rev: copy.rev, reason });
      if (!dryRun) await dlq.remove(letter.receipt);
      return { earlier: dryRun ? 'keep' : 'done' };
    }
    if (dryRun) {
      moved.add(copy.id);
      return 'keep';
    }
    await pace();
    // The whole body, `"dlq": true` included: the sender sends a dead message only for a marked copy.
    if ((await dlq.forward(letter, copy, sendQueue)) === 'moved') {
      moved.add(copy.id);
      return 'done';
    }
    failed.push({ id: copy.id, rev: copy.rev });
    return 'refused';
  });
  const notDead = await notDeadAmong(deps.table, scan.notFound);
  return {
    mode: 'ids',
    dryRun,
    requested: [...ids],
    moved: scan.handled,
    notFound: scan.notFound,
    notDead,
    stale,
    failed,
    scanned: scan.scanned,
  };
}

/** Why the sender would drop this copy, if it would; nothing for a copy whose record is not here. */
async function staleReason(deps: RedriveDeps, copy: DispatchPayload): Promise<string | undefined> {
  const record = await readStateRecord(deps.table.documents, deps.table.tableName, copy.id);
  return record === undefined ? undefined : staleDeadLetter(copy, record, deps.now());
}

function renderRedrive(report: RedriveReport, out: Output): void {
  if (out.json) {
    out.data(report);
    return;
  }
  if (report.mode === 'all') {
    renderMoveAll(report, out);
    return;
  }
  const verb = report.dryRun ? 'would move' : 'moved';
  out.line(
    `${verb} ${report.moved.length} of ${report.requested.length} requested messages (scanned ${report.scanned})`,
  );
  printCopies(out, report.moved);
  for (const copy of report.stale) {
    out.warn(
      `${report.dryRun ? 'would delete' : 'deleted'} a stale copy of ${copy.id} (rev ${copy.rev}): ${copy.reason}`,
    );
  }
  for (const line of notInTheDeadLetterQueue(report, 'redrive')) out.warn(paint(out, 'red', line));
  if (report.failed.length > 0) {
    out.warn(paint(out, 'red', `the send queue refused: ${report.failed.map((copy) => copy.id).join(', ')}`));
  }
}

function renderMoveAll(report: MoveTaskReport, out: Output): void {
  if (report.dryRun) {
    out.line(`dry run: ${counted(report.toMove, 'message')} would be moved from the DLQ to the send queue`);
    return;
  }
  const tone = report.status === 'COMPLETED' ? 'green' : report.status === 'RUNNING' ? 'yellow' : 'red';
  out.line(
    `${paint(out, tone, report.status)}: ${report.moved} of ${report.toMove} messages moved to the send queue (${report.method})`,
  );
  if (report.status === 'RUNNING') {
    out.line('the move task keeps running; `postdate dlq show` reports what is left');
  }
  if (report.failureReason) out.warn(`reason: ${report.failureReason}`);
}

/** An ID / REV table of copies. */
export function printCopies(out: Output, copies: readonly Pick<DispatchPayload, 'id' | 'rev'>[]): void {
  printTable(
    out,
    [
      { header: 'ID', value: (row: Pick<DispatchPayload, 'id' | 'rev'>) => row.id },
      { header: 'REV', value: (row) => String(row.rev), align: 'right' },
    ],
    copies,
  );
}

/** Whether a redrive did all it was asked (the entry point's exit code). */
export function redriveSucceeded(report: RedriveReport): boolean {
  if (report.mode === 'all')
    return report.dryRun || report.status === 'COMPLETED' || report.status === 'RUNNING';
  return report.notFound.length === 0 && report.failed.length === 0;
}
