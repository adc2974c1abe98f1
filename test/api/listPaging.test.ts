/**
 * Listing and reading messages as an operator's script does it (DESIGN §3's GET, PATCH, DELETE and
 * `GET /v1/messages?status=&limit=&cursor=`, §14's two sides): over real HTTP through the local
 * front end (local/http/httpFrontEnd.ts), the real authorizer on real keys, and the api handler
 * on DynamoDB Local. Covers lambdas/api/routes/messages.ts, lambdas/store/apiStore.ts
 * (`listMessages`) and lambdas/store/messageView.ts. Decision 0247.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthorizerHandler } from '../../lambdas/authorizer/createAuthorizerHandler.js';
import { messageIdFor } from '../../lambdas/core/ids.js';
import { MESSAGE_STATUSES, type MessageStatus } from '../../lambdas/core/messageStatus.js';
import { createApiKey, lookupApiKey } from '../../lambdas/keys/apiKeys.js';
import { byStatusPk, messagePk, shardOf } from '../../lambdas/store/messageRecord.js';
import { INDEX_SHARDS, ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { type HttpFrontEnd, startHttpFrontEnd } from '../../local/http/httpFrontEnd.js';
import { apiHarness } from './apiHarness.js';
import { validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;
interface Answer {
  readonly status: number;
  readonly type: string | null;
  readonly json: Record<string, unknown>;
}
interface Page {
  readonly items: { id: string; status: string }[];
  readonly next_cursor: string | null;
}

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

let api: Harness;
let http: HttpFrontEnd;
/** The keys of tenant acme (live and test side) and of tenant globex. */
const keys = { acme: '', acmeTest: '', globex: '' };
let enqueued = 0;

beforeAll(async () => {
  api = await apiHarness();
  const now = new Date();
  keys.acme = (await createApiKey(api.documents, api.tableName, { tenant: 'acme', now })).secret;
  keys.acmeTest = (
    await createApiKey(api.documents, api.tableName, { tenant: 'acme', test: true, now })
  ).secret;
  keys.globex = (await createApiKey(api.documents, api.tableName, { tenant: 'globex', now })).secret;
  const authorizer = createAuthorizerHandler({
    lookup: (secret) => lookupApiKey(api.documents, api.tableName, secret),
    now: () => new Date(),
    logger: quiet,
  });
  http = await startHttpFrontEnd({
    port: 0,
    api: (event) => api.handle(event as Parameters<typeof api.handle>[0]),
    authorizer,
  });
});

afterAll(async () => {
  await http?.stop();
});

async function send(method: string, path: string, key: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`${http.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

/**
 * Enqueues one message an hour ahead (the harness clock moves a millisecond, so each is newer);
 * `idempotencyKey` chooses its id (derived from tenant and key), and so its index shard.
 */
async function enqueue(
  key: string,
  overrides: Record<string, unknown> = {},
  idempotencyKey = `paging-${++enqueued}`,
): Promise<string> {
  api.clock.advance(1);
  const sendAt = new Date(api.clock.now().getTime() + 3_600_000).toISOString();
  const response = await fetch(`${http.url}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
    },
    body: JSON.stringify(validBody({ send_at: sendAt, ...overrides })),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { id: string }).id;
}

async function page(key: string, query: Record<string, string>): Promise<Page> {
  const answer = await send('GET', `/v1/messages?${new URLSearchParams(query)}`, key);
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return answer.json as unknown as Page;
}

/** Puts a message in a status by hand, as the sender or a transition would have left it. */
async function putStatus(id: string, status: MessageStatus, tenant = 'acme'): Promise<void> {
  await api.documents.send(
    new UpdateCommand({
      TableName: api.tableName,
      Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState },
      UpdateExpression: 'SET #status = :status, lst_pk = :lst_pk',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':status': status, ':lst_pk': byStatusPk(tenant, status, id) },
    }),
  );
}

const cancel = (id: string, key = keys.acme) => send('DELETE', `/v1/messages/${id}`, key);

function expectProblem(answer: Answer, status: number, field?: string, asked = ''): void {
  expect(answer.status, `${asked} ${JSON.stringify(answer.json)}`.trim()).toBe(status);
  expect(answer.type).toBe('application/problem+json');
  if (field !== undefined)
    expect((answer.json.errors as { field: string }[]).map((error) => error.field)).toEqual([field]);
}

