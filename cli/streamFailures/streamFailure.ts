/**
 * The message a DynamoDB Streams event source mapping sends to its on-failure destination when it
 * gives up on a batch: where the batch was, not the records themselves. See the Lambda guide,
 * "Retaining discarded records of a stream event source" (`DDBStreamBatchInfo`). The relay's and the
 * event producer's failure queues both hold these.
 */
export interface StreamFailureInfo {
  readonly streamArn: string;
  readonly shardId: string;
  readonly startSequenceNumber: string;
  readonly endSequenceNumber: string;
  readonly batchSize: number | null;
  readonly condition: string | null;
}

export type ParsedStreamFailure =
  | { readonly ok: true; readonly info: StreamFailureInfo }
  | { readonly ok: false; readonly reason: string };

/** Parses an on-failure destination message; never throws. */
export function parseStreamFailure(body: string): ParsedStreamFailure {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return { ok: false, reason: 'body is not JSON' };
  }
  if (!isObject(value)) return { ok: false, reason: 'body is not a JSON object' };
  const batch = value.DDBStreamBatchInfo;
  if (!isObject(batch)) return { ok: false, reason: 'no DDBStreamBatchInfo' };
  const { streamArn, shardId, startSequenceNumber, endSequenceNumber, batchSize } = batch;
  if (typeof streamArn !== 'string' || streamArn === '') return { ok: false, reason: 'no streamArn' };
  if (typeof shardId !== 'string' || shardId === '') return { ok: false, reason: 'no shardId' };
  if (!isSequenceNumber(startSequenceNumber) || !isSequenceNumber(endSequenceNumber)) {
    return { ok: false, reason: 'start or end sequence number missing or not numeric' };
  }
  const context = isObject(value.requestContext) ? value.requestContext : {};
  return {
    ok: true,
    info: {
      streamArn,
      shardId,
      startSequenceNumber,
      endSequenceNumber,
      batchSize: typeof batchSize === 'number' ? batchSize : null,
      condition: typeof context.condition === 'string' ? context.condition : null,
    },
  };
}

/** Sequence numbers are decimal strings of up to 40 digits: compare them as BigInts, never as numbers. */
export function compareSequenceNumbers(a: string, b: string): number {
  const difference = BigInt(a) - BigInt(b);
  return difference < 0n ? -1 : difference > 0n ? 1 : 0;
}

function isSequenceNumber(value: unknown): value is string {
  return typeof value === 'string' && /^\d{1,40}$/.test(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
