import { describe, expect, it } from 'vitest';
import { compareSequenceNumbers, parseStreamFailure } from '../../cli/streamFailures/streamFailure.js';
import { relayFailureMessage } from './streamTail.js';

describe('a relay failure message', () => {
  it('is read as the stream, shard and sequence range of the batch the event source gave up on', () => {
    const body = relayFailureMessage({
      streamArn: 'arn:aws:dynamodb:us-east-1:123456789012:table/outbox/stream/2026-11-29T00:00:00.000',
      shardId: 'shardId-00000001573689847184-864758bb',
      start: '800000000003126276362',
      end: '800000000003126276370',
      batchSize: 9,
    });
    expect(parseStreamFailure(body)).toEqual({
      ok: true,
      info: {
        streamArn: 'arn:aws:dynamodb:us-east-1:123456789012:table/outbox/stream/2026-11-29T00:00:00.000',
        shardId: 'shardId-00000001573689847184-864758bb',
        startSequenceNumber: '800000000003126276362',
        endSequenceNumber: '800000000003126276370',
        batchSize: 9,
        condition: 'RetryAttemptsExhausted',
      },
    });
  });

  it('is refused, with a reason, when it is not one', () => {
    expect(parseStreamFailure('nope')).toEqual({ ok: false, reason: 'body is not JSON' });
    expect(parseStreamFailure('{"Records":[]}')).toEqual({ ok: false, reason: 'no DDBStreamBatchInfo' });
    expect(
      parseStreamFailure(
        '{"DDBStreamBatchInfo":{"streamArn":"s","shardId":"x","startSequenceNumber":"1e3","endSequenceNumber":"2"}}',
      ),
    ).toEqual({ ok: false, reason: 'start or end sequence number missing or not numeric' });
  });
});

describe('sequence numbers', () => {
  it('compare as whole numbers beyond 2^53, whatever their leading zeros', () => {
    expect(compareSequenceNumbers('800000000003126276363', '800000000003126276362')).toBe(1);
    expect(compareSequenceNumbers('000000000000000000009', '10')).toBe(-1);
    expect(compareSequenceNumbers('0042', '42')).toBe(0);
  });
});
