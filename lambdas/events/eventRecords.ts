import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, AttributeValue as LambdaAttributeValue } from 'aws-lambda';
import type { ImageChange, StatusImage } from '../core/messageEvents.js';
import { isMessageStateRecord, type MessageStateRecord } from '../store/messageRecord.js';
import { sdkImageOf } from '../store/streamImage.js';
import { ITEM_SORT_KEY, KEY } from '../store/tableLayout.js';

/** One stream record as the event producer reads it: the change, and the new image in full (the view). */
export interface EventRecord {
  readonly sequenceNumber: string;
  readonly change: ImageChange;
  readonly state: MessageStateRecord | null;
}

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
    item = unmarshall(sdkImageOf(image));
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
