import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import type { AttributeValue as LambdaAttributeValue } from 'aws-lambda';

/** An item image as the SDK's `unmarshall` takes it. */
export type SdkAttributeMap = Record<string, SdkAttributeValue>;

/**
 * A DynamoDB stream image as Lambda's event source delivers it, in the SDK's form: the event source
 * sends binary as base64 strings, the SDK's `unmarshall` expects bytes. Read by the relay and the
 * event producer, the two readers of the table's stream.
 */
export function sdkImageOf(map: Record<string, LambdaAttributeValue>): SdkAttributeMap {
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
