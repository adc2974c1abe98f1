import {
  type _Record,
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type AttributeValue as SdkAttributeValue,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, DynamoDBStreamEvent, AttributeValue as LambdaAttributeValue } from 'aws-lambda';
import { streamsClient } from '../support/awsLocal.js';

/**
 * Reads a table's stream from DynamoDB Local the way the event source does, and hands the new
 * records over as a Lambda `DynamoDBStreamEvent` (images as JSON, binary as base64). Each `next()`
 * returns what was written since the previous one: a real stream batch, which a test can replay.
 */
export class StreamTail {
  private readonly streams = streamsClient();
  private readonly iterators = new Map<string, string | undefined>();
  private readonly shardOfSequence = new Map<string, string>();

  constructor(private readonly streamArn: string) {}

  async next(): Promise<DynamoDBStreamEvent> {
    const { StreamDescription } = await this.streams.send(
      new DescribeStreamCommand({ StreamArn: this.streamArn }),
    );
    const records: DynamoDBRecord[] = [];
    for (const shard of StreamDescription?.Shards ?? []) {
      const shardId = shard.ShardId;
      if (shardId === undefined) continue;
      if (!this.iterators.has(shardId)) {
        const { ShardIterator } = await this.streams.send(
          new GetShardIteratorCommand({
            StreamArn: this.streamArn,
            ShardId: shardId,
            ShardIteratorType: 'TRIM_HORIZON',
          }),
        );
        this.iterators.set(shardId, ShardIterator);
      }
      let iterator = this.iterators.get(shardId);
      while (iterator !== undefined) {
        const page = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
        this.iterators.set(shardId, page.NextShardIterator);
        iterator = page.NextShardIterator;
        const fetched = page.Records ?? [];
        if (fetched.length === 0) break;
        for (const record of fetched) {
          const sequenceNumber = record.dynamodb?.SequenceNumber;
          if (sequenceNumber !== undefined) this.shardOfSequence.set(sequenceNumber, shardId);
          records.push(toLambdaRecord(record, this.streamArn));
        }
      }
    }
    return { Records: records };
  }

  /**
   * The on-failure destination's message for a batch, as the event source mapping would send it
   * after giving up (DDBStreamBatchInfo: where the batch was, not its records).
   */
  failureMessage(event: DynamoDBStreamEvent): string {
    const numbers = event.Records.map((record) => record.dynamodb?.SequenceNumber ?? '0');
    numbers.sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
    const start = numbers[0] ?? '0';
    const end = numbers[numbers.length - 1] ?? '0';
    return relayFailureMessage({
      streamArn: this.streamArn,
      shardId: this.shardOfSequence.get(start) ?? 'unknown',
      start,
      end,
      batchSize: event.Records.length,
    });
  }
}

export function relayFailureMessage(batch: {
  streamArn: string;
  shardId: string;
  start: string;
  end: string;
  batchSize: number;
}): string {
  return JSON.stringify({
    requestContext: {
      requestId: 'c9b8fa9f-5a7f-4e5a-9d0b-4a8c1b8e0f11',
      functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:postdate-relay',
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: 3,
    },
    responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
    version: '1.0',
    timestamp: new Date().toISOString(),
    DDBStreamBatchInfo: {
      shardId: batch.shardId,
      startSequenceNumber: batch.start,
      endSequenceNumber: batch.end,
      approximateArrivalOfFirstRecord: new Date().toISOString(),
      approximateArrivalOfLastRecord: new Date().toISOString(),
      batchSize: batch.batchSize,
      streamArn: batch.streamArn,
    },
  });
}

function toLambdaRecord(record: _Record, streamArn: string): DynamoDBRecord {
  const stream = record.dynamodb;
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion,
    eventSource: 'aws:dynamodb',
    awsRegion: record.awsRegion,
    eventSourceARN: streamArn,
    dynamodb: {
      ApproximateCreationDateTime: stream?.ApproximateCreationDateTime
        ? Math.floor(stream.ApproximateCreationDateTime.getTime() / 1000)
        : undefined,
      Keys: stream?.Keys ? toLambdaMap(stream.Keys) : undefined,
      NewImage: stream?.NewImage ? toLambdaMap(stream.NewImage) : undefined,
      OldImage: stream?.OldImage ? toLambdaMap(stream.OldImage) : undefined,
      SequenceNumber: stream?.SequenceNumber,
      SizeBytes: stream?.SizeBytes,
      StreamViewType: stream?.StreamViewType,
    },
  };
}

function toLambdaMap(map: Record<string, SdkAttributeValue>): Record<string, LambdaAttributeValue> {
  const out: Record<string, LambdaAttributeValue> = {};
  for (const [name, value] of Object.entries(map)) out[name] = toLambdaValue(value);
  return out;
}

function toLambdaValue(value: SdkAttributeValue): LambdaAttributeValue {
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BS !== undefined) return { BS: value.BS.map((b) => Buffer.from(b).toString('base64')) };
  if (value.L !== undefined) return { L: value.L.map(toLambdaValue) };
  if (value.M !== undefined) return { M: toLambdaMap(value.M) };
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  if (value.SS !== undefined) return { SS: value.SS };
  if (value.NS !== undefined) return { NS: value.NS };
  if (value.NULL !== undefined) return { NULL: value.NULL };
  // DynamoDB Local's stream encodes an empty map as `{}` instead of `{"M":{}}` (AWS sends the latter).
  return { M: {} };
}
