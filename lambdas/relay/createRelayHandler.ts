import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { fromLambdaRecord } from './relayRecord.js';
import { type RelayDeps, relayRecords } from './relayRecords.js';

/**
 * The relay's handler logic for a DynamoDB Streams batch: every record relayed (or ignored), and the
 * records that failed reported by sequence number (ReportBatchItemFailures). It never throws for a
 * record, so one failing message never fails the others.
 */
export function createRelayHandler(
  deps: RelayDeps,
): (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse> {
  return async function relayBatch(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
    const records = event.Records.map(fromLambdaRecord);
    const outcome = await relayRecords(records, deps);
    deps.log?.debug?.('relay batch done', {
      records: records.length,
      queued: outcome.queued,
      scheduled: outcome.scheduled,
      alreadyScheduled: outcome.alreadyScheduled,
      deletedSchedules: outcome.deletedSchedules,
      ignored: outcome.ignored,
      invalid: outcome.invalid,
      refused: outcome.refused,
      failed: outcome.failed.length,
    });
    return { batchItemFailures: outcome.failed.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
