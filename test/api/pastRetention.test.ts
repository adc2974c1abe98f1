/**
 * A message past its retention is gone from every read (DESIGN §2, §8: POSTDATE_RETENTION_DAYS is
 * the TTL of terminal records; decision 0205). DynamoDB deletes an expired item some time after its
 * TTL, and until then still returns it: every path answers as if the deleter had run already — GET
 * 404 like an id never seen, listings skip it (a page may come short, its cursor goes on), cancel,
 * reschedule and retry 404, the CLI's show, list and export leave it out, and its idempotency key is
 * free again (the API, a batch and the outbox helper write a new message under it: 202), even beside
 * a body item whose own TTL write was lost (decision 0208). Covers
 * store/apiStore.ts, api/routes/enqueue.ts, store/outboxRecords.ts, store/streamRecord.ts and
 * cli/messagesCommands.ts, cli/messagesExport.ts, on DynamoDB Local with the real records.
 */
import { randomBytes } from 'node:crypto';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { messagesList, messagesShow } from '../../cli/messagesCommands.js';
import { messagesExport } from '../../cli/messagesExport.js';
import { memoryOutput } from '../../cli/output.js';
import { toLambdaRecord } from '../../lambdas/adapters/streamRecordFormat.js';
import { messageIdFor } from '../../lambdas/core/ids.js';
import { deriveStatusChange } from '../../lambdas/core/messageEvents.js';
import {
  bodyOrphaned,
  bodyReplaceableCondition,
  expiresAtAfter,
  resumeWindowMs,
  retentionRanOut,
} from '../../lambdas/core/messageLifetime.js';
import { parseEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { fromLambdaRecord as eventRecordOf } from '../../lambdas/events/eventRecords.js';
import { buildOutboxTransactItems } from '../../lambdas/outbox/outboxItems.js';
import { planRelay } from '../../lambdas/relay/planRelay.js';
import { fromSdkRecord as relayRecordOf } from '../../lambdas/relay/relayRecord.js';
import { bodyOfStoredItem } from '../../lambdas/store/bodyContent.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { newMessageCondition } from '../../lambdas/store/outboxRecords.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { streamRecords } from '../support/awsLocal.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent, validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

const DAY_MS = 86_400_000;
const RETENTION_DAYS = 30; // apiHarness's
/** A body that never fits inside the state record (random text does not compress). */
const largeText = () => randomBytes(6_000).toString('base64');

const at = (method: string, id: string, suffix = '', body?: unknown) =>
  apiEvent({
    method,
    path: `/v1/messages/${id}${suffix}`,
    routeKey: `${method} /v1/messages/{id}${suffix === '' ? '' : '/retry'}`,
    pathParameters: { id },
    body,
  });
const list = (query: Record<string, string>) =>
  apiEvent({ method: 'GET', path: '/v1/messages', routeKey: 'GET /v1/messages', query });

/** Enqueues under `key` and cancels: terminal, its records carrying the retention's TTL from now. */
async function endedMessage(api: Harness, key: string, overrides: Record<string, unknown> = {}) {
  const enqueued = await api.call(enqueueEvent(validBody(overrides), { key }));
  expect(enqueued.status).toBe(202);
  const id = String(enqueued.json.id);
  expect((await api.call(at('DELETE', id))).status).toBe(200);
  return id;
}

/** Moves the clock one second past the retention of a record that ended now. */
function pastRetention(api: Harness): void {
  api.clock.advance(RETENTION_DAYS * DAY_MS + 1_000);
}

async function item(api: Harness, id: string, sk: 'STATE' | 'BODY') {
  const { Item } = await api.documents.send(
    new GetCommand({ TableName: api.tableName, Key: { pk: messagePk(id), sk }, ConsistentRead: true }),
  );
  return Item;
}

/** A batch of one item under `key`. */
function batchEvent(key: string, fields: Parameters<typeof validBody>[0]) {
  return apiEvent({
    method: 'POST',
    path: '/v1/messages/batch',
    routeKey: 'POST /v1/messages/batch',
    body: { messages: [{ idempotency_key: key, ...validBody(fields) }] },
  });
}

/** The outbox helper's transaction items for this request, as a user's code builds them (tenant acme). */
function outboxItems(
  api: Harness,
  idempotencyKey: string,
  fields: Parameters<typeof validBody>[0],
  groupHeadVersion?: number,
) {
  const now = api.clock.now();
  const parsed = parseEnqueueRequest(validBody(fields), {
    allowedFrom: ['*@example.com'],
    defaultFrom: 'ops@example.com',
    maxHorizonDays: 400,
    now,
  });
  if (!parsed.ok) throw new Error(parsed.problem.detail);
  return buildOutboxTransactItems({
    tableName: api.tableName,
    tenant: 'acme',
    idempotencyKey,
    request: parsed.value,
    now,
    ...(groupHeadVersion === undefined ? {} : { groupHeadVersion }),
  });
}

describe('a message past its retention, still in the table (DynamoDB has not deleted it yet)', () => {
  it('GET answers 404, the same problem as an id never seen', async () => {
    const api = await apiHarness();
    const id = await endedMessage(api, 'gone-get');
    expect((await api.call(getEvent(id))).status).toBe(200);
    pastRetention(api);
    expect((await item(api, id, 'STATE'))?.status).toBe('cancelled');
    const gone = await api.call(getEvent(id));
    const never = await api.call(getEvent(messageIdFor('acme', 'never-used')));
    expect(gone.status).toBe(404);
    expect(gone.json).toEqual(never.json);
  });

  it('listings skip it, a page may come short and its cursor still leads on', async () => {
    const api = await apiHarness();
    const live = await api.call(
      enqueueEvent(validBody({ delay_seconds: 400 * 86_400 - 60 }), { key: 'live' }),
    );
    expect(live.status).toBe(202);
    api.clock.advance(1_000);
    const ended = await endedMessage(api, 'gone-list');
    pastRetention(api);
    for (const query of [{}, { status: 'cancelled' }] as Record<string, string>[]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 200; page++) {
        const response = await api.call(list({ ...query, limit: '1', ...(cursor ? { cursor } : {}) }));
        expect(response.status).toBe(200);
        seen.push(...(response.json.items as { id: string }[]).map((entry) => entry.id));
        cursor = response.json.next_cursor as string | null;
        if (cursor === null) break;
      }
      expect(seen).not.toContain(ended);
      if (!('status' in query)) expect(seen).toEqual([String(live.json.id)]);
    }
  });

  it('cancel, reschedule and retry answer 404, as for an unknown id, and write nothing', async () => {
    const api = await apiHarness();
    const id = await endedMessage(api, 'gone-moves');
    pastRetention(api);
    const before = await item(api, id, 'STATE');
    const sendAt = new Date(api.clock.now().getTime() + DAY_MS).toISOString();
    expect((await api.call(at('DELETE', id))).status).toBe(404);
    expect((await api.call(at('PATCH', id, '', { send_at: sendAt }))).status).toBe(404);
    expect((await api.call(at('POST', id, '/retry'))).status).toBe(404);
    expect(await item(api, id, 'STATE')).toEqual(before);
  });

  it('the CLI shows, lists and exports it no more', async () => {
    const api = await apiHarness();
    const id = await endedMessage(api, 'gone-cli');
    pastRetention(api);
    const deps = {
      documents: api.documents,
      tableName: api.tableName,
      store: api.store,
      now: api.clock.now,
      tenants: async () => ['acme'],
      retentionDays: RETENTION_DAYS,
      maxAttempts: 8,
      messageIdDomain: 'mail.example.com',
    };
    await expect(messagesShow(deps, id, memoryOutput())).rejects.toThrow(/no message/);
    expect((await messagesList(deps, {}, memoryOutput())).items).toEqual([]);
    const lines: string[] = [];
    const sink = { write: async (line: string) => void lines.push(line) };
    const report = await messagesExport(deps, { since: '2026-11-01T00:00:00Z' }, sink, memoryOutput());
    expect(report.exported).toBe(0);
    expect(lines.join('')).not.toContain(id);
  });
});

