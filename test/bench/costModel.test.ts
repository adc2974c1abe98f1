import { describe, expect, it } from 'vitest';
import type { CountedRequest, SeenStreamRecord } from '../../bench/awsRequestCounter.js';
import { billOf, type CostLine, captureLogBytes, UnbilledRequestError } from '../../bench/cost.js';
import {
  DURATION_MODEL_MS,
  FUNCTION_MEMORY_MB,
  PLATFORM_LOG_BYTES_PER_INVOCATION,
} from '../../bench/prices.js';
import { SENDER_LANES } from '../../lambdas/sender/createSenderHandler.js';

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
    streamRecords: [],
    queue: '',
    eventEntryBytes: [],
    ms: 1,
    ...fields,
  };
}

/** One request on the send queue carrying one copy. */
function sendQueueRequest(origin: CountedRequest['origin'], command: string): CountedRequest {
  return request({ origin, service: 'SQS', command, items: 1, queue: 'postdate-send' });
}

/** The stream records of message `i`: its body (no reader's) and its state (the relay's and the producer's). */
function recordsOf(i: number, eventEntryBytes = 900): SeenStreamRecord[] {
  return [
    { sequenceNumber: `${i}-body`, relay: false, producer: false },
    {
      sequenceNumber: `${i}-state`,
      relay: true,
      producer: true,
      eventEntryBytes,
      eventType: 'message.scheduled',
    },
  ];
}

/** What ten immediate messages, each travelling alone, make the local stack count. */
function tenAlone(eventEntryBytes = 900): CountedRequest[] {
  return Array.from({ length: 10 }, (_, i) => [
    request({ origin: 'api', service: 'DynamoDB', command: 'PutItem', writeUnits: 3 }),
    request({ origin: 'api', service: 'DynamoDB', command: 'PutItem', writeUnits: 3 }),
    // The relay's runner and the event producer's both read the same two records.
    ...[1, 2].map(() =>
      request({
        origin: 'platform',
        service: 'DynamoDBStreams',
        command: 'GetRecords',
        items: 2,
        streamRecords: recordsOf(i, eventEntryBytes),
      }),
    ),
    sendQueueRequest('relay', 'SendMessageBatch'),
    sendQueueRequest('platform', 'ReceiveMessage'),
    request({ origin: 'sender', service: 'DynamoDB', command: 'UpdateItem', writeUnits: 4 }),
    sendQueueRequest('platform', 'DeleteMessageBatch'),
    request({ origin: 'events', service: 'DynamoDB', command: 'Query', readUnits: 0.5 }),
  ]).flat();
}

const line = (bill: CostLine[], start: string) => bill.find((l) => l.item.startsWith(start));
const total = (bill: CostLine[]) => bill.reduce((sum, l) => sum + l.usdPerMillion, 0);

