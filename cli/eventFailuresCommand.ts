/**
 * `postdate event-failures redrive`: replays what the event producer's stream event source gave up
 * on (DESIGN §11; docs/decisions/0134). It is `relay-failures redrive` (cli/relayFailuresCommand.ts)
 * with the producer's logic in place of the relay's: the same failure-message format, the same
 * stream-range reader, the same redrive (cli/streamFailures/redriveStreamFailures.ts). One difference:
 * events come only from the stream, so a batch the stream no longer holds has no sweep to cover it;
 * it stays on the queue, named, until the operator discards it (`--discard-gone`).
 *
 * A replay is idempotent: event ids and delivery ids derive from the records, so the bus gets the
 * same ids again (its consumers dedupe) and an endpoint's delivery is found, not made twice; only a
 * delivery never attempted gets its first copy again (one extra POST at most, same `webhook-id`).
 */
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SqsWebhookQueue } from '../lambdas/adapters/SqsWebhookQueue.js';
import { toLambdaRecord } from '../lambdas/adapters/streamRecordFormat.js';
import type { BusEvents } from '../lambdas/core/busEvents.js';
import { createEventsHandler } from '../lambdas/events/createEventsHandler.js';
import type { AttachmentStore } from '../lambdas/ports/AttachmentStore.js';
import type { EventBus } from '../lambdas/ports/Webhooks.js';
import { readStateRecord } from '../lambdas/store/stateReads.js';
import { DynamoWebhookStore } from '../lambdas/store/webhookStore.js';
import { EVENTS_STREAM_FILTER } from '../lib/webhookLayout.js';
import { UsageError } from './cliErrors.js';
import { SqsDeadLetterQueue } from './deadLetters/SqsDeadLetterQueue.js';
import { counted, type Output, paint, printFields } from './output.js';
import { leftOnTheQueue, warnUnreached } from './relayFailuresCommand.js';
import {
  type RedriveStreamFailuresDeps,
  type RedriveStreamFailuresReport,
  redriveStreamFailures,
  type StreamReplay,
} from './streamFailures/redriveStreamFailures.js';
import { DynamoDbStreamRangeReader } from './streamFailures/streamRange.js';

type EventsHandlerDeps = Parameters<typeof createEventsHandler>[0];

export interface EventFailureParts {
  readonly sqs: SQSClient;
  readonly documents: DynamoDBDocumentClient;
  readonly streams: DynamoDBStreamsClient;
  readonly tableName: string;
  readonly eventFailureQueueUrl: string;
  readonly webhookQueueUrl: string;
  /** The stack's EventBridge bus (AWS); none where there is no bus. */
  readonly bus: EventBus | undefined;
  /** POSTDATE_BUS_EVENTS, as the producer has it: a replay puts on the bus only what it would (decision 0178). */
  readonly busEvents: BusEvents;
  /** The attachments' bucket, to tag messages' attachments as the producer does (from their current records). */
  readonly attachments: AttachmentStore | undefined;
  /** POSTDATE_WEBHOOK_RETRY_HOURS and POSTDATE_RETENTION_DAYS, as the producer has them. */
  readonly retryHours: number;
  readonly retentionDays: number;
  readonly now: () => Date;
}

/**
 * The producer's own handler over records read back from the stream, turned into the Lambda event
 * source's shape as the local stack's stream runner does: the redrive's one events-specific step.
 */
export function replayEventRecords(deps: EventsHandlerDeps): StreamReplay {
  const handler = createEventsHandler(deps);
  const passes: readonly (string | undefined)[] = EVENTS_STREAM_FILTER.eventName;
  return async (records, batch) => {
    // The producer's stream filter, applied again: a REMOVE in the range never reached it.
    const Records = records
      .filter((record) => passes.includes(record.eventName))
      .map((record) => toLambdaRecord(record, batch.streamArn));
    const { batchItemFailures } = await handler({ Records });
    return { failed: batchItemFailures.map((failure) => failure.itemIdentifier), invalid: 0 };
  };
}

/** The producer's dependencies, built from real clients as lambdas/events/handler.ts builds them. */
export function eventFailureDeps(parts: EventFailureParts): RedriveStreamFailuresDeps {
  return {
    failures: new SqsDeadLetterQueue(parts.sqs, parts.eventFailureQueueUrl, {
      waitSeconds: 0,
      name: 'the event failure queue',
    }),
    replay: replayEventRecords({
      bus: parts.bus,
      busEvents: parts.busEvents,
      store: new DynamoWebhookStore(parts.documents, parts.tableName),
      queue: new SqsWebhookQueue(parts.sqs, parts.webhookQueueUrl),
      attachments:
        parts.attachments === undefined
          ? undefined
          : {
              store: parts.attachments,
              currentState: (id) => readStateRecord(parts.documents, parts.tableName, id),
            },
      now: parts.now,
      retryHours: parts.retryHours,
      retentionDays: parts.retentionDays,
    }),
    streamRange: new DynamoDbStreamRangeReader(parts.streams),
  };
}

export interface EventFailuresOptions {
  /** Stop after this many failure messages. @default 1000 */
  readonly max?: number;
  /** Delete the failure messages whose records the stream no longer holds (after reading them here). */
  readonly discardGone?: boolean;
}

export async function eventFailuresRedrive(
  deps: RedriveStreamFailuresDeps,
  options: EventFailuresOptions,
  out: Output,
): Promise<RedriveStreamFailuresReport> {
  const max = options.max ?? 1000;
  if (!Number.isInteger(max) || max < 1) throw new UsageError('--max must be a whole number of at least 1');
  const report = await redriveStreamFailures({
    ...deps,
    maxMessages: max,
    discardGone: options.discardGone === true,
  });
  if (out.json) {
    const { sweptOver: _sweptOver, sweep: _sweep, ...shown } = report;
    out.data(shown);
    return report;
  }
  printFields(out, [
    ['failure messages', String(report.messages)],
    ['replayed from the stream', String(report.replayed)],
    ['gone from the stream', paint(out, report.gone > 0 ? 'red' : 'green', String(report.gone))],
    ['discarded', String(report.discarded)],
    ['left on the queue', leftOnTheQueue(report, out)],
  ]);
  for (const batch of report.goneBatches) {
    out.warn(
      `stream ${batch.streamArn}, shard ${batch.shardId}, sequence ${batch.startSequenceNumber}–${batch.endSequenceNumber}` +
        `${batch.batchSize === null ? '' : ` (${counted(batch.batchSize, 'record')})`}: no longer in the stream; its events cannot be replayed`,
    );
  }
  if (report.kept > report.gone - report.discarded) {
    out.warn(
      'some failure messages stay on the queue: a replay failed again or a message is unreadable; run again later',
    );
  }
  if (report.gone > report.discarded) {
    out.warn(
      'batches gone from the stream stay on the queue: record them, then run again with --discard-gone',
    );
  }
  warnUnreached(report, out);
  return report;
}

/** Whether every failure message was dealt with and none is left (the entry point's exit code). */
export function eventFailuresCleared(report: RedriveStreamFailuresReport): boolean {
  return report.kept === 0 && report.remaining === 0;
}
