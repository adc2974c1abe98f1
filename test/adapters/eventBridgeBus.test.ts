/**
 * The bus from a consumer's side (DESIGN §11, §14; decision 0252): a team writes EventBridge rules
 * against Postdate's bus — one per status, one per `tags.kind`, one that leaves test mail out — and a
 * Lambda that keeps a read model. The event producer is wired as Lambda wires it (wireEvents) over
 * stream records in the event source's shape; its bus is a stand-in that answers PutEvents as
 * EventBridge does (at most 10 entries, the request's entries under 256 KB or a ValidationException,
 * a refused entry an `ErrorCode` and `FailedEntryCount`) and records every entry it took. Rules are
 * judged by EventBridge's pattern semantics for the subset users write (`matches` below).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MessageStatus } from '../../lambdas/core/messageStatus.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { wireEvents } from '../../lambdas/events/handler.js';
import { emulatorEnv } from '../support/awsLocal.js';
import { webhookHarness } from '../webhooks/webhookHarness.js';

/** PutEvents' limit on the entries of one request (EventBridge quotas: "less than 256 KB"). */
const PUT_EVENTS_MAX_BYTES = 256 * 1024;

interface Entry {
  readonly EventBusName?: string;
  readonly Source?: string;
  readonly DetailType?: string;
  readonly Detail?: string;
  readonly Time?: number | string;
  readonly Resources?: string[];
}

/** An entry's size as EventBridge counts it ("Calculating PutEvents event entry size"). */
function entrySize(entry: Entry): number {
  let size = entry.Time === undefined ? 0 : 14;
  for (const text of [entry.Source, entry.DetailType, entry.Detail, ...(entry.Resources ?? [])]) {
    if (text !== undefined) size += Buffer.byteLength(text, 'utf8');
  }
  return size;
}

/** The event a rule sees: EventBridge's envelope around the entry's detail. */
function envelope(entry: Entry): Record<string, unknown> {
  return {
    version: '0',
    id: 'eb-id',
    'detail-type': entry.DetailType,
    source: entry.Source,
    account: '123456789012',
    time: entry.Time,
    region: 'eu-west-1',
    resources: entry.Resources ?? [],
    detail: JSON.parse(entry.Detail ?? '{}'),
  };
}

/**
 * EventBridge's matching for what users write: a leaf is a list of allowed values (exact, numbers by
 * value) or of `{prefix}`, `{"anything-but"}`, `{exists}`; an array in the event matches if any of its
 * elements does; an object in the pattern needs an object there and matches field by field.
 */
function matches(pattern: Record<string, unknown>, event: unknown): boolean {
  if (event === null || typeof event !== 'object' || Array.isArray(event)) return false;
  return Object.entries(pattern).every(([key, rule]) => {
    const value = (event as Record<string, unknown>)[key];
    if (Array.isArray(rule)) return rule.some((allowed) => leafMatches(allowed, value));
    return value !== undefined && matches(rule as Record<string, unknown>, value);
  });
}

function leafMatches(allowed: unknown, value: unknown): boolean {
  if (allowed !== null && typeof allowed === 'object') {
    const [[kind, operand]] = Object.entries(allowed) as [[string, unknown]];
    if (kind === 'exists')
      return (value !== undefined && (value === null || typeof value !== 'object')) === operand;
    if (value === undefined) return false;
    const values = Array.isArray(value) ? value : [value];
    if (kind === 'prefix')
      return values.some((one) => typeof one === 'string' && one.startsWith(String(operand)));
    if (kind === 'anything-but') {
      const refused = Array.isArray(operand) ? operand : [operand];
      return values.every((one) => !refused.some((no) => no === one));
    }
    throw new Error(`no matcher for ${kind}`);
  }
  const values = Array.isArray(value) ? value : [value];
  return values.some((one) => one === allowed);
}

