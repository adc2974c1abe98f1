import {
  type DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ResourceNotFoundException,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';
import { fromSdkRecord, type RelayRecord } from '../../lambdas/relay/relayRecord.js';
import { compareSequenceNumbers, type RelayFailureInfo } from './relayFailure.js';

export type StreamRangeRead =
  | { readonly kind: 'records'; readonly records: readonly RelayRecord[] }
  /** The records are no longer readable (past the stream's 24-hour retention, or the stream is gone). */
  | { readonly kind: 'gone'; readonly reason: string };

/** Reads back the stream records of a failed batch, if the stream still holds them. */
export interface StreamRangeReader {
  read(range: RelayFailureInfo): Promise<StreamRangeRead>;
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

  async read(range: RelayFailureInfo): Promise<StreamRangeRead> {
    try {
      const { ShardIterator } = await this.streams.send(
        new GetShardIteratorCommand({
          StreamArn: range.streamArn,
          ShardId: range.shardId,
          ShardIteratorType: 'AT_SEQUENCE_NUMBER',
          SequenceNumber: range.startSequenceNumber,
        }),
      );
      const records: RelayRecord[] = [];
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
        for (const raw of fetched) {
          const record = fromSdkRecord(raw);
          if (compareSequenceNumbers(record.sequenceNumber, range.endSequenceNumber) > 0) {
            return { kind: 'records', records };
          }
          records.push(record);
        }
        const last = records[records.length - 1];
        if (last && compareSequenceNumbers(last.sequenceNumber, range.endSequenceNumber) >= 0) break;
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
