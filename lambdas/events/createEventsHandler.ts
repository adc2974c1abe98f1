import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { fromLambdaRecord } from './eventRecords.js';
import { type EventDeps, produceEvents } from './produceEvents.js';

/**
 * The event producer's batch (the table's stream, its own filter and event source beside the
 * relay's): events out, the records to retry as batch item failures. It never throws for a record.
 */
export function createEventsHandler(
  deps: EventDeps,
): (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse> {
  return async function eventsBatch(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
    const records = event.Records.map(fromLambdaRecord);
    const outcome = await produceEvents(records, deps);
    deps.log?.info('events batch done', {
      records: records.length,
      events: outcome.events,
      deliveries: outcome.deliveries,
      failed: outcome.failed.length,
    });
    return { batchItemFailures: outcome.failed.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