/** EventBridge's PutEvents, recording each entry it took; `refuseOnce` gives an entry an ErrorCode once. */
async function startBus(options: { refuseOnce?: (detail: { id: string; type: string }) => boolean } = {}) {
  const taken: Entry[] = [];
  const requests: { entries: number; bytes: number; refused: number }[] = [];
  const refusedIds = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entries = (JSON.parse(Buffer.concat(chunks).toString()) as { Entries: Entry[] }).Entries;
      const bytes = entries.reduce((sum, entry) => sum + entrySize(entry), 0);
      res.setHeader('content-type', 'application/x-amz-json-1.1');
      if (entries.length > 10 || bytes >= PUT_EVENTS_MAX_BYTES) {
        res.statusCode = 400;
        res.setHeader('x-amzn-errortype', 'ValidationException');
        res.end(
          JSON.stringify({
            __type: 'ValidationException',
            message: 'Total size of the entries in the request is over the limit.',
          }),
        );
        requests.push({ entries: entries.length, bytes, refused: entries.length });
        return;
      }
      const answers = entries.map((entry) => {
        const detail = JSON.parse(entry.Detail ?? '{}') as { id: string; type: string };
        if (options.refuseOnce?.(detail) && !refusedIds.has(detail.id)) {
          refusedIds.add(detail.id);
          return { ErrorCode: 'InternalFailure', ErrorMessage: 'Internal service error.' };
        }
        taken.push(entry);
        return { EventId: `eb-${taken.length}` };
      });
      const refused = answers.filter((answer) => 'ErrorCode' in answer).length;
      requests.push({ entries: entries.length, bytes, refused });
      res.end(JSON.stringify({ FailedEntryCount: refused, Entries: answers }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    taken,
    requests,
    events: () => taken.map(envelope),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let sequence = 0;
const LAST_ERROR = {
  class: 'transient',
  code: '451',
  enhanced_code: '4.3.0',
  message: `451 4.3.0 ${'try again later '.repeat(12)}`,
};
function state(
  tenant: string,
  id: string,
  status: MessageStatus,
  at: string,
  more: { attempts?: number; rev?: number; kind?: string; largest?: boolean } = {},
) {
  const largest = more.largest === true;
  return {
    pk: `MSG#${id}`,
    sk: 'STATE',
    id,
    tenant,
    status,
    rev: more.rev ?? 1,
    send_at: '2026-12-01T09:00:00.000Z',
    not_after: null,
    created_at: '2026-12-01T08:00:00.000Z',
    updated_at: at,
    attempts: more.attempts ?? 0,
    last_error: (more.attempts ?? 0) > 0 && status !== 'sent' ? LAST_ERROR : null,
    history: [],
    group: largest ? { key: 'g'.repeat(200), version: 1 } : null,
    on_ambiguous: 'retry',
    tags: { kind: more.kind ?? 'receipt' },
    // 2 KiB of labels, the limit, most of it three-byte characters (0243's largest event).
    metadata: largest ? { note: '日'.repeat(330), more: '本'.repeat(320) } : {},
    ...(largest
      ? {
          attachments: Array.from({ length: 10 }, (_, index) => ({
            filename: `${'請求書'.repeat(83)}${index}.pdf`,
            content_type: 'application/pdf',
            size: 10 * 1024 * 1024,
            sha256: 'a'.repeat(64),
            key: `acme/att_${index}`,
          })),
        }
      : {}),
    rcpt_total: 50,
    lst_pk: 'x',
    lst_sk: 'y',
    tnt_pk: 'x',
    tnt_sk: 'y',
  };
}
type State = ReturnType<typeof state>;

function record(eventName: 'INSERT' | 'MODIFY', before: State | null, after: State): DynamoDBRecord {
  sequence++;
  return {
    eventName,
    dynamodb: {
      SequenceNumber: String(sequence).padStart(12, '0'),
      Keys: { pk: { S: after.pk }, sk: { S: 'STATE' } },
      ...(before ? { OldImage: marshall(before, { removeUndefinedValues: true }) as never } : {}),
      NewImage: marshall(after, { removeUndefinedValues: true }) as never,
    },
  };
}

/** A message's life as its record goes: the images in order, and the stream records between them. */
function life(
  tenant: string,
  id: string,
  steps: [MessageStatus, { attempts?: number; rev?: number }?][],
  kind = 'receipt',
) {
  const images = steps.map(([status, more], index) =>
    state(tenant, id, status, new Date(Date.parse('2026-12-01T08:00:00.000Z') + index * 1000).toISOString(), {
      ...more,
      kind,
    }),
  );
  return images.map((image, index) =>
    record(index === 0 ? 'INSERT' : 'MODIFY', images[index - 1] ?? null, image),
  );
}

describe('the bus as a consumer reads it', () => {
  let bus: Awaited<ReturnType<typeof startBus>>;
  let harness: Awaited<ReturnType<typeof webhookHarness>>;
  const silent = { info: () => {}, warn: () => {}, error: () => {} };
  const counted: { metric: string; value: number }[] = [];
  const produceWith = (endpoint: string) =>
    wireEvents(
      {
        ...emulatorEnv(),
        AWS_ENDPOINT_URL_EVENTBRIDGE: endpoint,
        POSTDATE_LOCAL: 'true',
        POSTDATE_TABLE_NAME: harness.tableName,
        POSTDATE_WEBHOOK_QUEUE_URL: harness.queueUrl,
        POSTDATE_EVENT_BUS_NAME: 'postdate-bus',
      },
      silent,
      (metric, value) => counted.push({ metric, value }),
    );
  /** Hands the batch over as the event source does: again from the lowest failed record until none fails. */
  async function deliverBatch(produce: ReturnType<typeof produceWith>, batch: DynamoDBRecord[]) {
    let rest = batch;
    for (let round = 0; round < 5 && rest.length > 0; round++) {
      const { batchItemFailures } = await produce({ Records: structuredClone(rest) });
      const first = batchItemFailures[0]?.itemIdentifier;
      rest =
        first === undefined
          ? []
          : rest.slice(rest.findIndex((one) => one.dynamodb?.SequenceNumber === first));
    }
    expect(rest).toEqual([]);
  }

  beforeAll(async () => {
    harness = await webhookHarness();
    bus = await startBus();
  });
  afterAll(async () => {
    await bus?.close();
  });

  // Every status the bus carries, for two kinds and both sides of one tenant.
  const invoice = life(
    'acme',
    'm_invoice',
    [
      ['scheduled'],
      ['sending'],
      ['retrying', { attempts: 1 }],
      ['sending', { attempts: 1 }],
      ['sent', { attempts: 2 }],
    ],
    'invoice',
  );
  const receipt = life('acme', 'm_receipt', [['scheduled'], ['cancelled']]);
  const dead = life(
    'acme',
    'm_dead',
    [
      ['scheduled'],
      ['sending'],
      ['retrying', { attempts: 1 }],
      ['sending', { attempts: 1 }],
      ['dead', { attempts: 2 }],
    ],
    'invoice',
  );
  // A claim given back: `retrying` without an attempt counted, no event (decision 0223).
  const givenBack = life('acme', 'm_given_back', [
    ['scheduled'],
    ['sending'],
    ['retrying'],
    ['sending'],
    ['sent', { attempts: 1 }],
  ]);
  const testSide = life(
    testSideOf('acme'),
    'm_test',
    [['scheduled'], ['sending'], ['sent', { attempts: 1 }]],
    'invoice',
  );
  const all = [...invoice, ...receipt, ...dead, ...givenBack, ...testSide];

  it('puts one entry per status change: source postdate, detail-type the type, detail the event; no sending, no give-back', async () => {
    await deliverBatch(produceWith(bus.endpoint), all);
    const events = bus.events();
    for (const event of events) {
      expect(event.source).toBe('postdate');
      const detail = event.detail as {
        id: string;
        type: string;
        created_at: string;
        tenant: string;
        data: Record<string, unknown>;
      };
      expect(event['detail-type']).toBe(detail.type);
      expect(Object.keys(detail).sort()).toEqual(['created_at', 'data', 'id', 'tenant', 'type']);
      expect(detail.id).toMatch(/^evt_[0-9a-f]{32}$/);
      expect(detail.tenant).toBe('acme');
      expect(detail.data).not.toHaveProperty('history');
      expect(detail.data).toHaveProperty('previous_status');
      // The SDK sends Time as epoch seconds; EventBridge keeps seconds.
      expect(Math.floor(Number(event.time))).toBe(Math.floor(Date.parse(detail.created_at) / 1000));
    }
    const typesOf = (id: string) =>
      events
        .map((event) => event.detail as { type: string; data: { id: string } })
        .filter((detail) => detail.data.id === id)
        .map((detail) => detail.type);
    expect(typesOf('m_invoice')).toEqual(['message.scheduled', 'message.retrying', 'message.sent']);
    expect(typesOf('m_receipt')).toEqual(['message.scheduled', 'message.cancelled']);
    expect(typesOf('m_dead')).toEqual(['message.scheduled', 'message.retrying', 'message.dead']);
    expect(typesOf('m_given_back')).toEqual(['message.scheduled', 'message.sent']);
    expect(typesOf('m_test')).toEqual(['message.scheduled', 'message.sent']);
    expect(new Set(events.map((event) => (event.detail as { id: string }).id)).size).toBe(events.length);
  });

  it('routes by the rules a user writes from the docs: per status, per tags.kind, live mail only', () => {
    const events = bus.events();
    const matched = (pattern: Record<string, unknown>) =>
      events
        .filter((event) => matches(pattern, event))
        .map((event) => {
          const detail = event.detail as { type: string; data: { id: string } };
          return `${detail.data.id} ${detail.type}`;
        })
        .sort();
    expect(matched({ source: ['postdate'], 'detail-type': ['message.sent'] })).toEqual([
      'm_given_back message.sent',
      'm_invoice message.sent',
      'm_test message.sent',
    ]);
    expect(
      matched({ source: ['postdate'], 'detail-type': ['message.dead', 'message.failed', 'message.unknown'] }),
    ).toEqual(['m_dead message.dead']);
    expect(matched({ source: ['postdate'], detail: { data: { tags: { kind: ['invoice'] } } } })).toEqual([
      'm_dead message.dead',
      'm_dead message.retrying',
      'm_dead message.scheduled',
      'm_invoice message.retrying',
      'm_invoice message.scheduled',
      'm_invoice message.sent',
      'm_test message.scheduled',
      'm_test message.sent',
    ]);
    // docs/api-resources.md: "a rule for live mail only matches `detail.data.test: [false]`".
    const live = {
      source: ['postdate'],
      'detail-type': ['message.sent'],
      detail: { data: { test: [false] } },
    };
    expect(matched(live)).toEqual(['m_given_back message.sent', 'm_invoice message.sent']);
    expect(matched({ source: ['postdate'], detail: { data: { test: [true] } } })).toEqual([
      'm_test message.scheduled',
      'm_test message.sent',
    ]);
    // A prefix on the type and a tenant rule, as rules for several Postdates on one bus are written.
    expect(matched({ 'detail-type': [{ prefix: 'message.' }], detail: { tenant: ['other'] } })).toEqual([]);
    expect(matched({ source: ['postdate'], detail: { data: { previous_status: ['sending'] } } })).toEqual([
      'm_dead message.dead',
      'm_dead message.retrying',
      'm_given_back message.sent',
      'm_invoice message.retrying',
      'm_invoice message.sent',
      'm_test message.sent',
    ]);
  });

  it('lets a read model rebuild each message by (created_at, id): the last event is the record’s status', () => {
    const model = new Map<string, { at: string; id: string; status: string }>();
    const details = bus
      .events()
      .map(
        (event) => event.detail as { id: string; created_at: string; data: { id: string; status: string } },
      )
      .sort(() => Math.random() - 0.5);
    for (const detail of details) {
      const held = model.get(detail.data.id);
      const newer =
        held === undefined ||
        detail.created_at > held.at ||
        (detail.created_at === held.at && detail.id > held.id);
      if (newer)
        model.set(detail.data.id, { at: detail.created_at, id: detail.id, status: detail.data.status });
    }
    expect(Object.fromEntries([...model].map(([id, { status }]) => [id, status]))).toEqual({
      m_invoice: 'sent',
      m_receipt: 'cancelled',
      m_dead: 'dead',
      m_given_back: 'sent',
      m_test: 'sent',
    });
  });

  it('retries an entry EventBridge refused (FailedEntryCount) until it is on the bus: none lost, each id once beyond the replay', async () => {
    counted.length = 0;
    const refusing = await startBus({ refuseOnce: (detail) => detail.type === 'message.retrying' });
    try {
      await deliverBatch(produceWith(refusing.endpoint), all);
      expect(refusing.requests.some((request) => request.refused > 0)).toBe(true);
      const ids = refusing.events().map((event) => (event.detail as { id: string }).id);
      const expected = bus.events().map((event) => (event.detail as { id: string }).id);
      expect([...new Set(ids)].sort()).toEqual([...expected].sort());
      // An operator sees the refusals as a metric, not only as a WARN line: each refused entry counted.
      const refusedEntries = refusing.requests.reduce((sum, request) => sum + request.refused, 0);
      const total = (metric: string) =>
        counted.filter((one) => one.metric === metric).reduce((sum, one) => sum + one.value, 0);
      expect(refusedEntries).toBe(2);
      expect(total('EventsNotPublished')).toBe(refusedEntries);
    } finally {
      await refusing.close();
    }
  });

  it('keeps the largest event a message can make, ten to a request, under PutEvents’ 256 KB', async () => {
    const sized = await startBus();
    try {
      const largest = Array.from({ length: 25 }, (_, index) => {
        const image = state('acme', `m_large_${index}`, 'scheduled', '2026-12-01T08:00:00.000Z', {
          largest: true,
        });
        return record('INSERT', null, image);
      });
      await deliverBatch(produceWith(sized.endpoint), largest);
      expect(sized.taken).toHaveLength(25);
      const sizes = sized.taken.map(entrySize);
      expect(Math.min(...sizes)).toBeGreaterThan(11_000);
      expect(sized.requests.every((request) => request.refused === 0 && request.entries <= 10)).toBe(true);
      expect(Math.max(...sized.requests.map((request) => request.bytes))).toBeLessThan(PUT_EVENTS_MAX_BYTES);
    } finally {
      await sized.close();
    }
  });
});
