import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { isMessageStatus } from '../core/messageStatus.js';
import type { MessageStateRecord } from '../store/messageRecord.js';
import { type SdkAttributeMap, sdkImageOf } from '../store/streamImage.js';
import { KEY, RELAY_STREAM_FILTER } from '../store/tableLayout.js';

/** The part of a state record's image that the relay reads. */
export type StateImage = Pick<MessageStateRecord, 'id' | 'rev' | 'status' | 'send_at' | 'api_copy'>;

/**
 * One stream record as the relay sees it, whatever delivered it: the Lambda event source (images
 * as JSON, binary as base64) or `GetRecords` during a redrive (the SDK's shapes).
 */
export interface RelayRecord {
  /** `dynamodb.SequenceNumber`: the `itemIdentifier` of a batch item failure. */
  readonly sequenceNumber: string;
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE' | undefined;
  /** `Keys.sk.S`; the stream filter lets only `STATE` through, checked again here. */
  readonly sortKey: string | undefined;
  readonly oldImage: ImageRead;
  readonly newImage: ImageRead;
}

export type ImageRead =
  | { readonly ok: true; readonly image: StateImage }
  | { readonly ok: false; readonly reason: string };

/** From the Lambda event source's record (images as JSON, binary values base64 strings). */
export function fromLambdaRecord(record: DynamoDBRecord): RelayRecord {
  const stream = record.dynamodb;
  return {
    sequenceNumber: stream?.SequenceNumber ?? '',
    eventName: record.eventName,
    sortKey: stream?.Keys?.[KEY.sort]?.S,
    oldImage: readImage(stream?.OldImage ? sdkImageOf(stream.OldImage) : undefined),
    newImage: readImage(stream?.NewImage ? sdkImageOf(stream.NewImage) : undefined),
  };
}

/** The fields of a `GetRecords` record that the relay reads (the DynamoDB Streams SDK's shape). */
export interface SdkStreamRecord {
  readonly eventName?: 'INSERT' | 'MODIFY' | 'REMOVE' | undefined;
  readonly dynamodb?:
    | {
        readonly SequenceNumber?: string | undefined;
        readonly Keys?: SdkAttributeMap | undefined;
        readonly NewImage?: SdkAttributeMap | undefined;
        readonly OldImage?: SdkAttributeMap | undefined;
      }
    | undefined;
}

/** From a record read with the DynamoDB Streams API (`GetRecords`), as the redrive does. */
export function fromSdkRecord(record: SdkStreamRecord): RelayRecord {
  const stream = record.dynamodb;
  return {
    sequenceNumber: stream?.SequenceNumber ?? '',
    eventName: record.eventName,
    sortKey: stream?.Keys?.[KEY.sort]?.S,
    oldImage: readImage(stream?.OldImage),
    newImage: readImage(stream?.NewImage),
  };
}

/** RELAY_STREAM_FILTER, applied again in code: only message state records reach the relay's logic. */
export function isStateRecord(record: RelayRecord): boolean {
  const allowed: readonly string[] = RELAY_STREAM_FILTER.dynamodb.Keys[KEY.sort].S;
  return record.sortKey !== undefined && allowed.includes(record.sortKey);
}

/** The only attributes the relay reads; the rest of the image is never decoded, so it cannot trip the relay. */
const READ_ATTRIBUTES = ['id', 'rev', 'status', 'send_at', 'api_copy'] as const;

function readImage(map: SdkAttributeMap | undefined): ImageRead {
  if (map === undefined) return { ok: false, reason: 'no image' };
  const wanted: SdkAttributeMap = {};
  for (const name of READ_ATTRIBUTES) {
    const value = map[name];
    if (value !== undefined) wanted[name] = value;
  }
  let item: Record<string, unknown>;
  try {
    item = unmarshall(wanted);
  } catch (error) {
    return { ok: false, reason: `image does not unmarshall: ${(error as Error).message}` };
  }
  const { id, rev, status, send_at, api_copy } = item;
  if (typeof id !== 'string' || id === '') return { ok: false, reason: 'image has no id' };
  if (typeof rev !== 'number' || !Number.isSafeInteger(rev) || rev < 1) {
    return { ok: false, reason: 'image has no positive integer rev' };
  }
  if (!isMessageStatus(status)) return { ok: false, reason: 'image has no known status' };
  if (typeof send_at !== 'string' || Number.isNaN(Date.parse(send_at))) {
    return { ok: false, reason: 'image has no ISO send_at' };
  }
  return { ok: true, image: { id, rev, status, send_at, ...(api_copy === true ? { api_copy } : {}) } };
}