describe('its idempotency key is free again', () => {
  for (const [shape, overrides] of [
    ['a body inside the state record', () => ({})],
    ['a body item of its own', () => ({ text: largeText() })],
    ['a grouped message (one transaction)', () => ({ group: { key: 'g-1', version: 1 } })],
  ] as const) {
    it(`a new enqueue with it is a new message (202), ${shape}`, async () => {
      const api = await apiHarness();
      const key = `reused-${shape.length}`;
      const shaped = overrides();
      const id = await endedMessage(api, key, { ...shaped, subject: 'Old one' });
      pastRetention(api);
      const again = await api.call(enqueueEvent(validBody({ ...shaped, subject: 'New one' }), { key }));
      expect(again.status).toBe(202);
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      expect(again.json).toMatchObject({ id, status: 'scheduled', rev: 1 });
      const state = await item(api, id, 'STATE');
      expect(state).toMatchObject({ status: 'scheduled', created_at: api.clock.now().toISOString() });
      expect(state).not.toHaveProperty('expires_at');
      const stored = (state?.body as object | undefined) ?? (await item(api, id, 'BODY')) ?? {};
      const body = bodyOfStoredItem(stored, id);
      expect(body).toMatchObject({ subject: 'New one' });
      expect(body).not.toHaveProperty('expires_at');
      // Then its own key: a replay of the new message, as for any other.
      const replay = await api.call(enqueueEvent(validBody({ ...shaped, subject: 'New one' }), { key }));
      expect(replay.status).toBe(200);
      expect((await api.call(getEvent(id))).status).toBe(200);
    });
  }

  it('a small new body goes inside the record; the old body item, past its TTL, is never its body', async () => {
    const api = await apiHarness();
    const id = await endedMessage(api, 'old-large', { text: largeText(), subject: 'Old one' });
    const oldBody = await item(api, id, 'BODY');
    expect(oldBody?.expires_at).toEqual(expect.any(Number));
    pastRetention(api);
    const again = await api.call(enqueueEvent(validBody({ subject: 'New one' }), { key: 'old-large' }));
    expect(again.status).toBe(202);
    const state = await api.store.getMessage('acme', id, api.clock.now());
    if (state === null) throw new Error('the new message is not there');
    expect(state.body).toBeDefined();
    // The old item keeps its own TTL and is left to DynamoDB's deleter: the sender reads the new body.
    expect(await item(api, id, 'BODY')).toEqual(oldBody);
    expect(await new DynamoSenderStore(api.documents, api.tableName).readBody(state)).toMatchObject({
      subject: 'New one',
    });
  });

  it('whatever the old body was: the same body again is a new message too', async () => {
    const api = await apiHarness();
    const id = await endedMessage(api, 'same-body');
    pastRetention(api);
    const again = await api.call(enqueueEvent(validBody(), { key: 'same-body' }));
    expect(again.status).toBe(202);
    expect(again.json).toMatchObject({ id, status: 'scheduled' });
  });

  it('a batch item with it is a new message', async () => {
    const api = await apiHarness();
    const id = await endedMessage(api, 'batch-key');
    pastRetention(api);
    const response = await api.call(batchEvent('batch-key', { subject: 'Batch' }));
    expect(response.status).toBe(200);
    const [result] = response.json.results as { status: number; message?: { id: string; status: string } }[];
    expect(result).toMatchObject({ status: 202, message: { id, status: 'scheduled' } });
  });

  it("the outbox helper's transaction writes it, as the api would", async () => {
    const api = await apiHarness();
    const id = await endedMessage(api, 'outbox-key', { text: largeText() });
    pastRetention(api);
    await api.documents.send(
      new TransactWriteCommand({
        TransactItems: outboxItems(api, 'outbox-key', { subject: 'From the outbox' }),
      }),
    );
    expect(await item(api, id, 'STATE')).toMatchObject({ status: 'scheduled' });
    expect(await item(api, id, 'BODY')).toMatchObject({ subject: 'From the outbox' });
    expect((await api.call(getEvent(id))).status).toBe(200);
  });

  it('the stream says a new message was accepted: the relay dispatches it, the event is its acceptance', async () => {
    const api = await apiHarness();
    const id = await endedMessage(api, 'stream-key');
    pastRetention(api);
    expect((await api.call(enqueueEvent(validBody(), { key: 'stream-key' }))).status).toBe(202);
    const records = (await streamRecords(api.streamArn)).filter(
      (record) => record.dynamodb?.Keys?.sk?.S === 'STATE',
    );
    const last = records[records.length - 1];
    if (last === undefined) throw new Error('no stream record');
    expect(last.eventName).toBe('MODIFY'); // DynamoDB's word: a Put over an item
    const plan = planRelay(relayRecordOf(last));
    expect(plan).toMatchObject({ kind: 'act', id, dispatch: { id, rev: 1, status: 'scheduled' } });
    const event = eventRecordOf(toLambdaRecord(last, api.streamArn));
    expect(deriveStatusChange(event.change)).toMatchObject({
      type: 'message.scheduled',
      previousStatus: null,
    });
    expect(event.previousExpiresAt).toBeUndefined();
  });
});

