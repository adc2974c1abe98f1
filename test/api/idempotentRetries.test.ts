/**
 * An idempotency key retried the way a real client retries (DESIGN §3, §3a, §4): in parallel, through
 * the single route and the batch route, after the outbox helper wrote it in the client's own
 * transaction, after the message ended, with the body re-serialised, and under keys that differ only
 * in case or length. Whatever the path, one message is stored under the key, every answer names it,
 * the first is 202 and every other 200 with `Idempotent-Replayed: true` (a batch item `replayed:
 * true`), and another body is the 422 naming the key, leaving the original as it was. On DynamoDB
 * Local through the real api handler.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import { createApiHandler } from '../../lambdas/api/createApiHandler.js';
import { messageIdFor } from '../../lambdas/core/ids.js';
import { parseEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { buildOutboxTransactItems } from '../../lambdas/outbox/outboxItems.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { DynamoTemplateStore } from '../../lambdas/store/templateStore.js';
import { apiHarness, documentedHandler } from './apiHarness.js';
import { apiEvent, enqueueEvent, validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

interface BatchResult {
  index: number;
  status: number;
  message?: { id: string; status: string; send_at: string };
  problem?: { type: string; errors?: { field: string }[] };
}

/** A body too large to go inside its state record: the two-put path, the widest race window. */
const LARGE_TEXT = mailText(20 * 1024);
const REUSED = 'urn:postdate:problem:idempotency-key-reused';

const batch = (items: readonly Record<string, unknown>[], tenant = 'acme') =>
  apiEvent({
    method: 'POST',
    path: '/v1/messages/batch',
    routeKey: 'POST /v1/messages/batch',
    body: { messages: items },
    tenant,
  });

