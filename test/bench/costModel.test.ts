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