describe('a body item whose TTL write was lost keeps no key (its state record decides)', () => {
  /**
   * A large message ended as the API ends it, then the body's TTL taken off: what a crash between the
   * state's terminal write and the body's TTL write leaves, never repaired.
   */
  async function endedWithoutBodyTtl(api: Harness, key: string, overrides: Record<string, unknown> = {}) {
    const id = await endedMessage(api, key, { text: largeText(), subject: 'Old one', ...overrides });
    await api.documents.send(
      new UpdateCommand({
        TableName: api.tableName,
        Key: { pk: messagePk(id), sk: 'BODY' },
        UpdateExpression: 'REMOVE expires_at',
      }),
    );
    expect(await item(api, id, 'BODY')).not.toHaveProperty('expires_at');
    return id;
  }

  async function expectNewMessage(api: Harness, id: string, subject: string) {
    expect(await item(api, id, 'STATE')).toMatchObject({ status: 'scheduled' });
    const state = await api.store.getMessage('acme', id, api.clock.now());
    if (state === null) throw new Error('the new message is not there');
    expect(await new DynamoSenderStore(api.documents, api.tableName).readBody(state)).toMatchObject({
      subject,
    });
  }

  for (const [shape, overrides] of [
    ['a large body', {}],
    ['a grouped message (one transaction)', { group: { key: 'g-lost', version: 1 } }],
  ] as const) {
    it(`past the state's retention, the key makes a new message (202), ${shape}`, async () => {
      const api = await apiHarness();
      const key = `lost-ttl-${shape.length}`;
      const id = await endedWithoutBodyTtl(api, key, overrides);
      pastRetention(api);
      const body = validBody({ ...overrides, text: largeText(), subject: 'New one' });
      const again = await api.call(enqueueEvent(body, { key }));
      expect(again.status).toBe(202);
      expect(again.json).toMatchObject({ id, status: 'scheduled', rev: 1 });
      await expectNewMessage(api, id, 'New one');
      expect(await item(api, id, 'BODY')).not.toHaveProperty('expires_at');
      expect((await api.call(enqueueEvent(body, { key }))).status).toBe(200);
    });
  }

  it('a batch item with it is a new message', async () => {
    const api = await apiHarness();
    const id = await endedWithoutBodyTtl(api, 'lost-batch');
    pastRetention(api);
    const response = await api.call(batchEvent('lost-batch', { text: largeText(), subject: 'Batch' }));
    expect(response.status).toBe(200);
    const [result] = response.json.results as { status: number; message?: { id: string } }[];
    expect(result).toMatchObject({ status: 202, message: { id } });
    await expectNewMessage(api, id, 'Batch');
  });

  it("the outbox helper's transaction writes it", async () => {
    const api = await apiHarness();
    const id = await endedWithoutBodyTtl(api, 'lost-outbox');
    pastRetention(api);
    await api.documents.send(
      new TransactWriteCommand({
        TransactItems: outboxItems(api, 'lost-outbox', { subject: 'From the outbox' }),
      }),
    );
    await expectNewMessage(api, id, 'From the outbox');
  });

  it('once DynamoDB deleted the state record, the body alone holds the key no more', async () => {
    const api = await apiHarness();
    const id = await endedWithoutBodyTtl(api, 'lost-deleted');
    pastRetention(api);
    await api.documents.send(
      new DeleteCommand({ TableName: api.tableName, Key: { pk: messagePk(id), sk: 'STATE' } }),
    );
    const again = await api.call(
      enqueueEvent(validBody({ text: largeText(), subject: 'New one' }), { key: 'lost-deleted' }),
    );
    expect(again.status).toBe(202);
    await expectNewMessage(api, id, 'New one');
  });

  it("a late repair of the old body's TTL never lands on the new message's body", async () => {
    // A client's repeated cancel reads the old message just before its retention runs out; its
    // body write (finishBodyLifetime, decision 0145) lands after a new message replaced the body.
    const api = await apiHarness();
    const id = await endedWithoutBodyTtl(api, 'lost-repair');
    api.clock.advance(RETENTION_DAYS * DAY_MS - 1_000);
    const stale = await api.store.getMessage('acme', id, api.clock.now());
    if (stale === null) throw new Error('the old message is gone too early');
    api.clock.advance(2_000);
    const body = validBody({ text: largeText(), subject: 'New one' });
    expect((await api.call(enqueueEvent(body, { key: 'lost-repair' }))).status).toBe(202);
    await api.store.finishBodyLifetime(stale);
    // DESIGN §2: no TTL deletes a live message's body; a body past its TTL would be a free key.
    expect(await item(api, id, 'BODY')).not.toHaveProperty('expires_at');
    const other = validBody({ text: largeText(), subject: 'Other' });
    expect((await api.call(enqueueEvent(other, { key: 'lost-repair' }))).status).toBe(422);
    await expectNewMessage(api, id, 'New one');
  });

  it('a live message older than the retention keeps its key and its body, whatever the path', async () => {
    const api = await apiHarness();
    const group = { key: 'g-live', version: 1 };
    const first = await api.call(
      enqueueEvent(
        validBody({ group, text: largeText(), subject: 'Live', delay_seconds: 400 * 86_400 - 60 }),
        {
          key: 'live-old',
        },
      ),
    );
    expect(first.status).toBe(202);
    const id = String(first.json.id);
    pastRetention(api);
    const before = await api.scanAll();
    for (const shaped of [{}, { group }]) {
      const reused = await api.call(
        enqueueEvent(validBody({ ...shaped, text: largeText(), subject: 'Other' }), { key: 'live-old' }),
      );
      expect(reused.status).toBe(422);
    }
    const items = outboxItems(api, 'live-old', { group, text: largeText(), subject: 'Other' }, 1);
    await expect(api.documents.send(new TransactWriteCommand({ TransactItems: items }))).rejects.toThrow();
    expect(await api.scanAll()).toEqual(before);
    expect((await api.call(getEvent(id))).json).toMatchObject({ status: 'scheduled' });
  });
});

