import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, AttributeValue as LambdaAttributeValue } from 'aws-lambda';
import type { ImageChange, StatusImage } from '../core/messageEvents.js';
import { isMessageStateRecord, type MessageStateRecord } from '../store/messageRecord.js';
import { ITEM_SORT_KEY, KEY } from '../store/tableLayout.js';

/** One stream record as the event producer reads it: the change, and the new image in full (the view). */
export interface EventRecord {
  readonly sequenceNumber: string;
  readonly change: ImageChange;
  readonly state: MessageStateRecord | null;
}

type AttributeMap = Record<string, SdkAttributeValue>;

/**
 * From the Lambda event source's record. Only message state records are read (the stream filter lets
 * only those through; checked again here); an image that is not a state record reads as none.
 */
export function fromLambdaRecord(record: DynamoDBRecord): EventRecord {
  const stream = record.dynamodb;
  const sequenceNumber = stream?.SequenceNumber ?? '';
  if (stream?.Keys?.[KEY.sort]?.S !== ITEM_SORT_KEY.messageState) {
    return { sequenceNumber, change: { eventName: undefined, before: null, after: null }, state: null };
  }
  const before = readState(stream.OldImage);
  const after = readState(stream.NewImage);
  return {
    sequenceNumber,
    change: { eventName: record.eventName, before: statusImage(before), after: statusImage(after) },
    state: after,
  };
}

function readState(image: Record<string, LambdaAttributeValue> | undefined): MessageStateRecord | null {
  if (image === undefined) return null;
  let item: unknown;
  try {
    item = unmarshall(fromLambdaMap(image));
  } catch {
    return null;
  }
  return isMessageStateRecord(item) && typeof item.updated_at === 'string' ? item : null;
}

function statusImage(state: MessageStateRecord | null): StatusImage | null {
  return state === null
    ? null
    : {
        id: state.id,
        tenant: state.tenant,
        status: state.status,
        rev: state.rev,
        updated_at: state.updated_at,
      };
}

function fromLambdaMap(map: Record<string, LambdaAttributeValue>): AttributeMap {
  const out: AttributeMap = {};
  for (const [name, value] of Object.entries(map)) out[name] = fromLambdaValue(value);
  return out;
}

/** The event source sends binary as base64 strings; the SDK's unmarshall expects bytes. */
function fromLambdaValue(value: LambdaAttributeValue): SdkAttributeValue {
  if (value.B !== undefined) return { B: Buffer.from(value.B, 'base64') };
  if (value.BS !== undefined) return { BS: value.BS.map((b) => Buffer.from(b, 'base64')) };
  if (value.L !== undefined) return { L: value.L.map(fromLambdaValue) };
  if (value.M !== undefined) return { M: fromLambdaMap(value.M) };
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  if (value.NULL !== undefined) return { NULL: value.NULL };
  if (value.SS !== undefined) return { SS: value.SS };
  if (value.NS !== undefined) return { NS: value.NS };
  return { NULL: true };
}