describe('paging while mail is enqueued and changes status', () => {
  it('lists every message that existed at the first page exactly once, newest first, and none enqueued after it', async () => {
    const before: string[] = [];
    for (let i = 0; i < 23; i++) before.push(await enqueue(keys.acme));
    const newestFirst = [...before].reverse();
    const seen: string[] = [];
    const arrived: string[] = [];
    let cursor: string | null = null;
    for (let turn = 0; turn < 20; turn++) {
      const next: Page = await page(keys.acme, { limit: '9', ...(cursor ? { cursor } : {}) });
      seen.push(...next.items.map((item) => item.id));
      // Between pages: a new message arrives, one already seen and one not yet seen are cancelled.
      arrived.push(await enqueue(keys.acme));
      const unseen = newestFirst.find((id) => !seen.includes(id));
      if (unseen !== undefined) expect((await cancel(unseen)).status).toBe(200);
      const seenOne = seen[seen.length - 1];
      if (seenOne !== undefined) await cancel(seenOne);
      cursor = next.next_cursor;
      if (cursor === null) break;
    }
    expect(cursor).toBeNull();
    expect(seen).toEqual(newestFirst);
    expect(seen.filter((id) => arrived.includes(id))).toEqual([]);
  });

  it('does not list, on the next page, a message enqueued into a shard that had nothing on the page before', async () => {
    const tenant = 'initech';
    const key = (await createApiKey(api.documents, api.tableName, { tenant, now: new Date() })).secret;
    const older: string[] = [];
    for (let i = 0; i < 6; i++) older.push(await enqueue(key, {}, `initech-${i}`));
    const first = await page(key, { limit: '2' });
    const shard = (id: string) => shardOf(id, INDEX_SHARDS.byTenant);
    const onPage = new Set(first.items.map((item) => shard(item.id)));
    // A new message in a shard that holds older ones but had none on the first page (an empty shard
    // is done at once); the shard of an id is fixed.
    const waiting = new Set(older.map(shard).filter((s) => !onPage.has(s)));
    expect(waiting.size).toBeGreaterThan(0);
    let n = 0;
    while (!waiting.has(shard(messageIdFor(tenant, `initech-new-${n}`)))) n++;
    const arrived = await enqueue(key, {}, `initech-new-${n}`);
    const rest: string[] = [];
    let cursor = first.next_cursor;
    while (cursor !== null) {
      const next: Page = await page(key, { limit: '2', cursor });
      rest.push(...next.items.map((item) => item.id));
      cursor = next.next_cursor;
    }
    expect(rest).not.toContain(arrived);
    expect([...first.items.map((item) => item.id), ...rest]).toEqual([...older].reverse());
  });

  it('by status: a message that leaves the status before its page is not listed, and none is listed twice or in another status', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 17; i++) ids.push(await enqueue(keys.globex));
    const seen: Page['items'] = [];
    const left: string[] = [];
    let cursor: string | null = null;
    for (let turn = 0; turn < 20; turn++) {
      const next: Page = await page(keys.globex, {
        status: 'scheduled',
        limit: '3',
        ...(cursor ? { cursor } : {}),
      });
      seen.push(...next.items);
      const unseen = [...ids]
        .reverse()
        .find((id) => !seen.some((item) => item.id === id) && !left.includes(id));
      if (unseen !== undefined) {
        await cancel(unseen, keys.globex);
        left.push(unseen);
      }
      cursor = next.next_cursor;
      if (cursor === null) break;
    }
    expect(seen.every((item) => item.status === 'scheduled')).toBe(true);
    const seenIds = seen.map((item) => item.id);
    expect(new Set(seenIds).size).toBe(seenIds.length);
    expect(seenIds).toEqual([...ids].reverse().filter((id) => !left.includes(id)));
  });
});

