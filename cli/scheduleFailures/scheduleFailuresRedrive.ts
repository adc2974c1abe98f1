/**
 * `postdate schedule-failures redrive`: puts what EventBridge Scheduler could not deliver on the send
 * queue after all. For each dead-lettered schedule, by its message's state record now:
 *
 * - live (not terminal): a copy `{v, id, rev}` with the record's CURRENT rev goes on the send queue
 *   with delay 0, then the DLQ message is deleted. The sender admits only the record's rev (a copy of
 *   an older one would just be dropped), re-delays a copy that is early, and its rev and status rules
 *   drop any second copy, so a redrive never sends twice (DESIGN §5a, docs/decisions/);
 * - terminal (sent, cancelled, dead, …): nothing is left to send; the DLQ message is deleted, with a
 *   line saying so;
 * - no record, or a body that is not a `{v, id, rev}` payload: left on the DLQ and reported.
 */
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import type { DispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { isTerminal } from '../../lambdas/core/messageStatus.js';
import { readStateRecords } from '../../lambdas/store/stateReads.js';
import { assertMessageIds } from '../deadLetters/chosenIds.js';
import type { DeadLetter } from '../deadLetters/SqsDeadLetterQueue.js';
import { type ScanOptions, scanDeadLetters, type Visit } from '../deadLetters/scanDeadLetters.js';
import { printCopies } from '../dlq/dlqRedrive.js';
import { counted, type Output, paint } from '../output.js';
import { readScheduleFailure, type ScheduleFailureDeps, scheduleDeadLetterQueue } from './scheduleFailure.js';

type Copy = Pick<DispatchPayload, 'id' | 'rev'>;

export interface ScheduleFailuresRedriveOptions extends ScanOptions {
  /** Only these message ids; every dead-lettered schedule when empty. */
  readonly ids?: readonly string[];
  readonly dryRun?: boolean;
}

export interface ScheduleFailuresRedriveReport {
  readonly dryRun: boolean;
  /** The ids asked for; empty: every message on the DLQ. */
  readonly requested: readonly string[];
  /** Copies put on the send queue (or that would be), with the record's current rev. */
  readonly redriven: readonly (Copy & { readonly scheduledRev: number })[];
  /** Further DLQ messages of a message redriven in this run: deleted, no second copy sent. */
  readonly duplicates: readonly Copy[];
  /** Messages already terminal: their DLQ messages deleted (or that would be), nothing sent. */
  readonly dropped: readonly (Copy & { readonly status: string })[];
  /** Left on the DLQ: bodies that are not `{v, id, rev}` payloads. */
  readonly unreadable: readonly { readonly sqsMessageId: string | null; readonly reason: string }[];
  /** Left on the DLQ: no state record (expired, or the wrong table). */
  readonly noRecord: readonly Copy[];
  /** Left on the DLQ: the send queue refused the copy. */
  readonly failed: readonly Copy[];
  /** Requested ids with nothing on the DLQ. */
  readonly notFound: readonly string[];
  readonly scanned: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] extends readonly (infer E)[] ? E[] : T[K] };

export async function scheduleFailuresRedrive(
  deps: ScheduleFailureDeps,
  options: ScheduleFailuresRedriveOptions,
  out: Output,
): Promise<ScheduleFailuresRedriveReport> {
  const requested = [...(options.ids ?? [])];
  assertMessageIds(requested);
  const wanted = new Set(requested);
  const dryRun = options.dryRun === true;
  const dlq = scheduleDeadLetterQueue(deps);
  const sendQueue = new SqsDispatchQueue(deps.sqs, deps.sendQueueUrl);
  const report: Mutable<ScheduleFailuresRedriveReport> = {
    dryRun,
    requested,
    redriven: [],
    duplicates: [],
    dropped: [],
    unreadable: [],
    noRecord: [],
    failed: [],
    notFound: [],
    scanned: 0,
  };
  const found = new Set<string>();
  const redriven = new Set<string>();
  const takeOff = async (letter: DeadLetter): Promise<Visit> => {
    if (dryRun) return 'keep';
    await dlq.remove(letter.receipt);
    return 'done';
  };

  const visit = async (letter: DeadLetter): Promise<Visit> => {
    const failure = readScheduleFailure(letter);
    if (failure.copy === null) {
      if (wanted.size === 0)
        report.unreadable.push({ sqsMessageId: failure.sqsMessageId, reason: failure.unreadable ?? '?' });
      return 'keep';
    }
    const { id, rev } = failure.copy;
    if (wanted.size > 0 && !wanted.has(id)) return 'keep';
    found.add(id);
    if (redriven.has(id)) {
      report.duplicates.push({ id, rev });
      return takeOff(letter);
    }
    const states = await readStateRecords(deps.table.documents, deps.table.tableName, [id], {
      consistentRead: true,
    });
    const state = states.get(id);
    if (state === undefined) {
      report.noRecord.push({ id, rev });
      return 'keep';
    }
    if (isTerminal(state.status)) {
      report.dropped.push({ id, rev, status: state.status });
      return takeOff(letter);
    }
    const copy = { id, rev: state.rev };
    if (!dryRun && (await dlq.forward(letter, copy, sendQueue)) === 'refused') {
      report.failed.push(copy);
      return 'keep';
    }
    redriven.add(id);
    report.redriven.push({ ...copy, scheduledRev: rev });
    out.progress(dryRun ? 'would redrive' : 'redriven', report.redriven.length, null);
    return dryRun ? 'keep' : 'done';
  };

  const { scanned } = await scanDeadLetters(
    dlq,
    { ...options, finished: () => wanted.size > 0 && found.size >= wanted.size },
    visit,
  );
  report.scanned = scanned;
  report.notFound = requested.filter((id) => !found.has(id));
  renderRedrive(report, out);
  return report;
}

/** Whether every dead-lettered schedule asked for was dealt with (the entry point's exit code). */
export function scheduleFailuresCleared(report: ScheduleFailuresRedriveReport): boolean {
  return [report.unreadable, report.noRecord, report.failed, report.notFound].every(
    (list) => list.length === 0,
  );
}

function renderRedrive(report: ScheduleFailuresRedriveReport, out: Output): void {
  if (out.json) {
    out.data(report);
    return;
  }
  const would = report.dryRun ? 'would ' : '';
  out.line(
    `${would}redrive ${counted(report.redriven.length, 'message')} to the send queue, ${would}drop ${report.dropped.length} already finished (scanned ${report.scanned})`,
  );
  printCopies(out, report.redriven);
  for (const entry of report.dropped) {
    out.line(
      `${report.dryRun ? 'would drop' : 'dropped'} ${entry.id} (rev ${entry.rev}): already ${entry.status}, nothing to send`,
    );
  }
  if (report.duplicates.length > 0) {
    out.line(
      `${would}delete ${counted(report.duplicates.length, 'further DLQ message')} of messages redriven above`,
    );
  }
  const left = (what: string, list: readonly string[]) => {
    if (list.length > 0) out.warn(paint(out, 'red', `${what}: ${list.join(', ')}`));
  };
  left(
    'left on the DLQ, unreadable body (SQS message ids)',
    report.unreadable.map((entry) => `${entry.sqsMessageId ?? '?'} (${entry.reason})`),
  );
  left(
    'left on the DLQ, no such message in the table',
    report.noRecord.map((copy) => copy.id),
  );
  left(
    'left on the DLQ, the send queue refused',
    report.failed.map((copy) => copy.id),
  );
  left('not on the schedule DLQ', report.notFound);
}
