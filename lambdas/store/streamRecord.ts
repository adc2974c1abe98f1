import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, AttributeValue as LambdaAttributeValue } from 'aws-lambda';
import { KEY } from './tableLayout.js';

/**
 * The table's stream, decoded once for its two readers, the relay and the event producer: a record
 * as either reader sees it, whatever delivered it — the Lambda event source (images as JSON, binary
 * as base64) or `GetRecords` during the relay's redrive (the SDK's shapes) — and the order in which a
 * batch's failed records are reported back.
 */

/** An item image as the SDK's `unmarshall` takes it. */
export type SdkAttributeMap = Record<string, SdkAttributeValue>;

/** One stream record, its images read by the reader's own {@link ImageReader}. */
export interface StreamRecord<Image> {
  /** `dynamodb.SequenceNumber`: the `itemIdentifier` of a batch item failure. */
  readonly sequenceNumber: string;
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE' | undefined;
  /** `Keys.sk.S`: each reader's stream filter lets only its item kinds through, checked again in code. */
  readonly sortKey: string | undefined;
  readonly oldImage: Image;
  readonly newImage: Image;
}

/** What a reader makes of an image (`undefined`: the record has none); it never throws. */
export type ImageReader<Image> = (image: SdkAttributeMap | undefined) => Image;

/** From the Lambda event source's record (images as JSON, binary values base64 strings). */
export function fromLambdaRecord<Image>(
  record: DynamoDBRecord,
  read: ImageReader<Image>,
): StreamRecord<Image> {
  const stream = record.dynamodb;
  const accepted = replacesAnother(record.eventName, stream?.OldImage, stream?.NewImage);
  return {
    sequenceNumber: stream?.SequenceNumber ?? '',
    eventName: accepted ? 'INSERT' : record.eventName,
    sortKey: stream?.Keys?.[KEY.sort]?.S,
    oldImage: read(stream?.OldImage && !accepted ? sdkImageOf(stream.OldImage) : undefined),
    newImage: read(stream?.NewImage ? sdkImageOf(stream.NewImage) : undefined),
  };
}

/** The fields of a `GetRecords` record that the readers use (the DynamoDB Streams SDK's shape). */
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

/** From a record read with the DynamoDB Streams API (`GetRecords`), as the relay's redrive does. */
export function fromSdkRecord<Image>(record: SdkStreamRecord, read: ImageReader<Image>): StreamRecord<Image> {
  const stream = record.dynamodb;
  const accepted = replacesAnother(record.eventName, stream?.OldImage, stream?.NewImage);
  return {
    sequenceNumber: stream?.SequenceNumber ?? '',
    eventName: accepted ? 'INSERT' : record.eventName,
    sortKey: stream?.Keys?.[KEY.sort]?.S,
    oldImage: read(accepted ? undefined : stream?.OldImage),
    newImage: read(stream?.NewImage),
  };
}

/**
 * A MODIFY whose images were created at different times: a new message's put replaced a record past
 * its retention under the same key (store/outboxRecords.ts `newMessageCondition`, decision 0205).
 * Both readers see it as what it is, the new message's INSERT — its acceptance, dispatched like any
 * other — and never the old message's image: no status of the old one is "previous" to the new.
 */
function replacesAnother(
  eventName: StreamRecord<unknown>['eventName'],
  oldImage: { readonly created_at?: { readonly S?: string | undefined } | undefined } | undefined,
  newImage: { readonly created_at?: { readonly S?: string | undefined } | undefined } | undefined,
): boolean {
  const before = oldImage?.created_at?.S;
  return eventName === 'MODIFY' && before !== undefined && before !== newImage?.created_at?.S;
}

/**
 * An image as a plain object, or why not. With `attributes`, only those are decoded: the rest of the
 * image, whatever a writer put there, cannot trip the reader.
 */
export function unmarshallImage(
  image: SdkAttributeMap,
  attributes?: readonly string[],
):
  | { readonly ok: true; readonly item: Record<string, unknown> }
  | { readonly ok: false; readonly reason: string } {
  let wanted = image;
  if (attributes !== undefined) {
    wanted = {};
    for (const name of attributes) {
      const value = image[name];
      if (value !== undefined) wanted[name] = value;
    }
  }
  try {
    return { ok: true, item: unmarshall(wanted) };
  } catch (error) {
    return { ok: false, reason: `image does not unmarshall: ${(error as Error).message}` };
  }
}

/**
 * A batch's failed records in stream order (ReportBatchItemFailures): the event source checkpoints
 * before the first of them and delivers it and every record after it again, whatever else succeeded.
 */
export function inStreamOrder(
  records: readonly { readonly sequenceNumber: string }[],
  failed: Iterable<string>,
): string[] {
  const order = new Map(records.map((record, index) => [record.sequenceNumber, index]));
  return [...failed].sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
}

/** The event source's image in the SDK's form: binary arrives as base64 strings, `unmarshall` wants bytes. */
function sdkImageOf(map: Record<string, LambdaAttributeValue>): SdkAttributeMap {
  const out: SdkAttributeMap = {};
  for (const [name, value] of Object.entries(map)) out[name] = sdkValueOf(value);
  return out;
}

function sdkValueOf(value: LambdaAttributeValue): SdkAttributeValue {
  if (value.B !== undefined) return { B: Buffer.from(value.B, 'base64') };
  if (value.BS !== undefined) return { BS: value.BS.map((b) => Buffer.from(b, 'base64')) };
  if (value.L !== undefined) return { L: value.L.map(sdkValueOf) };
  if (value.M !== undefined) return { M: sdkImageOf(value.M) };
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  if (value.NULL !== undefined) return { NULL: value.NULL };
  if (value.SS !== undefined) return { SS: value.SS };
  if (value.NS !== undefined) return { NS: value.NS };
  return { NULL: true };
}
