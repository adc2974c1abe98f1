import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import { fingerprint } from '../../lambdas/core/fingerprint.js';
import { messageIdFor } from '../../lambdas/core/ids.js';
import { fingerprintSource } from '../../lambdas/core/messageSchema.js';
import type { ApiStore } from '../../lambdas/ports/ApiStore.js';
import {
  byStatusPk,
  byTenantPk,
  createdSortKey,
  duePk,
  messagePk,
} from '../../lambdas/store/messageRecord.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent, validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

/** A body too large to go inside its state record: written as an item of its own (docs/data-model.md). */
const LARGE_TEXT = mailText(20 * 1024);
/** The harness's POSTDATE_RETENTION_DAYS (30). */
const RETENTION_MS = 30 * 86_400_000;

describe('POST /v1/messages (enqueue)', () => {
  let api: Harness;
  /** Outcomes of every enqueue transaction and conditional put, to see that the races really raced. */
  const transactions: string[] = [];
  const puts: string[] = [];
  beforeAll(async () => {
    api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          writeEnqueue: async (items: Parameters<ApiStore['writeEnqueue']>[0]) => {
            const result = await store.writeEnqueue(items);
            transactions.push(result.kind);
            return result;
          },
          putNew: async (record: Parameters<ApiStore['putNew']>[0]) => {
            const result = await store.putNew(record);
            puts.push(`${record.sk} ${result.kind}`);
            return result;
          },
        }),
    });
  });

  it('answers 202 with the message, and writes the state record and the body once, under an id derived from the key', async () => {
    const body = validBody({ send_at: '2026-12-01T09:00:00Z', not_after: '2026-12-01T10:00:00+00:00' });
    const response = await api.call(enqueueEvent(body, { key: 'order-1001' }));

    expect(response.status).toBe(202);
    expect(response.headers['content-type']).toBe('application/json');
    const id = String(response.json.id);
    expect(id).toBe(messageIdFor('acme', 'order-1001'));
    expect(response.headers.location).toBe(`/v1/messages/${id}`);
    expect(response.json).toEqual({
      id,
      status: 'scheduled',
      send_at: '2026-12-01T09:00:00.000Z',
      send_at_local: null,
      time_zone: null,
      quiet_hours: null,
      not_after: '2026-12-01T10:00:00.000Z',
      created_at: '2026-11-29T18:00:00.000Z',
      updated_at: '2026-11-29T18:00:00.000Z',
      attempts: 0,
      last_error: null,
      provider_message_id: null,
      relay: null,
      recipients: { accepted: 0, pending: 1, rejected: 0, suppressed: 0 },
      template: null,
      attachments: [],
      group: null,
      tags: { kind: 'campaign-approved' },
      metadata: { campaign_id: '42' },
      rev: 1,
      test: false,
    });

    const get = async (pk: string, sk: string) =>
      (await api.documents.send(new GetCommand({ TableName: api.tableName, Key: { pk, sk } }))).Item;
    const state = await get(messagePk(id), 'STATE');
    expect(state).toMatchObject({
      tenant: 'acme',
      status: 'scheduled',
      rev: 1,
      on_ambiguous: 'retry',
      history: [],
      lst_pk: byStatusPk('acme', 'scheduled', id),
      lst_sk: createdSortKey('2026-11-29T18:00:00.000Z', id),
      tnt_pk: byTenantPk('acme', id),
      tnt_sk: createdSortKey('2026-11-29T18:00:00.000Z', id),
      due_pk: duePk(id),
      due_at: '2026-12-01T09:00:00.000Z',
    });
    expect(state).not.toHaveProperty('subject');
    expect(state).not.toHaveProperty('expires_at');
    expect(state?.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    // A small body is inside the state record (docs/data-model.md, "Small bodies inside the state record").
    expect(state?.body).toEqual({
      from: 'Ops <ops@example.com>',
      to: ['Ada Lovelace <ada@example.com>'],
      cc: [],
      bcc: [],
      reply_to: null,
      subject: 'Campaign approved',
      text: 'Your campaign was approved.',
      html: '<p>Your campaign was approved.</p>',
      headers: { 'X-Campaign': '42' },
    });
    // One item and nothing else: no guard item, no transaction for an ungrouped message.
    expect(await api.scanAll()).toHaveLength(1);
  });

  it('writes a large body as an item of its own, with its fingerprint and creation time, beside the state record', async () => {
    const response = await api.call(enqueueEvent(validBody({ text: LARGE_TEXT }), { key: 'large-1' }));
    expect(response.status).toBe(202);
    const id = String(response.json.id);
    const items = (await api.scanAll()).filter((item) => item.pk === messagePk(id));
    expect(items.map((item) => item.sk).sort()).toEqual(['BODY', 'STATE']);
    const [bodyItem, stateItem] = ['BODY', 'STATE'].map((sk) => items.find((item) => item.sk === sk));
    expect(stateItem).not.toHaveProperty('body');
    expect(bodyItem).toMatchObject({
      from: 'Ops <ops@example.com>',
      to: ['Ada Lovelace <ada@example.com>'],
      created_at: stateItem?.created_at,
      fingerprint: stateItem?.fingerprint,
    });
  });

  it('replays the same key and body with 200, the same message and Idempotent-Replayed: true, writing nothing', async () => {
    const body = validBody({ delay_seconds: 600 });
    const first = await api.call(enqueueEvent(body, { key: 'replay-1' }));
    const before = await api.scanAll();
    api.clock.advance(5_000);
    // Same body, keys in another order: the fingerprint is over the canonical parsed body.
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const again = await api.call(enqueueEvent(reordered, { key: 'replay-1' }));

    expect(first.status).toBe(202);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json).toEqual(first.json);
    expect(await api.scanAll()).toEqual(before);
  });

  it('accepts the key as a Structured Field string: "abc" and abc are the same key', async () => {
    const first = await api.call(enqueueEvent(validBody(), { key: '"sf-key-1"' }));
    const again = await api.call(enqueueEvent(validBody(), { key: 'sf-key-1' }));
    expect(first.status).toBe(202);
    expect(again.status).toBe(200);
    expect(again.json.id).toBe(first.json.id);
  });

  it('answers 422 for the same key with a different body, and leaves the original untouched', async () => {
    const first = await api.call(enqueueEvent(validBody({ subject: 'Original' }), { key: 'reused-1' }));
    const before = await api.scanAll();
    const other = await api.call(enqueueEvent(validBody({ subject: 'Something else' }), { key: 'reused-1' }));

    expect(first.status).toBe(202);
    expect(other.status).toBe(422);
    expect(other.headers['content-type']).toBe('application/problem+json');
    expect(other.json).toMatchObject({
      type: 'urn:postdate:problem:idempotency-key-reused',
      status: 422,
      errors: [{ field: 'Idempotency-Key', message: expect.any(String) }],
    });
    expect(await api.scanAll()).toEqual(before);
  });

  it('keeps keys per tenant: the same key in another tenant is another message', async () => {
    const mine = await api.call(enqueueEvent(validBody(), { key: 'shared-key', tenant: 'acme' }));
    const theirs = await api.call(enqueueEvent(validBody(), { key: 'shared-key', tenant: 'globex' }));
    expect(mine.status).toBe(202);
    expect(theirs.status).toBe(202);
    expect(theirs.json.id).not.toBe(mine.json.id);
  });

  it('answers 400 without an Idempotency-Key, naming the header', async () => {
    const before = await api.scanAll();
    const response = await api.call(enqueueEvent(validBody(), { key: null }));
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({
      type: 'urn:postdate:problem:idempotency-key-missing',
      errors: [{ field: 'Idempotency-Key' }],
    });
    expect(await api.scanAll()).toHaveLength(before.length);
  });

  it('creates exactly one small message (one item) from ten concurrent identical requests', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => api.call(enqueueEvent(validBody(), { key: 'race-small' }))),
    );
    expect(new Set(responses.map((response) => response.json.id))).toEqual(
      new Set([messageIdFor('acme', 'race-small')]),
    );
    expect(responses.filter((response) => response.status === 202)).toHaveLength(1);
    expect(responses.filter((response) => response.status === 200)).toHaveLength(9);
    const items = await api.scanAll();
    expect(items.filter((item) => item.pk === messagePk(messageIdFor('acme', 'race-small')))).toHaveLength(1);
  });

  it('creates exactly one message from ten concurrent identical requests, and all ten answer it', async () => {
    const body = validBody({ text: LARGE_TEXT });
    puts.length = 0;
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => api.call(enqueueEvent(body, { key: 'race-plain' }))),
    );
    const ids = new Set(responses.map((response) => response.json.id));
    expect(ids).toEqual(new Set([messageIdFor('acme', 'race-plain')]));
    expect(responses.filter((response) => response.status === 202)).toHaveLength(1);
    expect(responses.filter((response) => response.status === 200)).toHaveLength(9);
    const items = await api.scanAll();
    expect(items.filter((item) => item.pk === messagePk(String([...ids][0])))).toHaveLength(2);
    // The race was real: more than one request tried to put the body, exactly one state put won.
    expect(puts.filter((put) => put.startsWith('BODY')).length).toBeGreaterThan(1);
    expect(puts.filter((put) => put === 'STATE written')).toHaveLength(1);
  });

  it('creates exactly one grouped message from ten concurrent identical requests (the transaction path)', async () => {
    const body = validBody({ group: { key: 'race:1', version: 3 }, text: LARGE_TEXT });
    transactions.length = 0;
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => api.call(enqueueEvent(body, { key: 'race-key' }))),
    );
    const ids = new Set(responses.map((response) => response.json.id));
    expect(ids.size).toBe(1);
    expect(responses.filter((response) => response.status === 202)).toHaveLength(1);
    expect(responses.filter((response) => response.status === 200)).toHaveLength(9);
    for (const response of responses.filter((r) => r.status === 200)) {
      expect(response.headers['idempotent-replayed']).toBe('true');
    }
    const items = await api.scanAll();
    const [id] = [...ids];
    expect(items.filter((item) => item.pk === messagePk(String(id)))).toHaveLength(2);
    // More than one request got into a transaction: the race was real, and the losers read the
    // winner back.
    expect(transactions.length).toBeGreaterThan(1);
    expect(transactions.filter((kind) => kind === 'written')).toHaveLength(1);
  });

  it('lets only one of ten concurrent requests with the same key but different bodies win; the rest get 422', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        api.call(enqueueEvent(validBody({ subject: `Variant ${i}` }), { key: 'race-diff' })),
      ),
    );
    expect(responses.filter((response) => response.status === 202)).toHaveLength(1);
    expect(responses.filter((response) => response.status === 422)).toHaveLength(9);
  });

  it('answers a replay even after the send time has passed (the fingerprint ignores the clock)', async () => {
    const body = validBody({ send_at: '2026-11-29T18:10:00Z' });
    const first = await api.call(enqueueEvent(body, { key: 'late-replay' }));
    api.clock.advance(60 * 60 * 1000);
    const again = await api.call(enqueueEvent(body, { key: 'late-replay' }));
    expect(again.status).toBe(200);
    expect(again.json.id).toBe(first.json.id);
  });

  it('stores the fingerprint of the canonical request on the message (what fingerprint.ts computes)', async () => {
    const response = await api.call(enqueueEvent(validBody({ cc: [], bcc: null }), { key: 'fp-1' }));
    const stored = await api.documents.send(
      new GetCommand({
        TableName: api.tableName,
        Key: { pk: messagePk(messageIdFor('acme', 'fp-1')), sk: 'STATE' },
      }),
    );
    expect(response.status).toBe(202);
    expect(stored.Item?.fingerprint).toBe(
      fingerprint(
        fingerprintSource({
          to: ['Ada Lovelace <ada@example.com>'],
          cc: [],
          bcc: [],
          from: 'Ops <ops@example.com>',
          reply_to: null,
          subject: 'Campaign approved',
          text: 'Your campaign was approved.',
          html: '<p>Your campaign was approved.</p>',
          headers: { 'X-Campaign': '42' },
          requested_send_at: null,
          delay_seconds: null,
          send_at: 'ignored',
          not_after: null,
          group: null,
          on_ambiguous: 'retry',
          tags: { kind: 'campaign-approved' },
          metadata: { campaign_id: '42' },
        }),
      ),
    );
  });

  describe('an enqueue that died between its body and its state record', () => {
    /** Enqueues, then deletes the state record: what a crash between the two puts leaves behind. */
    async function orphanBody(key: string, body: Record<string, unknown>) {
      const first = await api.call(enqueueEvent(body, { key }));
      expect(first.status).toBe(202);
      await api.documents.send(
        new DeleteCommand({
          TableName: api.tableName,
          Key: { pk: messagePk(String(first.json.id)), sk: 'STATE' },
        }),
      );
      return String(first.json.id);
    }

    it('is completed by the client retrying the same request: 202, one message, under the same id', async () => {
      const body = validBody({ text: LARGE_TEXT });
      const id = await orphanBody('crashed-1', body);
      api.clock.advance(2_000);
      const retried = await api.call(enqueueEvent(body, { key: 'crashed-1' }));
      expect(retried.status).toBe(202);
      expect(retried.json).toMatchObject({ id, status: 'scheduled' });
      const items = (await api.scanAll()).filter((item) => item.pk === messagePk(id));
      expect(items.map((item) => item.sk).sort()).toEqual(['BODY', 'STATE']);
      expect((await api.call(enqueueEvent(body, { key: 'crashed-1' }))).status).toBe(200);
    });

    it('answers 422 to the same key with another body, and writes nothing', async () => {
      await orphanBody('crashed-2', validBody({ subject: 'First', text: LARGE_TEXT }));
      const before = await api.scanAll();
      const other = await api.call(
        enqueueEvent(validBody({ subject: 'Second', text: LARGE_TEXT }), { key: 'crashed-2' }),
      );
      expect(other.status).toBe(422);
      expect(await api.scanAll()).toEqual(before);
    });

    it('is completed by its identical replay for the whole retention after its body was written', async () => {
      const body = validBody({ send_at: '2027-02-01T09:00:00Z', text: LARGE_TEXT });
      const id = await orphanBody('crashed-3', body);
      api.clock.advance(RETENTION_MS - 1_000);
      const late = await api.call(enqueueEvent(body, { key: 'crashed-3' }));
      expect(late.status).toBe(202);
      expect(late.json).toMatchObject({ id, status: 'scheduled' });
    });

    it('pins the template version its body renders, not the one that became the latest before the retry (DESIGN §3, §10)', async () => {
      const template = (text: string) =>
        apiEvent({ method: 'PUT', path: '/v1/templates/orphan-pin', body: { subject: 'Code {{n}}', text } });
      expect((await api.call(template('one {{blob}}'))).status).toBe(201);
      // Data large enough that the body is an item of its own, so a crash can leave it alone.
      const body = {
        to: ['ada@example.com'],
        from: 'ops@example.com',
        template: { name: 'orphan-pin' },
        data: { n: 1, blob: LARGE_TEXT },
      };
      const id = await orphanBody('crashed-template', body);
      expect((await api.call(template('two {{blob}}'))).status).toBe(201);
      api.clock.advance(2_000);
      const retried = await api.call(enqueueEvent(body, { key: 'crashed-template' }));
      expect(retried.status).toBe(202);
      // The body the sender renders pins version 1: the message says so, as it will send it.
      const stored = await api.documents.send(
        new GetCommand({ TableName: api.tableName, Key: { pk: messagePk(id), sk: 'BODY' } }),
      );
      expect(stored.Item?.template).toEqual({ name: 'orphan-pin', version: 1 });
      expect(retried.json.template).toEqual({ name: 'orphan-pin', version: 1 });
      expect((await api.call(getEvent(id))).json.template).toEqual({ name: 'orphan-pin', version: 1 });
    });

    it('once older than the retention is an orphan no message holds: the key makes a new message (decision 0208)', async () => {
      const body = validBody({ send_at: '2027-06-01T09:00:00Z', text: LARGE_TEXT });
      const id = await orphanBody('crashed-4', body);
      api.clock.advance(RETENTION_MS + 1_000);
      const late = await api.call(enqueueEvent(body, { key: 'crashed-4' }));
      expect(late.status).toBe(202);
      expect(late.json).toMatchObject({ id, status: 'scheduled', created_at: api.clock.now().toISOString() });
    });
  });

  describe('a request overtaken between its body and its state record', () => {
    it('never deletes the body a racing identical request completed its message with', async () => {
      // Request A puts the body and stalls before its state record; B (the client's retry) finds
      // A's body, completes the message with it; then A's state put finds B's record.
      let bodyPut!: () => void;
      const aPutTheBody = new Promise<void>((resolve) => {
        bodyPut = resolve;
      });
      let release!: () => void;
      const bDone = new Promise<void>((resolve) => {
        release = resolve;
      });
      let stalled = false;
      const racing = await apiHarness({
        wrapStore: (store) =>
          Object.assign(Object.create(store) as ApiStore, {
            putNew: async (record: Parameters<ApiStore['putNew']>[0]) => {
              const result = await store.putNew(record);
              if (!stalled && record.sk === 'BODY' && result.kind === 'written') {
                stalled = true;
                bodyPut();
                await bDone;
              }
              return result;
            },
          }),
      });
      const body = validBody({ text: LARGE_TEXT });
      const first = racing.call(enqueueEvent(body, { key: 'overtaken' }));
      await aPutTheBody;
      const retry = await racing.call(enqueueEvent(body, { key: 'overtaken' }));
      expect(retry.status).toBe(202);
      release();
      const original = await first;
      expect(original.status).toBe(200);
      expect(original.json.id).toBe(retry.json.id);
      const id = String(retry.json.id);
      const items = (await racing.scanAll()).filter((item) => item.pk === messagePk(id));
      expect(items.map((item) => item.sk).sort()).toEqual(['BODY', 'STATE']);
    });
  });

  describe('a key whose message outlived its body', () => {
    it('stores the fingerprint on the state record too', async () => {
      const response = await api.call(enqueueEvent(validBody({ text: LARGE_TEXT }), { key: 'fp-state' }));
      const id = String(response.json.id);
      const items = (await api.scanAll()).filter((item) => item.pk === messagePk(id));
      const [bodyItem, stateItem] = ['BODY', 'STATE'].map((sk) => items.find((item) => item.sk === sk));
      expect(stateItem?.fingerprint).toBe(bodyItem?.fingerprint);
    });

    it('answers a replay after an ended message lost its body with 200, and leaves no body of its own', async () => {
      const body = validBody({ send_at: '2027-03-01T09:00:00Z', text: LARGE_TEXT });
      const first = await api.call(enqueueEvent(body, { key: 'ended-body' }));
      const id = String(first.json.id);
      const cancelled = await api.call(
        apiEvent({
          method: 'DELETE',
          path: `/v1/messages/${id}`,
          routeKey: 'DELETE /v1/messages/{id}',
          pathParameters: { id },
        }),
      );
      expect(cancelled.status).toBe(200);
      await api.documents.send(
        new DeleteCommand({ TableName: api.tableName, Key: { pk: messagePk(id), sk: 'BODY' } }),
      );
      const before = await api.scanAll();
      const replay = await api.call(enqueueEvent(body, { key: 'ended-body' }));
      expect(replay.status).toBe(200);
      expect(replay.json).toMatchObject({ id, status: 'cancelled' });
      expect(await api.scanAll()).toEqual(before);
    });

    it('answers 422 to another body after the original body expired, and leaves the original untouched', async () => {
      const first = await api.call(
        enqueueEvent(validBody({ subject: 'Original', text: LARGE_TEXT }), { key: 'expired-body' }),
      );
      const id = String(first.json.id);
      await api.documents.send(
        new DeleteCommand({ TableName: api.tableName, Key: { pk: messagePk(id), sk: 'BODY' } }),
      );
      const before = await api.scanAll();
      const other = await api.call(
        enqueueEvent(validBody({ subject: 'Other', text: LARGE_TEXT }), { key: 'expired-body' }),
      );
      expect(other.status).toBe(422);
      expect(await api.scanAll()).toEqual(before);
    });
  });

  it('answers a replay after its not_after has passed with the stored message (200), not a validation error', async () => {
    api.clock.set('2026-11-29T18:00:00.000Z');
    const body = validBody({ send_at: '2026-11-29T18:10:00Z', not_after: '2026-11-29T19:00:00Z' });
    const first = await api.call(enqueueEvent(body, { key: 'past-deadline-replay' }));
    expect(first.status).toBe(202);
    api.clock.advance(2 * 60 * 60 * 1000);
    const again = await api.call(enqueueEvent(body, { key: 'past-deadline-replay' }));
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json.id).toBe(first.json.id);
    // A new key with the same body is still refused: the deadline has passed.
    expect((await api.call(enqueueEvent(body, { key: 'past-deadline-new' }))).status).toBe(400);
  });

  it('uses POSTDATE_DEFAULT_FROM when the request has no from', async () => {
    const body = validBody();
    delete body.from;
    const response = await api.call(enqueueEvent(body, { key: 'default-from' }));
    const stored = await api.documents.send(
      new GetCommand({
        TableName: api.tableName,
        Key: { pk: messagePk(String(response.json.id)), sk: 'STATE' },
      }),
    );
    expect(stored.Item?.body?.from).toBe('postdate@example.com');
  });

  it('decodes a base64-encoded body from API Gateway', async () => {
    const response = await api.call(enqueueEvent(validBody(), { key: 'b64-1', base64: true }));
    expect(response.status).toBe(202);
  });

  it('accepts application/json with a UTF-8 charset', async () => {
    const response = await api.call(
      enqueueEvent(validBody(), {
        key: 'charset-1',
        headers: { 'content-type': 'application/json; charset=UTF-8' },
      }),
    );
    expect(response.status).toBe(202);
  });
});

