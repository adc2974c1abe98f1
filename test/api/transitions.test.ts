import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import type { MessageStatus } from '../../lambdas/core/messageStatus.js';
import { DynamoApiStore, fromStatuses } from '../../lambdas/store/apiStore.js';
import { byStatusPk, duePk, groupHeadPk, messagePk } from '../../lambdas/store/messageRecord.js';
import { expireAsTtlWould } from '../store/ttlSweep.js';
import { bodyUpdatesFailing } from '../support/failingBodyWrites.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

let keys = 0;
async function enqueued(
  api: Harness,
  overrides: Record<string, unknown> = {},
  tenant = 'acme',
): Promise<string> {
  keys += 1;
  const response = await api.call(enqueueEvent(validBody(overrides), { key: `t-${keys}`, tenant }));
  expect(response.status).toBe(202);
  return String(response.json.id);
}

/** Puts a record into a status as the sender would (the API never writes these). */
async function forceStatus(api: Harness, id: string, status: MessageStatus): Promise<void> {
  await api.documents.send(
    new UpdateCommand({
      TableName: api.tableName,
      Key: { pk: messagePk(id), sk: 'STATE' },
      UpdateExpression: 'SET #status = :status, lst_pk = :lst REMOVE due_pk, due_at',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':status': status, ':lst': byStatusPk('acme', status, id) },
    }),
  );
}

async function state(api: Harness, id: string) {
  const { Item } = await api.documents.send(
    new GetCommand({ TableName: api.tableName, Key: { pk: messagePk(id), sk: 'STATE' } }),
  );
  return Item ?? {};
}

const at = (
  method: string,
  path: string,
  routeKey: string,
  params: Record<string, string>,
  body?: unknown,
  tenant = 'acme',
) => apiEvent({ method, path, routeKey, pathParameters: params, body, tenant });
const cancel = (id: string, tenant = 'acme') =>
  at('DELETE', `/v1/messages/${id}`, 'DELETE /v1/messages/{id}', { id }, undefined, tenant);
const reschedule = (id: string, sendAt: string) =>
  at('PATCH', `/v1/messages/${id}`, 'PATCH /v1/messages/{id}', { id }, { send_at: sendAt });
const retry = (id: string) => at('POST', `/v1/messages/${id}/retry`, 'POST /v1/messages/{id}/retry', { id });
const raise = (key: string, version: number) =>
  at('PUT', `/v1/groups/${key}`, 'PUT /v1/groups/{key}', { key }, { version });

describe('the API follows the state machine', () => {
  it('takes its conditions from lambdas/core/stateMachine.ts', () => {
    expect(fromStatuses('cancel')).toEqual(['scheduled', 'retrying']);
    expect(fromStatuses('reschedule')).toEqual(['scheduled']);
    expect(fromStatuses('manual-retry')).toEqual(['failed', 'dead', 'unknown']);
  });
});

describe('DELETE /v1/messages/{id} (cancel)', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  it('cancels a scheduled message: 200, terminal, out of the due index, TTL set', async () => {
    const id = await enqueued(api);
    const response = await api.call(cancel(id));
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ id, status: 'cancelled', rev: 1 });
    const record = await state(api, id);
    expect(record).toMatchObject({ status: 'cancelled', lst_pk: byStatusPk('acme', 'cancelled', id) });
    expect(record).not.toHaveProperty('due_pk');
    expect(record).not.toHaveProperty('due_at');
    expect(record.expires_at).toBe(Math.floor(Date.parse('2026-11-29T18:00:00Z') / 1000) + 30 * 86_400);
  });

  it('cancels a retrying message', async () => {
    const id = await enqueued(api);
    await forceStatus(api, id, 'retrying');
    expect((await api.call(cancel(id))).status).toBe(200);
  });

  it.each(['sending', 'sent', 'failed', 'cancelled'] as const)(
    'answers 409 with the current status when the message is %s, changing nothing',
    async (status) => {
      const id = await enqueued(api);
      await forceStatus(api, id, status);
      const before = await state(api, id);
      const response = await api.call(cancel(id));
      expect(response.status).toBe(409);
      expect(response.headers['content-type']).toBe('application/problem+json');
      expect(response.json).toMatchObject({
        current_status: status,
        type: 'urn:postdate:problem:status-conflict',
      });
      expect(String(response.json.detail)).toContain(status);
      expect(await state(api, id)).toEqual(before);
    },
  );

  it("answers 404 for another tenant's message and leaves it alone", async () => {
    const id = await enqueued(api);
    expect((await api.call(cancel(id, 'globex'))).status).toBe(404);
    expect((await state(api, id)).status).toBe('scheduled');
  });

  it('lets exactly one of two racing cancels win; the other gets 409 cancelled', async () => {
    const id = await enqueued(api);
    const [a, b] = await Promise.all([api.call(cancel(id)), api.call(cancel(id))]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    expect((a.status === 409 ? a : b).json.current_status).toBe('cancelled');
  });
});