describe('the cost model: a lone message and a busy stream', () => {
  it("bills the bus's events (derived: no bus locally) only for the types the stack puts on it (busEvents, decision 0178)", () => {
    const events = (bill: CostLine[]) => line(bill, 'EventBridge PutEvents')?.quantity;
    expect(events(billOf(tenAlone(), 0, 10))).toBe(1);
    expect(events(billOf(tenAlone(), 0, 10, 'alone', undefined, ['message.scheduled']))).toBe(1);
    for (const busEvents of ['none', ['message.sent']] as const) {
      const bill = billOf(tenAlone(), 0, 10, 'alone', undefined, busEvents);
      expect(events(bill)).toBeUndefined();
      // The event's $1 per million, and the PutEvents the duration model gave each invocation.
      expect(total(billOf(tenAlone(), 0, 10)) - total(bill)).toBeGreaterThan(1);
    }
  });

  it('counts one invocation of each function per message when every message travels alone', () => {
    const bill = billOf(tenAlone(), 0, 10);
    // api, authorizer, relay and event producer (one record through each filter, read by both
    // runners but invoked once), sender.
    expect(line(bill, 'Lambda invocations')?.quantity).toBe(5);
    expect(line(bill, 'sender event source: ReceiveMessage')?.quantity).toBe(1);
    expect(line(bill, 'relay SQS.SendMessageBatch')?.quantity).toBe(1);
  });

  it('fills the batches when busy, and leaves DynamoDB units exactly as counted', () => {
    const alone = billOf(tenAlone(), 0, 10);
    const busy = billOf(tenAlone(), 0, 10, 'busy');
    // api once; the authorizer cached; the relay and the producer 1/100, the sender 1/10 of an invocation.
    expect(line(busy, 'Lambda invocations')?.quantity).toBeCloseTo(1 + 0.01 + 0.01 + 0.1, 10);
    expect(line(busy, 'sender event source: ReceiveMessage')?.quantity).toBeCloseTo(0.1, 10);
    expect(line(busy, 'relay SQS.SendMessageBatch')?.quantity).toBeCloseTo(0.1, 10);
    for (const item of ['api DynamoDB.PutItem', 'sender DynamoDB.UpdateItem']) {
      expect(line(busy, item)).toEqual(line(alone, item));
    }
    expect(total(busy)).toBeLessThan(total(alone));
  });

  it("bills the authorizer's key read once per request alone, and none when busy: API Gateway answers from its cache (decision 0250)", () => {
    // The authorizer caches no allowance (decision 0249): each invocation reads the key, consistently.
    const keyReads = Array.from({ length: 10 }, () =>
      request({ origin: 'authorizer', service: 'DynamoDB', command: 'GetItem', readUnits: 1 }),
    );
    const reads = (bill: CostLine[]) => line(bill, 'authorizer DynamoDB.GetItem')?.quantity;
    expect(reads(billOf([...tenAlone(), ...keyReads], 0, 10))).toBe(1);
    // Busy, the authorizer is not invoked (no invocation billed): nor is the read it would make.
    const busy = billOf([...tenAlone(), ...keyReads], 0, 10, 'busy');
    expect(reads(busy)).toBeUndefined();
    expect(total(busy)).toBeCloseTo(total(billOf(tenAlone(), 0, 10, 'busy')), 10);
  });
});

