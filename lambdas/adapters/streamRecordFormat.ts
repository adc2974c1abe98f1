import type {
  AttributeValue as SdkAttributeValue,
  _Record as SdkRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';

/**
 * A DynamoDB Streams record as the SDK returns it, turned into the JSON a Lambda function receives:
 * epoch seconds for ApproximateCreationDateTime, base64 strings for binary values, and
 * eventSourceARN set to the stream.
 */
export function toLambdaRecord(record: SdkRecord, streamArn: string): DynamoDBRecord {
  const stream = record.dynamodb ?? {};
  const created = stream.ApproximateCreationDateTime;
  const dynamodb: NonNullable<DynamoDBRecord['dynamodb']> = {
    ...(created ? { ApproximateCreationDateTime: Math.floor(created.getTime() / 1000) } : {}),
    ...(stream.Keys ? { Keys: toLambdaImage(stream.Keys) } : {}),
    ...(stream.NewImage ? { NewImage: toLambdaImage(stream.NewImage) } : {}),
    ...(stream.OldImage ? { OldImage: toLambdaImage(stream.OldImage) } : {}),
    ...(stream.SequenceNumber ? { SequenceNumber: stream.SequenceNumber } : {}),
    ...(stream.SizeBytes !== undefined ? { SizeBytes: stream.SizeBytes } : {}),
    ...(stream.StreamViewType ? { StreamViewType: stream.StreamViewType } : {}),
  };
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: record.awsRegion,
    dynamodb,
    eventSourceARN: streamArn,
    ...(record.userIdentity ? { userIdentity: { ...record.userIdentity } } : {}),
  };
}

function toLambdaImage(image: Record<string, SdkAttributeValue>): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(image).map(([name, value]) => [name, toLambdaValue(value)]));
}

const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');

function toLambdaValue(value: SdkAttributeValue): AttributeValue {
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.B !== undefined) return { B: base64(value.B) };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  if (value.NULL !== undefined) return { NULL: value.NULL };
  if (value.SS !== undefined) return { SS: value.SS };
  if (value.NS !== undefined) return { NS: value.NS };
  if (value.BS !== undefined) return { BS: value.BS.map(base64) };
  if (value.L !== undefined) return { L: value.L.map(toLambdaValue) };
  if (value.M !== undefined) return { M: toLambdaImage(value.M) };
  // DynamoDB Local's stream sends an empty map as a bare `{}` (AWS sends `{"M":{}}`), which the SDK
  // deserializes to a value with no member set; no other type loses its member when empty.
  if (Object.keys(value).filter((key) => key !== '$unknown').length === 0 && value.$unknown === undefined) {
    return { M: {} };
  }
  throw new Error('unknown attribute value type in a stream record');
}