describe('PATCH /v1/messages/{id} (reschedule)', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  it('moves send_at and due_at and bumps rev', async () => {
    const id = await enqueued(api, { send_at: '2026-12-01T09:00:00Z' });
    const response = await api.call(reschedule(id, '2026-12-02T09:00:00+01:00'));
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ status: 'scheduled', send_at: '2026-12-02T08:00:00.000Z', rev: 2 });
    expect(await state(api, id)).toMatchObject({
      due_at: '2026-12-02T08:00:00.000Z',
      due_pk: duePk(id),
      rev: 2,
    });
  });

  it('treats a past send_at as now', async () => {
    const id = await enqueued(api, { send_at: '2026-12-01T09:00:00Z' });
    const response = await api.call(reschedule(id, '2020-01-01T00:00:00Z'));
    expect(response.json.send_at).toBe('2026-11-29T18:00:00.000Z');
  });

  it('answers 409 when the message is no longer scheduled', async () => {
    const id = await enqueued(api);
    await forceStatus(api, id, 'sending');
    const response = await api.call(reschedule(id, '2026-12-02T09:00:00Z'));
    expect(response.status).toBe(409);
    expect(response.json.current_status).toBe('sending');
    expect((await state(api, id)).rev).toBe(1);
  });

  it('refuses a send_at at or after the message not_after (400 naming /send_at)', async () => {
    const id = await enqueued(api, { send_at: '2026-12-01T09:00:00Z', not_after: '2026-12-01T10:00:00Z' });
    const response = await api.call(reschedule(id, '2026-12-01T10:00:00Z'));
    expect(response.status).toBe(400);
    expect(response.json.errors).toEqual([{ field: '/send_at', message: expect.any(String) }]);
    expect((await state(api, id)).rev).toBe(1);
  });

  it('answers 404 for an unknown id', async () => {
    expect((await api.call(reschedule('01JDQ1T8Z6J5V1Y5M6Z8K4W2QX', '2026-12-02T09:00:00Z'))).status).toBe(
      404,
    );
  });

  it('lets a cancel and a reschedule race: exactly one wins', async () => {
    const id = await enqueued(api);
    const [cancelled, moved] = await Promise.all([
      api.call(cancel(id)),
      api.call(reschedule(id, '2026-12-05T00:00:00Z')),
    ]);
    const final = await state(api, id);
    if (cancelled.status === 200) {
      // Either the reschedule came first (and then the cancel), or it lost with 409.
      expect(final.status).toBe('cancelled');
      expect([200, 409]).toContain(moved.status);
    } else {
      expect(cancelled.status).toBe(409);
      expect(moved.status).toBe(200);
    }
  });
});

describe('POST /v1/messages/{id}/retry (manual retry)', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  it.each(['failed', 'dead', 'unknown'] as const)(
    'schedules a %s message again now: 202, rev + 1, due again',
    async (status) => {
      const id = await enqueued(api, { send_at: '2026-12-01T09:00:00Z' });
      await forceStatus(api, id, status);
      api.clock.set('2026-12-03T12:00:00.000Z');
      const response = await api.call(retry(id));
      expect(response.status).toBe(202);
      expect(response.json).toMatchObject({
        status: 'scheduled',
        rev: 2,
        send_at: '2026-12-03T12:00:00.000Z',
      });
      expect(await state(api, id)).toMatchObject({
        lst_pk: byStatusPk('acme', 'scheduled', id),
        due_pk: duePk(id),
        due_at: '2026-12-03T12:00:00.000Z',
      });
      api.clock.set('2026-11-29T18:00:00.000Z');
    },
  );

  it.each(['scheduled', 'sending', 'sent', 'cancelled'] as const)(
    'answers 409 for a %s message',
    async (status) => {
      const id = await enqueued(api);
      if (status !== 'scheduled') await forceStatus(api, id, status);
      const response = await api.call(retry(id));
      expect(response.status).toBe(409);
      expect(response.json.current_status).toBe(status);
    },
  );
});