describe('an idempotency key retried as clients retry', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  const stateOf = async (id: string) =>
    (
      await api.documents.send(
        new GetCommand({ TableName: api.tableName, Key: { pk: messagePk(id), sk: 'STATE' } }),
      )
    ).Item;
  const itemsOf = async (id: string) => (await api.scanAll()).filter((item) => item.pk === messagePk(id));
  const results = (response: { json: Record<string, unknown> }) => response.json.results as BatchResult[];

  it('stores one message from 20 concurrent requests with one key, half through the batch route: one 202, the rest replays of it', async () => {
    const body = validBody({ text: LARGE_TEXT });
    const id = messageIdFor('acme', 'parallel-20');
    const [singles, batches] = await Promise.all([
      Promise.all(Array.from({ length: 10 }, () => api.call(enqueueEvent(body, { key: 'parallel-20' })))),
      Promise.all(
        Array.from({ length: 10 }, () => api.call(batch([{ idempotency_key: 'parallel-20', ...body }]))),
      ),
    ]);
    const items = batches.map((response) => {
      expect(response.status).toBe(200);
      return results(response)[0];
    });
    expect(singles.map((response) => response.json.id)).toEqual(Array(10).fill(id));
    expect(items.map((item) => item?.message?.id)).toEqual(Array(10).fill(id));
    const created = [...singles.map((r) => r.status), ...items.map((item) => item?.status)];
    expect(created.filter((status) => status === 202)).toHaveLength(1);
    expect(created.filter((status) => status === 200)).toHaveLength(19);
    for (const response of singles) {
      expect(response.headers.location).toBe(`/v1/messages/${id}`);
      if (response.status === 200) expect(response.headers['idempotent-replayed']).toBe('true');
    }
    for (const item of items) if (item?.status === 200) expect(item).toMatchObject({ replayed: true });
    expect((await itemsOf(id)).map((item) => item.sk).sort()).toEqual(['BODY', 'STATE']);
  });

  it('stores one grouped message from 20 concurrent requests across both routes (the transaction path)', async () => {
    const body = validBody({ group: { key: 'parallel:g', version: 4 }, text: LARGE_TEXT });
    const id = messageIdFor('acme', 'parallel-g');
    const [singles, batches] = await Promise.all([
      Promise.all(Array.from({ length: 10 }, () => api.call(enqueueEvent(body, { key: 'parallel-g' })))),
      Promise.all(
        Array.from({ length: 10 }, () => api.call(batch([{ idempotency_key: 'parallel-g', ...body }]))),
      ),
    ]);
    const statuses = [...singles.map((r) => r.status), ...batches.map((r) => results(r)[0]?.status)];
    expect(statuses.filter((status) => status === 202)).toHaveLength(1);
    expect(statuses.filter((status) => status === 200)).toHaveLength(19);
    expect(
      new Set([...singles.map((r) => r.json.id), ...batches.map((r) => results(r)[0]?.message?.id)]),
    ).toEqual(new Set([id]));
    expect((await stateOf(id))?.status).toBe('scheduled');
  });

  it('leaves the group head where it was when the key is reused with a higher version (422)', async () => {
    const first = await api.call(
      enqueueEvent(validBody({ group: { key: 'head:1', version: 3 } }), { key: 'grp' }),
    );
    expect(first.status).toBe(202);
    const reused = await api.call(
      enqueueEvent(validBody({ group: { key: 'head:1', version: 9 } }), { key: 'grp' }),
    );
    expect(reused.status).toBe(422);
    expect((await api.store.readGroupHead('acme', 'head:1', { consistent: true }))?.version).toBe(3);
    const next = await api.call(
      enqueueEvent(validBody({ group: { key: 'head:1', version: 5 } }), { key: 'grp-5' }),
    );
    expect(next.json.status).toBe('scheduled');
  });

  it.each([
    ['a plain message', validBody()],
    ['a large one', validBody({ text: LARGE_TEXT, tags: {}, metadata: {} })],
    [
      'one with every optional field',
      validBody({
        cc: ['Bob <bob@example.com>'],
        bcc: ['carol@example.com'],
        reply_to: 'help@example.com',
        send_at_local: '2026-12-01T09:00',
        time_zone: 'Europe/Berlin',
        quiet_hours: { start: '22:00', end: '07:00' },
        not_after: '2026-12-09T00:00:00Z',
        group: { key: 'view:1', version: 1 },
        on_ambiguous: 'hold',
      }),
    ],
  ])('answers a replay of %s with the very message view the 202 gave', async (name, body) => {
    const key = `view-${name}`;
    const first = await api.call(enqueueEvent(body, { key }));
    const again = await api.call(enqueueEvent(body, { key }));
    expect([first.status, again.status]).toEqual([202, 200]);
    expect(again.json).toEqual(first.json);
  });

  describe('what "the same request" is (core/fingerprint.ts, core/messageSchema.ts fingerprintSource)', () => {
    it('replays the body re-serialised: keys in another order, other whitespace', async () => {
      const body = validBody({ to: ['ada@example.com', 'bob@example.com'] });
      const first = await api.call(enqueueEvent(body, { key: 'reordered' }));
      expect(first.status).toBe(202);
      const reordered = Object.fromEntries(Object.entries(body).reverse());
      const again = await api.call(enqueueEvent(JSON.stringify(reordered, null, 3), { key: 'reordered' }));
      expect(again.status).toBe(200);
      expect(again.json.id).toBe(first.json.id);
    });

    it('replays a send_at given as the same instant in another offset', async () => {
      const first = await api.call(
        enqueueEvent(validBody({ send_at: '2026-12-01T09:00:00Z' }), { key: 'offset' }),
      );
      const again = await api.call(
        enqueueEvent(validBody({ send_at: '2026-12-01T10:00:00.000+01:00' }), { key: 'offset' }),
      );
      expect([first.status, again.status]).toEqual([202, 200]);
      expect(again.json.send_at).toBe('2026-12-01T09:00:00.000Z');
    });

    it('replays the same delay_seconds retried later, keeping the first send time', async () => {
      const first = await api.call(enqueueEvent(validBody({ delay_seconds: 600 }), { key: 'delay' }));
      api.clock.advance(30_000);
      const again = await api.call(enqueueEvent(validBody({ delay_seconds: 600 }), { key: 'delay' }));
      expect([first.status, again.status]).toEqual([202, 200]);
      expect(again.json.send_at).toBe(first.json.send_at);
    });

    it.each([
      ['another send_at', { send_at: '2026-12-01T09:00:01Z' }],
      ['another recipient', { to: ['bob@example.com'] }],
      ['a recipient moved from to to cc', { to: [], cc: ['ada@example.com'] }],
      ['another delay_seconds', { delay_seconds: 601 }],
    ])(
      'refuses %s under the key with 422 naming it, and leaves the original as it was',
      async (_, change) => {
        const key = `changed-${JSON.stringify(change)}`;
        const first = await api.call(
          enqueueEvent(validBody({ to: ['ada@example.com'], send_at: '2026-12-01T09:00:00Z' }), { key }),
        );
        expect(first.status).toBe(202);
        const before = await itemsOf(String(first.json.id));
        const base = validBody({ to: ['ada@example.com'] });
        const changed =
          'delay_seconds' in change
            ? { ...base, ...change }
            : { ...base, send_at: '2026-12-01T09:00:00Z', ...change };
        const reused = await api.call(enqueueEvent(changed, { key }));
        expect(reused.status).toBe(422);
        expect(reused.json).toMatchObject({ type: REUSED, errors: [{ field: 'Idempotency-Key' }] });
        expect(await itemsOf(String(first.json.id))).toEqual(before);
      },
    );

    it('refuses other template data under the key (422) and replays the same data in another key order', async () => {
      const put = await api.call(
        apiEvent({
          method: 'PUT',
          path: '/v1/templates/welcome',
          body: { subject: 'Hi {{name}}', text: 'Code {{code}}' },
        }),
      );
      expect(put.status).toBe(201);
      const templated = (data: Record<string, unknown>) => ({
        to: ['ada@example.com'],
        from: 'ops@example.com',
        template: { name: 'welcome' },
        data,
      });
      const first = await api.call(enqueueEvent(templated({ name: 'Ada', code: 1 }), { key: 'tpl' }));
      expect(first.status).toBe(202);
      const before = await itemsOf(String(first.json.id));
      const same = await api.call(enqueueEvent(templated({ code: 1, name: 'Ada' }), { key: 'tpl' }));
      expect(same.status).toBe(200);
      const other = await api.call(enqueueEvent(templated({ name: 'Ada', code: 2 }), { key: 'tpl' }));
      expect(other.status).toBe(422);
      expect(other.json).toMatchObject({ type: REUSED });
      expect(await itemsOf(String(first.json.id))).toEqual(before);
    });
  });

  describe('one key across the routes, the outbox helper and tenants', () => {
    it('replays through the single route and the batch route a message the outbox helper wrote, and refuses another body', async () => {
      const now = api.clock.now();
      const parsed = parseEnqueueRequest(validBody(), {
        allowedFrom: ['*@example.com'],
        defaultFrom: 'postdate@example.com',
        maxHorizonDays: 400,
        now,
      });
      if (!parsed.ok) throw new Error(parsed.problem.detail);
      await api.documents.send(
        new TransactWriteCommand({
          TransactItems: buildOutboxTransactItems({
            tableName: api.tableName,
            tenant: 'acme',
            idempotencyKey: 'from-outbox',
            request: parsed.value,
            now,
          }),
        }),
      );
      const id = messageIdFor('acme', 'from-outbox');
      const before = await itemsOf(id);
      const single = await api.call(enqueueEvent(validBody(), { key: 'from-outbox' }));
      expect(single.status).toBe(200);
      expect(single.headers['idempotent-replayed']).toBe('true');
      expect(single.json.id).toBe(id);
      const inBatch = results(await api.call(batch([{ idempotency_key: 'from-outbox', ...validBody() }])));
      expect(inBatch[0]).toMatchObject({ status: 200, replayed: true, message: { id } });
      const other = await api.call(enqueueEvent(validBody({ subject: 'Other' }), { key: 'from-outbox' }));
      expect(other.status).toBe(422);
      expect(await itemsOf(id)).toEqual(before);
    });

    it('replays a batch item through the single route and the other way round', async () => {
      const first = results(await api.call(batch([{ idempotency_key: 'batch-first', ...validBody() }])));
      expect(first[0]?.status).toBe(202);
      const single = await api.call(enqueueEvent(validBody(), { key: 'batch-first' }));
      expect(single.status).toBe(200);
      expect(single.json.id).toBe(first[0]?.message?.id);
      const singleFirst = await api.call(enqueueEvent(validBody(), { key: 'single-first' }));
      const after = results(await api.call(batch([{ idempotency_key: 'single-first', ...validBody() }])));
      expect(after[0]).toMatchObject({ status: 200, replayed: true, message: { id: singleFirst.json.id } });
    });

    it('keeps one key of two tenants apart in the batch route too', async () => {
      const acme = results(await api.call(batch([{ idempotency_key: 'shared', ...validBody() }])));
      const globex = results(
        await api.call(batch([{ idempotency_key: 'shared', ...validBody({ subject: 'Other' }) }], 'globex')),
      );
      expect(acme[0]?.status).toBe(202);
      expect(globex[0]?.status).toBe(202);
      expect(globex[0]?.message?.id).not.toBe(acme[0]?.message?.id);
    });
  });

  describe('a key whose message ended', () => {
    it('replays a cancelled message as it is now (200, cancelled), and refuses another body (422)', async () => {
      const first = await api.call(
        enqueueEvent(validBody({ send_at: '2026-12-02T09:00:00Z' }), { key: 'ended' }),
      );
      const id = String(first.json.id);
      const cancel = apiEvent({
        method: 'DELETE',
        path: `/v1/messages/${id}`,
        routeKey: 'DELETE /v1/messages/{id}',
        pathParameters: { id },
      });
      expect((await api.call(cancel)).status).toBe(200);
      const again = await api.call(
        enqueueEvent(validBody({ send_at: '2026-12-02T09:00:00Z' }), { key: 'ended' }),
      );
      expect(again.status).toBe(200);
      expect(again.json).toMatchObject({ id, status: 'cancelled' });
      const other = await api.call(
        enqueueEvent(validBody({ send_at: '2026-12-03T09:00:00Z' }), { key: 'ended' }),
      );
      expect(other.status).toBe(422);
    });

    it('replays a sent message as sent: nothing is stored or sent again', async () => {
      const body = validBody({ text: LARGE_TEXT });
      const first = await api.call(enqueueEvent(body, { key: 'sent' }));
      const id = String(first.json.id);
      // Its outcome as the sender records it: terminal, the retention clock started.
      await api.documents.send(
        new UpdateCommand({
          TableName: api.tableName,
          Key: { pk: messagePk(id), sk: 'STATE' },
          UpdateExpression: 'SET #status = :sent, expires_at = :expires',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':sent': 'sent',
            ':expires': Math.floor(api.clock.now().getTime() / 1000) + 30 * 86_400,
          },
        }),
      );
      const before = await stateOf(id);
      const again = await api.call(enqueueEvent(body, { key: 'sent' }));
      expect(again.status).toBe(200);
      expect(again.json).toMatchObject({ id, status: 'sent' });
      expect(await stateOf(id)).toEqual(before);
    });
  });

  describe('the key itself (1–255 printable ASCII, an sf-string or bare)', () => {
    it('takes keys differing only in case as two keys', async () => {
      const upper = await api.call(enqueueEvent(validBody(), { key: 'Order-7' }));
      const lower = await api.call(enqueueEvent(validBody({ subject: 'Other' }), { key: 'order-7' }));
      expect([upper.status, lower.status]).toEqual([202, 202]);
      expect(upper.json.id).not.toBe(lower.json.id);
    });

    it('takes a key of 255 characters, the same key quoted replays it, and 256 is a 400', async () => {
      const key = `k${'x'.repeat(254)}`;
      const bare = await api.call(enqueueEvent(validBody(), { key }));
      const quoted = await api.call(enqueueEvent(validBody(), { key: `"${key}"` }));
      expect([bare.status, quoted.status]).toEqual([202, 200]);
      expect(quoted.json.id).toBe(bare.json.id);
      const item = results(await api.call(batch([{ idempotency_key: key, ...validBody() }])));
      expect(item[0]).toMatchObject({ status: 200, message: { id: bare.json.id } });
      expect((await api.call(enqueueEvent(validBody(), { key: `${key}x` }))).status).toBe(400);
    });

    it('refuses a key outside printable ASCII (400) rather than normalising it', async () => {
      for (const key of ['cl\u00e9', 'cle\u0301']) {
        const response = await api.call(enqueueEvent(validBody(), { key }));
        expect(response.status).toBe(400);
        expect(response.json).toMatchObject({ errors: [{ field: 'Idempotency-Key' }] });
      }
    });
  });

  describe('a retry that reaches an api configured otherwise (a deploy between the two)', () => {
    /** The harness's api on the same table, with its config changed as given. */
    const redeployed = (config: { allowedFrom?: string[]; maxHorizonDays?: number }) => {
      const handle = documentedHandler(
        createApiHandler({
          store: api.store,
          templates: new DynamoTemplateStore(api.documents, api.tableName, api.clock.now),
          config: {
            allowedFrom: config.allowedFrom ?? ['*@example.com'],
            defaultFrom: 'postdate@example.com',
            maxHorizonDays: config.maxHorizonDays ?? 400,
            maxAttempts: 8,
            retentionDays: 30,
          },
          now: api.clock.now,
          random: Math.random,
          logger: { info: () => {}, warn: () => {}, error: () => {} },
          sleep: async () => {},
        }),
      );
      return async (event: Parameters<typeof handle>[0]) => {
        const result = await handle(event);
        return {
          status: result.statusCode ?? 0,
          headers: (result.headers ?? {}) as Record<string, string>,
          json: JSON.parse(result.body ?? '{}') as Record<string, unknown>,
        };
      };
    };

    it('replays a message whose sender POSTDATE_ALLOWED_FROM no longer allows (200), through both routes', async () => {
      const body = validBody({ from: 'Ops <ops@example.com>', send_at: '2026-12-03T09:00:00Z' });
      const first = await api.call(enqueueEvent(body, { key: 'sender-removed' }));
      expect(first.status).toBe(202);
      const call = redeployed({ allowedFrom: ['*@example.org'] });
      const again = await call(enqueueEvent(body, { key: 'sender-removed' }));
      expect(again.status).toBe(200);
      expect(again.json.id).toBe(first.json.id);
      const inBatch = results(await call(batch([{ idempotency_key: 'sender-removed', ...body }])));
      expect(inBatch[0]).toMatchObject({ status: 200, replayed: true, message: { id: first.json.id } });
      // A new message from that sender is still refused.
      expect((await call(enqueueEvent(body, { key: 'sender-removed-new' }))).status).toBe(400);
    });

    it('replays a message beyond a horizon since shortened (200)', async () => {
      const body = validBody({ send_at: '2027-09-01T09:00:00Z' });
      const first = await api.call(enqueueEvent(body, { key: 'horizon-cut' }));
      expect(first.status).toBe(202);
      const call = redeployed({ maxHorizonDays: 30 });
      const again = await call(enqueueEvent(body, { key: 'horizon-cut' }));
      expect(again.status).toBe(200);
      expect(again.json.id).toBe(first.json.id);
      expect((await call(enqueueEvent(body, { key: 'horizon-cut-new' }))).status).toBe(400);
    });
  });
});
