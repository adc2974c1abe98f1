/**
 * `postdate relay-failures redrive`: re-dispatches what the relay's stream event source gave up on.
 * SQS's console redrive cannot serve this queue (it is fed by a Lambda event source, and its messages
 * describe a stream range, not a copy), so the CLI runs redriveStreamFailures
 * (cli/streamFailures/redriveStreamFailures.ts) with real clients: replay the range with the relay's
 * own logic while the stream still holds it, else one grace-0 sweep of the `due` index, behind the
 * senders' gate as the scheduled sweeper (lambdas/sweeper/relayToken.ts `sweeperGateOf`).
 * `event-failures redrive` (cli/eventFailuresCommand.ts) is the same redrive with the event producer.
 */
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { SchedulerClient } from '@aws-sdk/client-scheduler';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { EventBridgeScheduler } from '../lambdas/adapters/EventBridgeScheduler.js';
import { SqsDispatchQueue } from '../lambdas/adapters/SqsDispatchQueue.js';
import type { BreakerSettings } from '../lambdas/core/relayBreaker.js';
import { fromSdkRecord } from '../lambdas/relay/relayRecord.js';
import { type RelayDeps, relayRecords } from '../lambdas/relay/relayRecords.js';
import { DynamoDueIndex } from '../lambdas/store/dueIndex.js';
import { DynamoSweepRecords } from '../lambdas/store/sweepRecords.js';
import { sweeperGateOf } from '../lambdas/sweeper/relayToken.js';
import { UsageError } from './cliErrors.js';
import { SqsDeadLetterQueue } from './deadLetters/SqsDeadLetterQueue.js';
import { type Output, paint, printFields } from './output.js';
import {
  type RedriveStreamFailuresDeps,
  type RedriveStreamFailuresReport,
  redriveStreamFailures,
  type StreamReplay,
} from './streamFailures/redriveStreamFailures.js';
import { DynamoDbStreamRangeReader } from './streamFailures/streamRange.js';

export interface RelayFailureParts {
  readonly sqs: SQSClient;
  readonly documents: DynamoDBDocumentClient;
  readonly streams: DynamoDBStreamsClient;
  readonly scheduler: SchedulerClient;
  readonly tableName: string;
  readonly relayFailureQueueUrl: string;
  readonly sendQueueUrl: string;
  readonly sendQueueArn: string;
  readonly scheduleGroup: string;
  readonly schedulerRoleArn: string;
  readonly scheduleDeadLetterArn: string;
  /** POSTDATE_DIRECT_DELAY_MAX_SECONDS and POSTDATE_SCHEDULE_LEAD_SECONDS, as the relay has them. */
  readonly directDelayMaxSeconds: number;
  readonly scheduleLeadSeconds: number;
  /** The relays in order and their breakers' settings, as the senders have them: the sweep's gate. */
  readonly relayNames: readonly string[];
  readonly breaker: BreakerSettings;
  readonly now: () => Date;
}

/** The relay's logic over records read back from the stream: the redrive's one relay-specific step. */
export function replayRelayRecords(relay: RelayDeps): StreamReplay {
  return async (records) => {
    const outcome = await relayRecords(records.map(fromSdkRecord), relay);
    return { failed: outcome.failed, invalid: outcome.invalid };
  };
}

/** The relay's redrive: the stream's, with the sweep as its backstop for batches the stream no longer holds. */
export type RelayRedriveDeps = RedriveStreamFailuresDeps & {
  readonly sweep: NonNullable<RedriveStreamFailuresDeps['sweep']>;
};

/** The relay's dependencies, built from real clients exactly as lambdas/relay/handler.ts builds them. */
export function relayFailureDeps(parts: RelayFailureParts): RelayRedriveDeps {
  const queue = new SqsDispatchQueue(parts.sqs, parts.sendQueueUrl);
  return {
    // The CLI's one dead-letter adapter; no long poll, as the relay's own reader.
    failures: new SqsDeadLetterQueue(parts.sqs, parts.relayFailureQueueUrl, {
      waitSeconds: 0,
      name: 'the relay failure queue',
    }),
    replay: replayRelayRecords({
      queue,
      scheduler: new EventBridgeScheduler(parts.scheduler, {
        groupName: parts.scheduleGroup,
        sendQueueArn: parts.sendQueueArn,
        roleArn: parts.schedulerRoleArn,
        deadLetterArn: parts.scheduleDeadLetterArn,
      }),
      now: parts.now,
      directDelayMaxSeconds: parts.directDelayMaxSeconds,
      scheduleLeadSeconds: parts.scheduleLeadSeconds,
    }),
    streamRange: new DynamoDbStreamRangeReader(parts.streams),
    sweep: {
      dueIndex: new DynamoDueIndex(parts.documents, parts.tableName),
      records: new DynamoSweepRecords(parts.documents, parts.tableName),
      queue,
      now: parts.now,
      gate: sweeperGateOf(parts.documents, parts.tableName, parts.relayNames, parts.breaker),
    },
  };
}

export interface RelayFailuresOptions {
  /** Stop after this many failure messages. @default 1000 */
  readonly max?: number;
}

export async function relayFailuresRedrive(
  deps: RedriveStreamFailuresDeps,
  options: RelayFailuresOptions,
  out: Output,
): Promise<RedriveStreamFailuresReport> {
  const max = options.max ?? 1000;
  if (!Number.isInteger(max) || max < 1) throw new UsageError('--max must be a whole number of at least 1');
  const report = await redriveStreamFailures({ ...deps, maxMessages: max });
  if (out.json) {
    out.data(report);
    return report;
  }
  printFields(out, [
    ['failure messages', String(report.messages)],
    ['replayed from the stream', String(report.replayed)],
    ['covered by a sweep', String(report.sweptOver)],
    ['left on the queue', leftOnTheQueue(report, out)],
    ...(report.sweep
      ? ([
          [
            'sweep',
            `${report.sweep.redispatched} re-dispatched of ${report.sweep.examined} overdue (${report.sweep.failed} refused)`,
          ],
        ] as const)
      : []),
  ]);
  if (report.kept > 0) {
    out.warn(
      'some failure messages stay on the queue: run again later; the sweeper covers their messages meanwhile',
    );
  }
  warnUnreached(report, out);
  return report;
}

/** The kept ones, or more: SQS's count may not show a release yet, and may hold what the run did not reach. */
export function leftOnTheQueue(report: RedriveStreamFailuresReport, out: Output): string {
  const left = Math.max(report.kept, report.remaining);
  return paint(out, left > 0 ? 'red' : 'green', String(left));
}

/** Says so when the queue holds more than the run kept: it stopped at `--max`, or more came meanwhile. */
export function warnUnreached(report: RedriveStreamFailuresReport, out: Output): void {
  if (report.remaining > report.kept) {
    out.warn(
      `${report.remaining - report.kept} more failure messages on the queue (past --max, or sent meanwhile): run again`,
    );
  }
}

/** Whether every failure message was dealt with and none is left (the entry point's exit code). */
export function relayFailuresCleared(report: RedriveStreamFailuresReport): boolean {
  return report.kept === 0 && report.remaining === 0;
}