describe('limit and cursor', () => {
  it('takes 1 and 100, and an empty limit as the default, like an empty status or cursor', async () => {
    expect((await page(keys.acme, { limit: '1' })).items).toHaveLength(1);
    expect((await page(keys.acme, { limit: '100' })).items.length).toBeGreaterThan(20);
    expect((await page(keys.acme, { status: '', limit: '', cursor: '' })).items).toHaveLength(20);
  });

  it('refuses limits beyond the bounds or not whole, naming limit', async () => {
    for (const limit of ['0', '101', '-1', '1e2', '2.5', ' 5', '+5', '0x10', '99999']) {
      expectProblem(
        await send('GET', `/v1/messages?limit=${encodeURIComponent(limit)}`, keys.acme),
        400,
        'limit',
      );
    }
  });

  it('refuses a tampered cursor with a 400 naming cursor, never a 500', async () => {
    const { next_cursor: cursor } = await page(keys.acme, { limit: '2' });
    const decoded = JSON.parse(Buffer.from(String(cursor), 'base64url').toString('utf8')) as Record<
      string,
      unknown
    >;
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
    const positions = decoded.p as unknown[];
    const tampered = [
      'not-a-cursor',
      '%%%',
      `${String(cursor)}x`,
      String(cursor).slice(0, -3),
      encode({ ...decoded, v: 2 }),
      encode({ ...decoded, p: positions.slice(1) }),
      encode({ ...decoded, p: positions.map(() => 'yesterday#x') }),
      encode({ ...decoded, p: positions.map(() => '2026-11-29T18:00:00.000Z#a/b') }),
      encode({ ...decoded, p: positions.map(() => 1) }),
      encode([1, 2]),
      encode('text'),
      'A'.repeat(5000),
    ];
    for (const bad of tampered) {
      const answer = await send('GET', `/v1/messages?limit=2&cursor=${encodeURIComponent(bad)}`, keys.acme);
      expectProblem(answer, 400, 'cursor', bad);
    }
  });

  it("refuses another tenant's cursor, and one from the other side of test mode, naming cursor", async () => {
    await enqueue(keys.acmeTest);
    await enqueue(keys.acmeTest);
    await enqueue(keys.acmeTest);
    const acme = (await page(keys.acme, { limit: '1' })).next_cursor;
    const globex = (await page(keys.globex, { limit: '1' })).next_cursor;
    const acmeTest = (await page(keys.acmeTest, { limit: '1' })).next_cursor;
    for (const [key, cursor] of [
      [keys.globex, acme],
      [keys.acme, globex],
      [keys.acme, acmeTest],
      [keys.acmeTest, acme],
    ] as const) {
      expectProblem(await send('GET', `/v1/messages?limit=1&cursor=${String(cursor)}`, key), 400, 'cursor');
    }
    // Its own side's cursor goes on.
    expect((await page(keys.acmeTest, { limit: '1', cursor: String(acmeTest) })).items).toHaveLength(1);
  });

  it('goes on from a cursor whose last message has since ended its retention and is gone', async () => {
    const first = await page(keys.acme, { limit: '2' });
    const second = await page(keys.acme, { limit: '2', cursor: String(first.next_cursor) });
    const last = first.items[1]?.id ?? '';
    await api.documents.send(
      new UpdateCommand({
        TableName: api.tableName,
        Key: { [KEY.partition]: messagePk(last), [KEY.sort]: ITEM_SORT_KEY.messageState },
        UpdateExpression: 'SET expires_at = :past',
        ExpressionAttributeValues: { ':past': 1 },
      }),
    );
    expect((await page(keys.acme, { limit: '2', cursor: String(first.next_cursor) })).items).toEqual(
      second.items,
    );
    expectProblem(await send('GET', `/v1/messages/${last}`, keys.acme), 404);
  });
});

describe('filters', () => {
  it('answers every status, and only messages in it', async () => {
    const id = await enqueue(keys.acme);
    for (const status of MESSAGE_STATUSES) {
      await putStatus(id, status);
      const listed = await page(keys.acme, { status, limit: '100' });
      expect(listed.items.every((item) => item.status === status)).toBe(true);
      expect(listed.items.map((item) => item.id)).toContain(id);
    }
    await putStatus(id, 'scheduled');
  });

  it('refuses an unknown status, naming status', async () => {
    for (const status of ['SENT', 'delivered', 'sent,failed', 'sent ']) {
      expectProblem(
        await send('GET', `/v1/messages?status=${encodeURIComponent(status)}`, keys.acme),
        400,
        'status',
      );
    }
    expectProblem(await send('GET', '/v1/messages?status=sent&status=failed', keys.acme), 400, 'status');
  });

  it('refuses a filter it does not have (a time range, a tag), naming the parameter, rather than listing everything', async () => {
    for (const parameter of ['created_after', 'since', 'until', 'tags.kind', 'kind', 'statuss', 'page']) {
      expectProblem(await send('GET', `/v1/messages?${parameter}=2026-12-01`, keys.acme), 400, parameter);
    }
    // A name that is not a parameter's (an address a script put in the query) is never echoed or logged.
    expectProblem(await send('GET', '/v1/messages?ada@example.com', keys.acme), 400, 'query');
    expect(JSON.stringify(api.logs)).not.toContain('ada@example.com');
  });
});