describe('GET /v1/messages/{id}', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  it('answers 200 with the message and its history', async () => {
    const created = await api.call(enqueueEvent(validBody(), { key: 'get-1' }));
    const response = await api.call(getEvent(String(created.json.id)));
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ ...created.json, history: [] });
  });

  it("answers 404 for another tenant's message, never 403", async () => {
    const created = await api.call(enqueueEvent(validBody(), { key: 'get-2', tenant: 'acme' }));
    const response = await api.call(getEvent(String(created.json.id), 'globex'));
    expect(response.status).toBe(404);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.json).toMatchObject({ type: 'urn:postdate:problem:not-found', status: 404 });
  });

  it('answers 404 for an id that does not exist or cannot be one', async () => {
    expect((await api.call(getEvent('01JDQ1T8Z6J5V1Y5M6Z8K4W2QX'))).status).toBe(404);
    expect((await api.call(getEvent('not an id!'))).status).toBe(404);
  });

  it('answers 401 when the authorizer context is missing (the tenant never comes from the request)', async () => {
    const response = await api.call(
      apiEvent({
        method: 'GET',
        path: '/v1/messages/x',
        routeKey: 'GET /v1/messages/{id}',
        pathParameters: { id: 'x' },
        tenant: null,
        headers: { 'x-tenant': 'acme' },
      }),
    );
    expect(response.status).toBe(401);
  });
});

describe('GET /health', () => {
  it('answers 200 without authentication', async () => {
    const api = await apiHarness();
    const response = await api.call(apiEvent({ method: 'GET', path: '/health', tenant: null }));
    expect(response).toMatchObject({ status: 200, json: { status: 'ok' } });
  });
});
