/**
 * `postdate schedule-failures show`: how many schedules EventBridge Scheduler could not deliver, and
 * a sample of them — message id, rev, Scheduler's error code, the schedule's name, age. No addresses
 * (the body is only `{v, id, rev}`), and not ERROR_MESSAGE (free text from the target's service).
 */
import {
  ageOf,
  printSampleReport,
  type QueueSummary,
  type SampleOptions,
  sampleReport,
} from '../deadLetters/queueSample.js';
import type { Output } from '../output.js';
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

export interface ScheduleFailuresShowReport extends QueueSummary {
  readonly sample: readonly ScheduleFailureEntry[];
}

export async function scheduleFailuresShow(
  deps: Pick<ScheduleFailureDeps, 'sqs' | 'scheduleDlqUrl' | 'now' | 'waitSeconds'>,
  options: SampleOptions,
  out: Output,
): Promise<ScheduleFailuresShowReport> {
  const now = deps.now().getTime();
  const report: ScheduleFailuresShowReport = await sampleReport(
    scheduleDeadLetterQueue(deps),
    options,
    (letters) =>
      letters.map((letter) => {
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
      }),
  );
  printSampleReport(out, report, {
    own: [
      { header: 'ERROR', value: (row) => row.errorCode ?? '-' },
      { header: 'SCHEDULE', value: (row) => row.scheduleName ?? '-' },
    ],
  });
  return report;
}