describe('the cost model: a busy invocation as Lambda bills it (issue 32)', () => {
  /** Ten copies for the sender alone: one claim write and one SMTP send each. */
  function tenCopies(): CountedRequest[] {
    return Array.from({ length: 10 }, () => [
      sendQueueRequest('platform', 'ReceiveMessage'),
      request({ origin: 'sender', service: 'DynamoDB', command: 'UpdateItem', writeUnits: 3 }),
    ]).flat();
  }
  const gbSeconds = (fn: keyof typeof FUNCTION_MEMORY_MB, ms: number) =>
    (FUNCTION_MEMORY_MB[fn] / 1024) * (ms / 1000);

  it("bills a full sender batch's wall time: ceil(batch / lanes) copies' chains, the lanes read from the sender", () => {
    const chain = DURATION_MODEL_MS.perDynamodbCall + DURATION_MODEL_MS.perSmtpSend;
    // The api and (alone: API Gateway's cache off) the authorizer, invoked per enqueue, do nothing else here.
    const api = gbSeconds('api', 10 * DURATION_MODEL_MS.handlerOverhead);
    const authorizer = gbSeconds('authorizer', 10 * DURATION_MODEL_MS.handlerOverhead);
    const alone = gbSeconds('sender', 10 * (DURATION_MODEL_MS.handlerOverhead + chain));
    const busy = gbSeconds(
      'sender',
      DURATION_MODEL_MS.handlerOverhead + Math.ceil(10 / SENDER_LANES) * chain,
    );
    expect(line(billOf(tenCopies(), 0, 10), 'Lambda compute')?.quantity).toBeCloseTo(
      (api + authorizer + alone) / 10,
      10,
    );
    expect(line(billOf(tenCopies(), 0, 10, 'busy'), 'Lambda compute')?.quantity).toBeCloseTo(
      (api + busy) / 10,
      10,
    );
  });

  it("bills the producer's PutEvents, one per invocation when no bus answered locally, beside its webhook copies (decision 0115)", () => {
    const { handlerOverhead, perDynamodbCall, perSqsOrSchedulerCall } = DURATION_MODEL_MS;
    // One message's state record, read by the producer alone, which reads its tenant's endpoints.
    const produced = (copies: CountedRequest[]): CountedRequest[] => [
      request({
        origin: 'platform',
        service: 'DynamoDBStreams',
        command: 'GetRecords',
        items: 1,
        streamRecords: [
          {
            sequenceNumber: '1',
            relay: false,
            producer: true,
            eventEntryBytes: 900,
            eventType: 'message.scheduled',
          },
        ],
      }),
      request({ origin: 'events', service: 'DynamoDB', command: 'Query', readUnits: 0.5 }),
      ...copies,
    ];
    // The api and the authorizer once per enqueue, and the model's one SMTP send per message.
    const frontDoor =
      gbSeconds('api', handlerOverhead) +
      gbSeconds('authorizer', handlerOverhead) +
      gbSeconds('sender', DURATION_MODEL_MS.perSmtpSend);
    // No webhook: the invocation waits for the bus alone.
    expect(line(billOf(produced([]), 0, 1), 'Lambda compute')?.quantity).toBeCloseTo(
      frontDoor + gbSeconds('events', handlerOverhead + perDynamodbCall + perSqsOrSchedulerCall),
      10,
    );
    // With a webhook copy (queued, not yet received): the bus and the copy's SendMessageBatch go out
    // side by side, so the invocation lasts as long.
    const copy = request({
      origin: 'events',
      service: 'SQS',
      command: 'SendMessageBatch',
      items: 1,
      queue: 'postdate-webhooks',
    });
    expect(line(billOf(produced([copy]), 0, 1), 'Lambda compute')?.quantity).toBeCloseTo(
      frontDoor + gbSeconds('events', handlerOverhead + perDynamodbCall + perSqsOrSchedulerCall),
      10,
    );
  });

  it("keeps the api's own copy at one request per enqueue when busy: each enqueue is its own invocation", () => {
    const withCopy = [
      ...tenAlone(),
      ...Array.from({ length: 10 }, () => sendQueueRequest('api', 'SendMessageBatch')),
    ];
    expect(line(billOf(withCopy, 0, 10, 'busy'), 'api SQS.SendMessageBatch')?.quantity).toBe(1);
    expect(line(billOf(withCopy, 0, 10, 'busy'), 'relay SQS.SendMessageBatch')?.quantity).toBeCloseTo(
      0.1,
      10,
    );
  });

  it('bills the lines written once per invocation once per full batch when busy, the lines about a message per message', () => {
    const logs = { perItem: 3000, perInvocation: { sender: 2000 } };
    const ingest = (traffic: 'alone' | 'busy') =>
      line(billOf(tenAlone(), logs, 10, traffic), 'CloudWatch Logs ingest')?.quantity ?? 0;
    const invocations = (traffic: 'alone' | 'busy') =>
      line(billOf(tenAlone(), 0, 10, traffic), 'Lambda invocations')?.quantity ?? 0;
    const platform = (traffic: 'alone' | 'busy') =>
      (invocations(traffic) * PLATFORM_LOG_BYTES_PER_INVOCATION) / 1e3;
    expect(ingest('alone')).toBeCloseTo((3000 + 2000) / 10 / 1e3 + platform('alone'), 10);
    expect(ingest('busy')).toBeCloseTo((3000 + 2000 / 10) / 10 / 1e3 + platform('busy'), 10);
  });

  it("counts an EMF document's frame as its invocation's and its datapoints as the message's; a batch's summary as its invocation's", () => {
    // This file shares its worker's modules and streams with others (vitest's project `pure`).
    const writes = { out: process.stdout.write, err: process.stderr.write };
    const capture = captureLogBytes();
    const emf = JSON.stringify({
      _aws: {
        Timestamp: 1,
        CloudWatchMetrics: [
          {
            Namespace: 'Postdate',
            Dimensions: [['service', 'stack']],
            Metrics: [{ Name: 'Lateness', Unit: 'Milliseconds' }],
          },
        ],
      },
      service: 'postdate',
      stack: 'local',
      Lateness: 812,
    });
    const aboutMessage = JSON.stringify({
      level: 'INFO',
      message: 'sender recorded an outcome',
      service: 'postdate-sender',
      id: 'm1',
    });
    const summary = JSON.stringify({
      level: 'INFO',
      message: 'relay batch done',
      service: 'postdate-relay',
      records: 1,
    });
    try {
      process.stdout.write(`${emf}\n`);
      process.stdout.write(`${aboutMessage}\n${summary}\n`);
    } finally {
      capture.restore();
    }
    expect({ out: process.stdout.write, err: process.stderr.write }).toEqual(writes);
    const taken = capture.take();
    expect(taken.perItem).toBe('812'.length + aboutMessage.length + 1);
    expect(taken.perInvocation).toEqual({ sender: emf.length + 1 - '812'.length, relay: summary.length + 1 });
  });
});

