import {
  type DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ResourceNotFoundException,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';
import type { SdkStreamRecord } from '../../lambdas/store/streamRecord.js';
import { compareSequenceNumbers, type StreamFailureInfo } from './streamFailure.js';

export type StreamRangeRead =
  /** The records as `GetRecords` answers them; each stream reader decodes them its own way. */
  | { readonly kind: 'records'; readonly records: readonly SdkStreamRecord[] }
  /** The records are no longer readable (past the stream's 24-hour retention, or the stream is gone). */
  | { readonly kind: 'gone'; readonly reason: string };

/** Reads back the stream records of a failed batch, if the stream still holds them. */
export interface StreamRangeReader {
  read(range: StreamFailureInfo): Promise<StreamRangeRead>;
}

/**
 * The DynamoDB Streams API: an iterator AT the start sequence number of the failed batch, then
 * `GetRecords` until the end sequence number is passed. Trimmed data, an unknown stream or shard,
 * and an expired iterator mean "gone"; other errors (throttling, network) are thrown, so the failure
 * message stays on its queue for the next attempt.
 */
export class DynamoDbStreamRangeReader implements StreamRangeReader {
  constructor(
    private readonly streams: DynamoDBStreamsClient,
    private readonly options: { maxEmptyPolls?: number } = {},
  ) {}

  async read(range: StreamFailureInfo): Promise<StreamRangeRead> {
    try {
      const { ShardIterator } = await this.streams.send(
        new GetShardIteratorCommand({
          StreamArn: range.streamArn,
          ShardId: range.shardId,
          ShardIteratorType: 'AT_SEQUENCE_NUMBER',
          SequenceNumber: range.startSequenceNumber,
        }),
      );
      const records: SdkStreamRecord[] = [];
      let iterator = ShardIterator;
      let emptyPolls = 0;
      while (iterator !== undefined) {
        const page = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
        iterator = page.NextShardIterator;
        const fetched = page.Records ?? [];
        if (fetched.length === 0) {
          // An open shard answers empty once it is caught up; a few empty polls mean "nothing more".
          if (++emptyPolls >= (this.options.maxEmptyPolls ?? 3)) break;
          continue;
        }
        emptyPolls = 0;
        for (const record of fetched) {
          if (compareSequenceNumbers(sequenceOf(record), range.endSequenceNumber) > 0) {
            return { kind: 'records', records };
          }
          records.push(record);
        }
        const last = records[records.length - 1];
        if (last && compareSequenceNumbers(sequenceOf(last), range.endSequenceNumber) >= 0) break;
      }
      return { kind: 'records', records };
    } catch (error) {
      if (
        error instanceof TrimmedDataAccessException ||
        error instanceof ResourceNotFoundException ||
        error instanceof ExpiredIteratorException
      ) {
        return { kind: 'gone', reason: error.name };
      }
      throw error;
    }
  }
}

function sequenceOf(record: SdkStreamRecord): string {
  return record.dynamodb?.SequenceNumber ?? '0';
}