describe('groups and freshness', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  const head = async (key: string, tenant = 'acme') =>
    (
      await api.documents.send(
        new GetCommand({ TableName: api.tableName, Key: { pk: groupHeadPk(tenant, key), sk: 'HEAD' } }),
      )
    ).Item;

  it('raises the group head in the enqueue transaction', async () => {
    await enqueued(api, { group: { key: 'campaign:1', version: 3 } });
    expect(await head('campaign:1')).toMatchObject({ version: 3 });
    await enqueued(api, { group: { key: 'campaign:1', version: 5 } });
    expect((await head('campaign:1'))?.version).toBe(5);
  });

  it('stores an enqueue older than the head as superseded at once (terminal, never due)', async () => {
    await enqueued(api, { group: { key: 'campaign:2', version: 7 } });
    const response = await api.call(
      enqueueEvent(validBody({ group: { key: 'campaign:2', version: 6 } }), { key: 'stale-1' }),
    );
    expect(response.status).toBe(202);
    expect(response.json).toMatchObject({ status: 'superseded', group: { key: 'campaign:2', version: 6 } });
    const record = await state(api, String(response.json.id));
    expect(record).toMatchObject({ lst_pk: byStatusPk('acme', 'superseded', String(response.json.id)) });
    expect(record).not.toHaveProperty('due_pk');
    expect(typeof record.expires_at).toBe('number');
    expect((await head('campaign:2'))?.version).toBe(7);
  });

  it('keeps an enqueue equal to the head scheduled', async () => {
    await enqueued(api, { group: { key: 'campaign:3', version: 2 } });
    const response = await api.call(
      enqueueEvent(validBody({ group: { key: 'campaign:3', version: 2 } }), { key: 'equal-1' }),
    );
    expect(response.json.status).toBe('scheduled');
  });

  it('PUT /v1/groups/{key} raises the head without mail, and never lowers it', async () => {
    const before = (await api.scanAll()).filter((item) => item.sk === 'STATE').length;
    const raised = await api.call(raise('campaign:4', 9));
    expect(raised.status).toBe(200);
    expect(raised.json).toEqual({ key: 'campaign:4', version: 9, updated_at: '2026-11-29T18:00:00.000Z' });
    const lower = await api.call(raise('campaign:4', 4));
    expect(lower.status).toBe(200);
    expect(lower.json.version).toBe(9);
    expect((await api.scanAll()).filter((item) => item.sk === 'STATE')).toHaveLength(before);
    const stale = await api.call(
      enqueueEvent(validBody({ group: { key: 'campaign:4', version: 8 } }), { key: 'after-pause' }),
    );
    expect(stale.json.status).toBe('superseded');
  });

  it('keeps group heads per tenant', async () => {
    await api.call(raise('shared-group', 100));
    const theirs = await enqueued(api, { group: { key: 'shared-group', version: 1 } }, 'globex');
    const record = await state(api, theirs);
    expect(record.status).toBe('scheduled');
    expect((await head('shared-group', 'globex'))?.version).toBe(1);
  });

  it('stays consistent when enqueues of one group race: the head is the highest version', async () => {
    const versions = [4, 9, 2, 7, 5, 8, 1, 6, 3, 10];
    const responses = await Promise.all(
      versions.map((version) =>
        api.call(
          enqueueEvent(validBody({ group: { key: 'race-group', version } }), { key: `rg-${version}` }),
        ),
      ),
    );
    expect(responses.every((response) => response.status === 202)).toBe(true);
    expect((await head('race-group'))?.version).toBe(10);
    const scheduled = responses.filter((response) => response.json.status === 'scheduled');
    // The highest version is always scheduled; whatever is superseded is older than some stored head.
    expect(scheduled.map((response) => (response.json.group as { version: number }).version)).toContain(10);
  });
});

