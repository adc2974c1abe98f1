/**
 * `postdate dlq show`: the send queue's DLQ counted, and a sample peeked at with each message's
 * status now. The DLQ holds `{v, id, rev}` copies whose messages are `dead` (DESIGN §5).
 */
import { parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { readStateRecords } from '../../lambdas/store/stateReads.js';
import { UsageError } from '../cliErrors.js';
import {
  type Column,
  formatDuration,
  type Output,
  paint,
  printFields,
  printTable,
  statusTone,
} from '../output.js';
import { type DlqDeps, sendDeadLetterQueue } from './dlqDeps.js';

export interface DlqSampleEntry {
  readonly id: string | null;
  readonly rev: number | null;
  /** The record's status now, when the table was read (null: no table, or no such record). */
  readonly status: string | null;
  readonly receiveCount: number | null;
  /** Since the copy was first put on the send queue (SQS keeps SentTimestamp across the move). */
  readonly ageMs: number | null;
  readonly sqsMessageId: string | null;
  /** Why the body is not a `{v, id, rev}` payload, when it is not. */
  readonly unreadable: string | null;
}

export interface DlqShowReport {
  readonly queueUrl: string;
  /** Visible copies (ApproximateNumberOfMessages). */
  readonly count: number;
  /** Copies received by someone right now (ApproximateNumberOfMessagesNotVisible). */
  readonly inFlight: number;
  /** The oldest age among the sampled copies (the exact oldest is CloudWatch's ApproximateAgeOfOldestMessage). */
  readonly oldestSampledAgeMs: number | null;
  readonly sample: readonly DlqSampleEntry[];
}

export interface DlqShowOptions {
  /** How many copies to peek at. @default 10 */
  readonly sample?: number;
  /** How long peeked copies are hidden before they are released again. @default 30 */
  readonly peekSeconds?: number;
}

/** @throws UsageError unless `sample` is a whole number from 0 to 100. */
export function checkSampleSize(sample: number): void {
  if (!Number.isInteger(sample) || sample < 0 || sample > 100) {
    throw new UsageError('--sample must be a whole number from 0 to 100');
  }
}

/**
 * Counts the DLQ and peeks at a sample (received, then made visible again at once). The receive
 * count of a DLQ copy drives nothing (the DLQ has no redrive policy, and a redriven copy starts a new
 * count on the send queue), but a consumer reading the DLQ at that moment would not see those copies
 * for an instant.
 */
export async function dlqShow(deps: DlqDeps, options: DlqShowOptions, out: Output): Promise<DlqShowReport> {
  const sampleSize = options.sample ?? 10;
  checkSampleSize(sampleSize);
  const queue = sendDeadLetterQueue(deps);
  const counts = await queue.counts();
  const received = await queue.peek(sampleSize, options.peekSeconds ?? 30);
  const now = deps.now().getTime();
  const parsed = received.map((letter) => ({ letter, payload: parseDispatchPayload(letter.body) }));
  const ids = parsed.flatMap((entry) => (entry.payload.ok ? [entry.payload.payload.id] : []));
  const states = deps.table
    ? await readStateRecords(deps.table.documents, deps.table.tableName, ids)
    : new Map();
  const sample: DlqSampleEntry[] = parsed.map(({ letter, payload }) => ({
    id: payload.ok ? payload.payload.id : null,
    rev: payload.ok ? payload.payload.rev : null,
    status: payload.ok ? (states.get(payload.payload.id)?.status ?? null) : null,
    receiveCount: letter.receiveCount,
    ageMs: ageOf(letter.sentAtMs, now),
    sqsMessageId: letter.sqsMessageId,
    unreadable: payload.ok ? null : payload.reason,
  }));
  const report: DlqShowReport = {
    queueUrl: deps.dlqUrl,
    count: counts.visible,
    inFlight: counts.notVisible,
    oldestSampledAgeMs: oldestAge(sample),
    sample,
  };
  renderShow(report, out);
  return report;
}

/** Milliseconds since `sentAtMs` (never negative), or null when SQS did not say. */
export function ageOf(sentAtMs: number | null, nowMs: number): number | null {
  return sentAtMs === null ? null : Math.max(0, nowMs - sentAtMs);
}

export function oldestAge(entries: readonly { readonly ageMs: number | null }[]): number | null {
  const ages = entries.flatMap((entry) => (entry.ageMs === null ? [] : [entry.ageMs]));
  return ages.length > 0 ? Math.max(...ages) : null;
}

/** The count lines both `dlq show` and `schedule-failures show` begin with. */
export function printQueueSummary(
  out: Output,
  report: Pick<DlqShowReport, 'queueUrl' | 'count' | 'inFlight' | 'oldestSampledAgeMs'>,
): void {
  printFields(out, [
    ['queue', report.queueUrl],
    ['messages', paint(out, report.count > 0 ? 'red' : 'green', String(report.count))],
    ['in flight', String(report.inFlight)],
    [
      'oldest (sampled)',
      report.oldestSampledAgeMs === null ? '-' : formatDuration(report.oldestSampledAgeMs),
    ],
  ]);
}

function renderShow(report: DlqShowReport, out: Output): void {
  if (out.json) {
    out.data(report);
    return;
  }
  printQueueSummary(out, report);
  if (report.sample.length === 0) return;
  out.line('');
  const columns: Column<DlqSampleEntry>[] = [
    ...sampleCopyColumns<DlqSampleEntry>(),
    {
      header: 'STATUS',
      value: (row) => row.status ?? '-',
      tone: (row) => (row.status ? statusTone(row.status) : undefined),
    },
    sampleAgeColumn<DlqSampleEntry>(),
    {
      header: 'RECEIVES',
      value: (row) => (row.receiveCount === null ? '-' : String(row.receiveCount)),
      align: 'right',
    },
  ];
  printTable(out, columns, report.sample);
}

interface SampledCopy {
  readonly id: string | null;
  readonly rev: number | null;
  readonly unreadable: string | null;
  readonly ageMs: number | null;
}

/** The ID and REV columns of a sample, an unreadable body shown with its reason. */
export function sampleCopyColumns<Row extends SampledCopy>(): Column<Row>[] {
  return [
    { header: 'ID', value: (row) => row.id ?? `(unreadable: ${row.unreadable ?? '?'})` },
    { header: 'REV', value: (row) => (row.rev === null ? '-' : String(row.rev)), align: 'right' },
  ];
}

export function sampleAgeColumn<Row extends SampledCopy>(): Column<Row> {
  return {
    header: 'AGE',
    value: (row) => (row.ageMs === null ? '-' : formatDuration(row.ageMs)),
    align: 'right',
  };
}