describe('the cost model: everything a message makes is billed (issue 32)', () => {
  it('bills every event put on the bus, each 64 KB chunk of an entry as one, each record once', () => {
    expect(line(billOf(tenAlone(), 0, 10), 'EventBridge PutEvents')).toMatchObject({
      quantity: 1,
      usdPerMillion: 1,
    });
    // An entry of 70 KB is two events.
    expect(line(billOf(tenAlone(70 * 1024), 0, 10), 'EventBridge PutEvents')?.quantity).toBe(2);
    // Busy or alone, the bus bills per event.
    expect(line(billOf(tenAlone(), 0, 10, 'busy'), 'EventBridge PutEvents')?.usdPerMillion).toBe(1);
  });

  it('bills the api access log line as CloudWatch Logs ingestion, once per enqueue', () => {
    const access = line(billOf(tenAlone(), 0, 10), 'API Gateway access log');
    expect(access?.quantity).toBeGreaterThan(0.2);
    expect(access?.unit).toBe('KB');
    expect(access?.usdPerMillion).toBeCloseTo(((access?.quantity ?? 0) * 1e3 * 0.5 * 1e6) / 1e9, 10);
  });

  it('tells the webhook queue from the send queue, and invokes the delivery function per copy', () => {
    const withWebhook = [
      ...tenAlone(),
      ...Array.from({ length: 10 }, () => [
        request({ origin: 'events', service: 'DynamoDB', command: 'PutItem', writeUnits: 2 }),
        request({
          origin: 'events',
          service: 'SQS',
          command: 'SendMessageBatch',
          items: 1,
          queue: 'postdate-webhooks',
        }),
        request({
          origin: 'platform',
          service: 'SQS',
          command: 'ReceiveMessage',
          items: 1,
          queue: 'postdate-webhooks',
        }),
        request({ origin: 'webhooks', service: 'DynamoDB', command: 'UpdateItem', writeUnits: 2 }),
        request({
          origin: 'platform',
          service: 'SQS',
          command: 'DeleteMessageBatch',
          items: 1,
          queue: 'postdate-webhooks',
        }),
      ]).flat(),
    ];
    const bill = billOf(withWebhook, 0, 10);
    expect(line(bill, 'sender event source: ReceiveMessage')?.quantity).toBe(1);
    expect(line(bill, 'webhook event source: ReceiveMessage')?.quantity).toBe(1);
    expect(line(bill, 'webhook event source: DeleteMessageBatch')?.quantity).toBe(1);
    expect(line(bill, 'Lambda invocations')?.quantity).toBe(6);
    expect(line(bill, 'webhooks DynamoDB.UpdateItem')?.quantity).toBe(2);
  });

  it('refuses to price a request the model does not list for its function', () => {
    const unlisted = [
      ...tenAlone(),
      request({ origin: 'sender', service: 'DynamoDB', command: 'Scan', readUnits: 10 }),
    ];
    expect(() => billOf(unlisted, 0, 10)).toThrow(UnbilledRequestError);
    expect(() => billOf(unlisted, 0, 10)).toThrow(/sender DynamoDB\.Scan/);
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
        request({ origin: 'events', service: 'S3', command: 'PutObjectTagging' }),
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
    expect(line(bill, 'events S3.PutObjectTagging')?.usdPerMillion).toBeCloseTo(5, 6);
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
