import { describe, expect, it } from 'vitest';
import type { CountedRequest } from '../../bench/awsRequestCounter.js';
import { billOf, type CostLine } from '../../bench/cost.js';

/** One counted request with neutral defaults. */
function request(
  fields: Partial<CountedRequest> & Pick<CountedRequest, 'origin' | 'service' | 'command'>,
): CountedRequest {
  return {
    caller: 'test',
    ok: true,
    writeUnits: 0,
    readUnits: 0,
    inputBytes: 100,
    items: 1,
    relayRecords: 0,
    ms: 1,
    ...fields,
  };
}

/** What ten immediate messages, each travelling alone, make the local stack count. */
function tenAlone(): CountedRequest[] {
  return Array.from({ length: 10 }, () => [
    request({ origin: 'api', service: 'DynamoDB', command: 'PutItem', writeUnits: 3 }),
    request({ origin: 'api', service: 'DynamoDB', command: 'PutItem', writeUnits: 3 }),
    request({
      origin: 'platform',
      service: 'DynamoDBStreams',
      command: 'GetRecords',
      items: 2,
      relayRecords: 1,
    }),
    request({ origin: 'relay', service: 'SQS', command: 'SendMessageBatch', items: 1 }),
    request({ origin: 'platform', service: 'SQS', command: 'ReceiveMessage', items: 1 }),
    request({ origin: 'sender', service: 'DynamoDB', command: 'UpdateItem', writeUnits: 4 }),
    request({ origin: 'platform', service: 'SQS', command: 'DeleteMessageBatch', items: 1 }),
  ]).flat();
}

const line = (bill: CostLine[], start: string) => bill.find((l) => l.item.startsWith(start));
const total = (bill: CostLine[]) => bill.reduce((sum, l) => sum + l.usdPerMillion, 0);

describe('the cost model: a lone message and a busy stream', () => {
  it('counts one invocation of each function per message when every message travels alone', () => {
    const bill = billOf(tenAlone(), 0, 10);
    // api, authorizer, relay (one record through its filter), sender.
    expect(line(bill, 'Lambda invocations')?.quantity).toBe(4);
    expect(line(bill, 'sender event source: ReceiveMessage')?.quantity).toBe(1);
    expect(line(bill, 'relay SQS.SendMessageBatch')?.quantity).toBe(1);
  });

  it('fills the batches when busy, and leaves DynamoDB units exactly as counted', () => {
    const alone = billOf(tenAlone(), 0, 10);
    const busy = billOf(tenAlone(), 0, 10, 'busy');
    // api once; the authorizer cached; the relay 1/100 and the sender 1/10 of an invocation.
    expect(line(busy, 'Lambda invocations')?.quantity).toBeCloseTo(1 + 0.01 + 0.1, 10);
    expect(line(busy, 'sender event source: ReceiveMessage')?.quantity).toBeCloseTo(0.1, 10);
    expect(line(busy, 'relay SQS.SendMessageBatch')?.quantity).toBeCloseTo(0.1, 10);
    for (const item of ['api DynamoDB.PutItem', 'sender DynamoDB.UpdateItem']) {
      expect(line(busy, item)).toEqual(line(alone, item));
    }
    expect(total(busy)).toBeLessThan(total(alone));
  });
});

describe('the cost model: attachments (DESIGN §13, issue 30)', () => {
  /** Ten messages each with one uploaded attachment: what the api, the sender and the producer ask of S3. */
  function tenWithUpload(): CountedRequest[] {
    return [
      ...tenAlone(),
      ...Array.from({ length: 10 }, () => [
        request({ origin: 'api', service: 'S3', command: 'PutObject' }),
        request({ origin: 'api', service: 'S3', command: 'GetObject' }),
        request({ origin: 'api', service: 'S3', command: 'HeadObject' }),
        request({ origin: 'api', service: 'S3', command: 'CopyObject' }),
        request({ origin: 'sender', service: 'S3', command: 'GetObject' }),
        request({ origin: 'function', service: 'S3', command: 'PutObjectTagging' }),
        // Pre-signing the upload URL runs the middleware without a request: not a billed call.
        request({ origin: 'other', service: 'S3', command: 'PutObject' }),
      ]).flat(),
    ];
  }
  const MB5 = 5 * 1024 * 1024;

  it('prices S3 PUT, COPY and tagging as PUT-class requests, GET and HEAD as GET-class, from whichever function made them', () => {
    const bill = billOf(tenWithUpload(), 0, 10, 'alone', {
      bytes: MB5,
      uploaded: true,
      retentionDays: 30,
    });
    expect(line(bill, 'api S3.PutObject')?.usdPerMillion).toBeCloseTo(5, 6);
    expect(line(bill, 'api S3.CopyObject')?.usdPerMillion).toBeCloseTo(5, 6);
    expect(line(bill, 'api S3.HeadObject')?.usdPerMillion).toBeCloseTo(0.4, 6);
    expect(line(bill, 'sender S3.GetObject')?.usdPerMillion).toBeCloseTo(0.4, 6);
    expect(line(bill, 'function S3.PutObjectTagging')?.usdPerMillion).toBeCloseTo(5, 6);
    // The client's own PUT to the pre-signed URL is billed to the bucket's owner too.
    expect(line(bill, 'S3 PUT by the client')?.usdPerMillion).toBeCloseTo(5, 6);
    expect(line(bill, 'other S3')).toBeUndefined();
  });

  it('stores the bytes for the retention (and an upload a day more), at S3 Standard GB-month', () => {
    const bill = billOf(tenWithUpload(), 0, 10, 'alone', { bytes: MB5, uploaded: true, retentionDays: 30 });
    const gbMonths = (MB5 / 1024 ** 3) * (31 / 30);
    expect(line(bill, 'S3 storage')?.usdPerMillion).toBeCloseTo(gbMonths * 0.023 * 1e6, 3);
    const inline = billOf(tenAlone(), 0, 10, 'alone', {
      bytes: 100 * 1024,
      uploaded: false,
      retentionDays: 30,
    });
    expect(line(inline, 'S3 PUT by the client')).toBeUndefined();
    expect(line(inline, 'S3 storage')?.usdPerMillion).toBeCloseTo(
      ((100 * 1024) / 1024 ** 3) * 0.023 * 1e6,
      3,
    );
  });

  it('adds the time to move the bytes to the modelled Lambda compute', () => {
    const without = billOf(tenWithUpload(), 0, 10);
    const withBytes = billOf(tenWithUpload(), 0, 10, 'alone', {
      bytes: MB5,
      uploaded: true,
      retentionDays: 30,
    });
    expect(line(withBytes, 'Lambda compute')?.usdPerMillion).toBeGreaterThan(
      line(without, 'Lambda compute')?.usdPerMillion ?? 0,
    );
  });
});