describe('the write condition is retentionRanOut, as DynamoDB evaluates it', () => {
  it('frees an item exactly when the rule says its retention ran out', async () => {
    const api = await apiHarness();
    const base = Date.parse('2026-12-30T10:00:00.000Z');
    let n = 0;
    for (const nowMs of [base, base + 1, base + 999]) {
      const seconds = Math.floor(nowMs / 1000);
      for (const expiresAt of [undefined, seconds - 1, seconds, seconds + 1]) {
        n += 1;
        const now = new Date(nowMs);
        const pk = `AGREE#${n}`;
        await api.documents.send(
          new PutCommand({
            TableName: api.tableName,
            Item: { pk, sk: 'STATE', ...(expiresAt === undefined ? {} : { expires_at: expiresAt }) },
          }),
        );
        const condition = newMessageCondition(now);
        const wrote = await api.documents
          .send(
            new PutCommand({
              TableName: api.tableName,
              Item: { pk, sk: 'STATE', written: true },
              ConditionExpression: condition.ConditionExpression,
              ExpressionAttributeNames: condition.ExpressionAttributeNames,
              ExpressionAttributeValues: condition.ExpressionAttributeValues,
            }),
          )
          .then(
            () => true,
            () => false,
          );
        expect({ nowMs, expiresAt, wrote }).toEqual({
          nowMs,
          expiresAt,
          wrote: retentionRanOut(expiresAt, now),
        });
      }
    }
    expect(expiresAtAfter(new Date(base), 1)).toBe(Math.floor(base / 1000) + 86_400);
  });

  it('frees a body without a TTL exactly when the rule calls it an orphan (decision 0208)', async () => {
    const api = await apiHarness();
    const now = new Date('2026-12-30T10:00:00.000Z');
    const window = resumeWindowMs(RETENTION_DAYS);
    for (const [n, age] of [window - 1, window, window + 1, 2 * window].entries()) {
      const pk = `ORPHAN#${n}`;
      const createdAt = new Date(now.getTime() - age).toISOString();
      await api.documents.send(
        new PutCommand({ TableName: api.tableName, Item: { pk, sk: 'BODY', created_at: createdAt } }),
      );
      const condition = bodyReplaceableCondition(now, RETENTION_DAYS);
      const wrote = await api.documents
        .send(
          new PutCommand({
            TableName: api.tableName,
            Item: { pk, sk: 'BODY', written: true },
            ConditionExpression: condition.expression,
            ExpressionAttributeNames: { ...condition.names },
            ExpressionAttributeValues: { ...condition.values },
          }),
        )
        .then(
          () => true,
          () => false,
        );
      expect({ age, wrote }).toEqual({ age, wrote: bodyOrphaned(createdAt, now, RETENTION_DAYS) });
      expect(wrote).toBe(age > window);
    }
  });
});
