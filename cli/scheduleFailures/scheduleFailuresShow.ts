/**
 * `postdate schedule-failures show`: how many schedules EventBridge Scheduler could not deliver, and
 * a sample of them — message id, rev, Scheduler's error code, the schedule's name, age. No addresses
 * (the body is only `{v, id, rev}`), and not ERROR_MESSAGE (free text from the target's service).
 */
import {
  ageOf,
  checkSampleSize,
  oldestAge,
  printQueueSummary,
  sampleAgeColumn,
  sampleCopyColumns,
} from '../dlq/dlqShow.js';
import { type Column, type Output, printTable } from '../output.js';
import { readScheduleFailure, type ScheduleFailureDeps, scheduleDeadLetterQueue } from './scheduleFailure.js';

export interface ScheduleFailureEntry {
  readonly id: string | null;
  readonly rev: number | null;
  readonly errorCode: string | null;
  readonly scheduleName: string | null;
  /** Since Scheduler put it on the DLQ. */
  readonly ageMs: number | null;
  readonly sqsMessageId: string | null;
  readonly unreadable: string | null;
}

export interface ScheduleFailuresShowReport {
  readonly queueUrl: string;
  readonly count: number;
  readonly inFlight: number;
  readonly oldestSampledAgeMs: number | null;
  readonly sample: readonly ScheduleFailureEntry[];
}

export async function scheduleFailuresShow(
  deps: Pick<ScheduleFailureDeps, 'sqs' | 'scheduleDlqUrl' | 'now' | 'waitSeconds'>,
  options: { readonly sample?: number; readonly peekSeconds?: number },
  out: Output,
): Promise<ScheduleFailuresShowReport> {
  const sampleSize = options.sample ?? 10;
  checkSampleSize(sampleSize);
  const queue = scheduleDeadLetterQueue(deps);
  const counts = await queue.counts();
  const letters = await queue.peek(sampleSize, options.peekSeconds ?? 30);
  const now = deps.now().getTime();
  const sample = letters.map((letter): ScheduleFailureEntry => {
    const failure = readScheduleFailure(letter);
    return {
      id: failure.copy?.id ?? null,
      rev: failure.copy?.rev ?? null,
      errorCode: failure.errorCode,
      scheduleName: failure.scheduleName,
      ageMs: ageOf(letter.sentAtMs, now),
      sqsMessageId: failure.sqsMessageId,
      unreadable: failure.unreadable,
    };
  });
  const report: ScheduleFailuresShowReport = {
    queueUrl: deps.scheduleDlqUrl,
    count: counts.visible,
    inFlight: counts.notVisible,
    oldestSampledAgeMs: oldestAge(sample),
    sample,
  };
  if (out.json) {
    out.data(report);
    return report;
  }
  printQueueSummary(out, report);
  if (sample.length === 0) return report;
  out.line('');
  const columns: Column<ScheduleFailureEntry>[] = [
    ...sampleCopyColumns<ScheduleFailureEntry>(),
    { header: 'ERROR', value: (row) => row.errorCode ?? '-' },
    { header: 'SCHEDULE', value: (row) => row.scheduleName ?? '-' },
    sampleAgeColumn<ScheduleFailureEntry>(),
  ];
  printTable(out, columns, sample);
  return report;
}
