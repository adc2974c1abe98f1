import type { DynamoDBRecord } from 'aws-lambda';
import type { ImageChange, StatusImage } from '../core/messageEvents.js';
import { isMessageStateRecord, type MessageStateRecord } from '../store/messageRecord.js';
import {
  fromLambdaRecord as decodeLambdaRecord,
  type SdkAttributeMap,
  unmarshallImage,
} from '../store/streamRecord.js';
import { ITEM_SORT_KEY } from '../store/tableLayout.js';

/** One stream record as the event producer reads it: the change, and the new image in full (the view). */
export interface EventRecord {
  readonly sequenceNumber: string;
  readonly change: ImageChange;
  readonly state: MessageStateRecord | null;
  /** The state record's TTL before the write (when its message ended), for its attachments' tag. */
  readonly previousExpiresAt?: number | undefined;
}

/**
 * From the Lambda event source's record. Only message state records are read (the stream filter lets
 * only those through; checked again here); an image that is not a state record reads as none.
 */
export function fromLambdaRecord(record: DynamoDBRecord): EventRecord {
  const decoded = decodeLambdaRecord(record, readState);
  if (decoded.sortKey !== ITEM_SORT_KEY.messageState) {
    return {
      sequenceNumber: decoded.sequenceNumber,
      change: { eventName: undefined, before: null, after: null },
      state: null,
    };
  }
  return {
    sequenceNumber: decoded.sequenceNumber,
    change: {
      eventName: decoded.eventName,
      before: statusImage(decoded.oldImage),
      after: statusImage(decoded.newImage),
    },
    state: decoded.newImage,
    previousExpiresAt: decoded.oldImage?.expires_at,
  };
}

function readState(image: SdkAttributeMap | undefined): MessageStateRecord | null {
  if (image === undefined) return null;
  const decoded = unmarshallImage(image);
  if (!decoded.ok) return null;
  const item = decoded.item;
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
        attempts: state.attempts ?? 0,
      };
}