describe('the body lives as long as the message needs it', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });
  /** The body with its TTL: the body item, or a small message's body inside its state record, whose TTL is the record's. */
  const body = async (id: string) => {
    const read = async (sk: string) =>
      (await api.documents.send(new GetCommand({ TableName: api.tableName, Key: { pk: messagePk(id), sk } })))
        .Item;
    const state = await read('STATE');
    if (state?.body !== undefined) return { ...state.body, expires_at: state.expires_at };
    return (await read('BODY')) ?? {};
  };

  it('gives a scheduled message no TTL on its body, however far it is rescheduled', async () => {
    const id = await enqueued(api, { send_at: '2026-12-01T09:00:00Z' });
    expect((await body(id)).expires_at).toBeUndefined();
    expect((await api.call(reschedule(id, '2027-11-01T09:00:00.000Z'))).status).toBe(200);
    expect((await body(id)).expires_at).toBeUndefined();
    expect((await state(api, id)).expires_at).toBeUndefined();
  });

  it('gives a manually retried message no TTL, neither its state nor its body', async () => {
    const id = await enqueued(api, { send_at: '2026-12-01T09:00:00Z' });
    await forceStatus(api, id, 'failed');
    api.clock.advance(60 * 86_400_000);
    expect((await api.call(retry(id))).status).toBe(202);
    expect((await body(id)).expires_at).toBeUndefined();
    expect((await state(api, id)).expires_at).toBeUndefined();
  });

  it("lets a cancelled message's body go with its state record (privacy)", async () => {
    const id = await enqueued(api, { send_at: '2027-06-01T09:00:00Z' });
    expect((await api.call(cancel(id))).status).toBe(200);
    const stateTtl = (await state(api, id)).expires_at;
    expect(stateTtl).toBe(Math.floor(api.clock.now().getTime() / 1000) + 30 * 86_400);
    expect((await body(id)).expires_at).toBe(stateTtl);
  });
});

/**
 * DESIGN §2 and §8: a cancelled message's records are kept for the retention, then go — the body with
 * them — and docs/api.md: its key then names a new message again. The body's TTL is its own write
 * after the cancel's; when that one fails (a throttle past the SDK's retries) the client sees a 503
 * for a cancel that happened, and its retry must finish the body's TTL (decision 0145).
 */
describe("a cancel whose body write failed is finished by the client's retry", () => {
  it('answers 409 to the retry, gives the body its record’s TTL, and both go with the retention: the key is free again', async () => {
    const faulty = bodyUpdatesFailing(1);
    const api = await apiHarness({
      wrapStore: (store) => new DynamoApiStore(faulty.documents, (store as DynamoApiStore).tableName),
    });
    const request = validBody({ send_at: '2027-06-01T09:00:00Z', text: mailText(20 * 1024), html: null });
    const enqueue = () => api.call(enqueueEvent(request, { key: 'cancel-body-once' }));
    const first = await enqueue();
    expect(first.status).toBe(202);
    const id = String(first.json.id);
    const bodyTtl = async () =>
      (
        await api.documents.send(
          new GetCommand({
            TableName: api.tableName,
            Key: { pk: messagePk(id), sk: 'BODY' },
            ConsistentRead: true,
          }),
        )
      ).Item?.expires_at;
    expect(await bodyTtl()).toBeUndefined();

    expect((await api.call(cancel(id))).status).toBe(503);
    expect(faulty.failed()).toBe(1);
    const stateTtl = (await state(api, id)).expires_at;
    expect([(await state(api, id)).status, stateTtl]).toEqual(['cancelled', expect.any(Number)]);
    expect(await bodyTtl()).toBeUndefined();

    const again = await api.call(cancel(id));
    expect(again.status).toBe(409);
    expect(await bodyTtl()).toBe(stateTtl);

    api.clock.advance(31 * 86_400_000);
    const gone = await expireAsTtlWould(api.documents, api.tableName, api.clock.now());
    expect(gone.map((key) => key.sk).sort()).toEqual(['BODY', 'STATE']);
    const reused = await enqueue();
    expect([reused.status, reused.json.id, reused.json.status]).toEqual([202, id, 'scheduled']);
  });
});
