import type { DynamoDBRecord } from 'aws-lambda';
import { isMessageId } from '../core/ids.js';
import { isMessageStatus } from '../core/messageStatus.js';
import { recordRefusal } from '../core/recordLayout.js';
import type { MessageStateRecord } from '../store/messageRecord.js';
import {
  fromLambdaRecord as decodeLambdaRecord,
  fromSdkRecord as decodeSdkRecord,
  type SdkAttributeMap,
  type SdkStreamRecord,
  type StreamRecord,
  unmarshallImage,
} from '../store/streamRecord.js';
import { KEY, RELAY_STREAM_FILTER } from '../store/tableLayout.js';

/** The part of a state record's image that the relay reads. */
export type StateImage = Pick<MessageStateRecord, 'id' | 'rev' | 'status' | 'send_at' | 'api_copy'>;

/**
 * One stream record as the relay sees it, whatever delivered it: the Lambda event source (images
 * as JSON, binary as base64) or `GetRecords` during a redrive (the SDK's shapes).
 */
export type RelayRecord = StreamRecord<ImageRead>;

export type ImageRead =
  | { readonly ok: true; readonly image: StateImage }
  | {
      readonly ok: false;
      readonly reason: string;
      /** The message's id, when the image has one: so an operator can find the record. */
      readonly id?: string;
      /** A newer writer's record (core/recordLayout.ts): refused and counted, not merely unreadable. */
      readonly refused?: { readonly id: string };
    };

/** From the Lambda event source's record (images as JSON, binary values base64 strings). */
export function fromLambdaRecord(record: DynamoDBRecord): RelayRecord {
  return decodeLambdaRecord(record, readImage);
}

/** From a record read with the DynamoDB Streams API (`GetRecords`), as the redrive does. */
export function fromSdkRecord(record: SdkStreamRecord): RelayRecord {
  return decodeSdkRecord(record, readImage);
}

/** RELAY_STREAM_FILTER, applied again in code: only message state records reach the relay's logic. */
export function isStateRecord(record: RelayRecord): boolean {
  const allowed: readonly string[] = RELAY_STREAM_FILTER.dynamodb.Keys[KEY.sort].S;
  return record.sortKey !== undefined && allowed.includes(record.sortKey);
}

/** How much of an id that is no message id a log line names: enough to find the record, no more. */
const MAX_LOGGED_ID_CHARS = 64;

/** The only attributes the relay reads; the rest of the image is never decoded, so it cannot trip the relay. */
const READ_ATTRIBUTES = ['id', 'rev', 'status', 'send_at', 'api_copy', 'layout'] as const;

function readImage(map: SdkAttributeMap | undefined): ImageRead {
  if (map === undefined) return { ok: false, reason: 'no image' };
  const decoded = unmarshallImage(map, READ_ATTRIBUTES);
  if (!decoded.ok) return decoded;
  const { id, rev, status, send_at, api_copy, layout } = decoded.item;
  if (typeof id !== 'string' || id === '') return { ok: false, reason: 'image has no id' };
  // A newer writer's record is refused before its shape is judged: its rules are not ours.
  const refusal = recordRefusal({ layout, status });
  if (refusal !== undefined) return { ok: false, reason: refusal.reason, refused: { id } };
  // A copy carries only `{v, id, rev}`, and its id is one DESIGN §2 allows (core/ids.ts): a record
  // written by hand under another could never be sent, and its copy could not even be encoded.
  if (!isMessageId(id)) {
    return {
      ok: false,
      reason: 'image id is no message id (URL-safe, 1–32 characters)',
      id: id.slice(0, MAX_LOGGED_ID_CHARS),
    };
  }
  if (typeof rev !== 'number' || !Number.isSafeInteger(rev) || rev < 1) {
    return { ok: false, reason: 'image has no positive integer rev', id };
  }
  if (!isMessageStatus(status)) return { ok: false, reason: 'image has no known status', id };
  if (typeof send_at !== 'string' || Number.isNaN(Date.parse(send_at))) {
    return { ok: false, reason: 'image has no ISO send_at', id };
  }
  return { ok: true, image: { id, rev, status, send_at, ...(api_copy === true ? { api_copy } : {}) } };
}