describe('one message', () => {
  it("answers another tenant's id, and the other side's, exactly as an id never seen: 404", async () => {
    const id = await enqueue(keys.acme);
    const never = `${'0'.repeat(25)}1`;
    const unseen = await send('GET', `/v1/messages/${never}`, keys.globex);
    expectProblem(unseen, 404);
    for (const key of [keys.globex, keys.acmeTest]) {
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { send_at: new Date(Date.now() + 7_200_000).toISOString() }],
        ['DELETE', undefined],
        ['POST', undefined],
      ] as const) {
        const path = method === 'POST' ? `/v1/messages/${id}/retry` : `/v1/messages/${id}`;
        const answer = await send(method, path, key, body);
        expectProblem(answer, 404);
        expect(JSON.stringify(answer.json)).not.toContain(id);
        expect(answer.json).toEqual(
          method === 'GET' ? unseen.json : { ...answer.json, detail: expect.any(String) },
        );
      }
    }
    expect((await send('GET', `/v1/messages/${id}`, keys.acme)).json).toMatchObject({
      id,
      status: 'scheduled',
    });
  });

  it("answers DESIGN's fields, exactly, in a listing and on GET (with history)", async () => {
    const id = await enqueue(keys.acme);
    const designed = [
      'id',
      'status',
      'send_at',
      'not_after',
      'created_at',
      'updated_at',
      'attempts',
      'last_error',
      'provider_message_id',
      'relay',
      'recipients',
      'template',
      'attachments',
      'test',
      'group',
      'tags',
      'metadata',
      'rev',
      // §16
      'send_at_local',
      'time_zone',
      'quiet_hours',
    ].sort();
    const listed = (await page(keys.acme, { limit: '100' })).items.find((item) => item.id === id);
    expect(Object.keys(listed ?? {}).sort()).toEqual(designed);
    const one = (await send('GET', `/v1/messages/${id}`, keys.acme)).json;
    expect(Object.keys(one).sort()).toEqual([...designed, 'history'].sort());
    expect(Object.keys(one.recipients as object).sort()).toEqual([
      'accepted',
      'pending',
      'rejected',
      'suppressed',
    ]);
  });

  it('reschedules within the bounds: a past time is now, past the horizon or not_after is 400 naming the field', async () => {
    const id = await enqueue(keys.acme, {
      not_after: new Date(api.clock.now().getTime() + 10 * 3_600_000).toISOString(),
    });
    const now = api.clock.now().getTime();
    const past = await send('PATCH', `/v1/messages/${id}`, keys.acme, {
      send_at: new Date(now - 60_000).toISOString(),
    });
    expect(past.status).toBe(200);
    expect(Date.parse(String(past.json.send_at))).toBe(now);
    for (const [body, field] of [
      [{ send_at: new Date(now + 11 * 3_600_000).toISOString() }, '/send_at'],
      [{ send_at: 'tomorrow' }, '/send_at'],
      [{ send_at: '2026-02-30T09:00:00Z' }, '/send_at'],
      [{}, undefined],
      [{ send_at: new Date(now).toISOString(), status: 'sent' }, '/status'],
    ] as const) {
      const answer = await send('PATCH', `/v1/messages/${id}`, keys.acme, body);
      expectProblem(answer, 400);
      if (field !== undefined)
        expect((answer.json.errors as { field: string }[]).map((error) => error.field)).toContain(field);
    }
    expect((await send('GET', `/v1/messages/${id}`, keys.acme)).json.rev).toBe(2);
    const free = await enqueue(keys.acme);
    const far = { send_at: new Date(now + 401 * 86_400_000).toISOString() };
    expectProblem(await send('PATCH', `/v1/messages/${free}`, keys.acme, far), 400, '/send_at');
  });

  it('cancels a scheduled or retrying message (200) and answers 409 with current_status for every other status; PATCH only a scheduled one', async () => {
    for (const status of MESSAGE_STATUSES) {
      const id = await enqueue(keys.acme);
      await putStatus(id, status);
      const patched = await send('PATCH', `/v1/messages/${id}`, keys.acme, {
        send_at: new Date(api.clock.now().getTime() + 7_200_000).toISOString(),
      });
      const cancelled = await cancel(id);
      if (status === 'scheduled') expect(patched.status).toBe(200);
      else {
        expectProblem(patched, 409);
        expect(patched.json.current_status).toBe(status);
      }
      if (status === 'scheduled' || status === 'retrying') {
        expect(cancelled.status).toBe(200);
        expect(cancelled.json.status).toBe('cancelled');
      } else {
        expectProblem(cancelled, 409);
        expect(cancelled.json.current_status).toBe(status);
      }
    }
  });
});
