/**
 * What the `show` commands of the dead-letter queues share: the counts and a peeked sample, each
 * entry's age, the summary lines and the ID / REV / AGE columns.
 */
import { UsageError } from '../cliErrors.js';
import { type Column, formatDuration, type Output, paint, printFields, printTable } from '../output.js';
import type { DeadLetter, SqsDeadLetterQueue } from './SqsDeadLetterQueue.js';

export interface SampleOptions {
  /** How many messages to peek at. @default 10 */
  readonly sample?: number;
  /** How long peeked messages are hidden before they are released again. @default 30 */
  readonly peekSeconds?: number;
}

export interface QueueSummary {
  readonly queueUrl: string;
  /** Visible messages (ApproximateNumberOfMessages). */
  readonly count: number;
  /** Messages received by someone right now (ApproximateNumberOfMessagesNotVisible). */
  readonly inFlight: number;
  /** The oldest age among the sampled messages (the exact oldest is CloudWatch's ApproximateAgeOfOldestMessage). */
  readonly oldestSampledAgeMs: number | null;
}

/** The most copies `--peek` / `--sample` receives (the entry point checks it before any queue is read). */
export const MAX_SAMPLE = 100;

/**
 * Counts the queue and peeks at a sample (`--sample`: a whole number from 0 to 100, checked before
 * the queue is touched); `toRows` turns the sampled messages into the report's rows, each with its
 * age since `nowMs`.
 * @throws UsageError for a bad sample size.
 */
export async function sampleReport<Row extends { readonly ageMs: number | null }>(
  queue: SqsDeadLetterQueue,
  options: SampleOptions,
  toRows: (letters: readonly DeadLetter[]) => Promise<Row[]> | Row[],
): Promise<QueueSummary & { readonly sample: Row[] }> {
  const size = options.sample ?? 10;
  if (!Number.isInteger(size) || size < 0 || size > MAX_SAMPLE) {
    throw new UsageError(`--sample must be a whole number from 0 to ${MAX_SAMPLE}`);
  }
  const counts = await queue.counts();
  const sample = await toRows(await queue.peek(size, options.peekSeconds ?? 30));
  const ages = sample.flatMap((row) => (row.ageMs === null ? [] : [row.ageMs]));
  return {
    queueUrl: queue.queueUrl,
    count: counts.visible,
    inFlight: counts.notVisible,
    oldestSampledAgeMs: ages.length > 0 ? Math.max(...ages) : null,
    sample,
  };
}

/** Milliseconds since `sentAtMs` (never negative), or null when SQS did not say. */
export function ageOf(sentAtMs: number | null, nowMs: number): number | null {
  return sentAtMs === null ? null : Math.max(0, nowMs - sentAtMs);
}

export interface SampledCopy {
  readonly id: string | null;
  readonly rev: number | null;
  readonly unreadable: string | null;
  readonly ageMs: number | null;
}

/** The ID and REV columns of a sample, an unreadable body shown with its reason. */
function sampleCopyColumns<Row extends SampledCopy>(): Column<Row>[] {
  return [
    { header: 'ID', value: (row) => row.id ?? `(unreadable: ${row.unreadable ?? '?'})` },
    { header: 'REV', value: (row) => (row.rev === null ? '-' : String(row.rev)), align: 'right' },
  ];
}

function sampleAgeColumn<Row extends SampledCopy>(): Column<Row> {
  return {
    header: 'AGE',
    value: (row) => (row.ageMs === null ? '-' : formatDuration(row.ageMs)),
    align: 'right',
  };
}

/**
 * A `show` report: one JSON document, or the summary lines and a table of the sample — ID, REV, the
 * command's own columns, AGE, then any `after` columns.
 */
export function printSampleReport<Row extends SampledCopy>(
  out: Output,
  report: QueueSummary & { readonly sample: readonly Row[] },
  columns: { readonly own: Column<Row>[]; readonly after?: Column<Row>[] },
): void {
  if (out.json) {
    out.data(report);
    return;
  }
  printFields(out, [
    ['queue', report.queueUrl],
    ['messages', paint(out, report.count > 0 ? 'red' : 'green', String(report.count))],
    ['in flight', String(report.inFlight)],
    [
      'oldest (sampled)',
      report.oldestSampledAgeMs === null ? '-' : formatDuration(report.oldestSampledAgeMs),
    ],
  ]);
  if (report.sample.length === 0) return;
  out.line('');
  printTable(
    out,
    [...sampleCopyColumns<Row>(), ...columns.own, sampleAgeColumn<Row>(), ...(columns.after ?? [])],
    report.sample,
  );
}
