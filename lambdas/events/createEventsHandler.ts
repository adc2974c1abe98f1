import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { inStreamOrder } from '../store/streamRecord.js';
import { type AttachmentLifetimeDeps, tagAttachmentLifetimes } from './attachmentLifetimes.js';
import { fromLambdaRecord } from './eventRecords.js';
import { type EventDeps, produceEvents } from './produceEvents.js';

/**
 * The event producer's batch (the table's stream, its own filter and event source beside the
 * relay's): events out, the attachments of new, ended and revived messages tagged (attachmentLifetimes.ts), the
 * records to retry as batch item failures. It never throws for a record.
 */
export function createEventsHandler(
  deps: EventDeps & {
    /** The attachments' bucket and the reads that decide its tags; without it (a stack without attachments) nothing is tagged. */
    readonly attachments?: AttachmentLifetimeDeps | undefined;
  },
): (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse> {
  return async function eventsBatch(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
    const records = event.Records.map(fromLambdaRecord);
    const outcome = await produceEvents(records, deps);
    const lifetimes = deps.attachments
      ? await tagAttachmentLifetimes(
          records,
          { ...deps.attachments, now: deps.now, retentionDays: deps.retentionDays },
          deps.log,
        )
      : { failed: [], tagged: 0, rewritten: 0 };
    const failed = inStreamOrder(records, new Set([...outcome.failed, ...lifetimes.failed]));
    deps.log?.debug?.('events batch done', {
      records: records.length,
      events: outcome.events,
      deliveries: outcome.deliveries,
      attachments_tagged: lifetimes.tagged,
      attachments_rewritten: lifetimes.rewritten,
      failed: failed.length,
    });
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
