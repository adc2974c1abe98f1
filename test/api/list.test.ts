import { beforeAll, describe, expect, it } from 'vitest';
import { decodeListCursor, encodeListCursor } from '../../lambdas/api/routes/messages.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

const list = (query: Record<string, string>, tenant = 'acme') =>
  apiEvent({ method: 'GET', path: '/v1/messages', routeKey: 'GET /v1/messages', query, tenant });

/** Pages through a listing and returns every id in order. */
async function listAll(api: Harness, query: Record<string, string>, tenant = 'acme'): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 50; page++) {
    const response = await api.call(list({ ...query, ...(cursor ? { cursor } : {}) }, tenant));
    expect(response.status).toBe(200);
    const items = response.json.items as { id: string }[];
    ids.push(...items.map((item) => item.id));
    cursor = response.json.next_cursor as string | null;
    if (cursor === null) return ids;
  }
  throw new Error('the listing never ended');
}

describe('GET /v1/messages', () => {
  let api: Harness;
  /** Ids in creation order (one second apart, so newest first is the reverse). */
  const created: string[] = [];
  const cancelled: string[] = [];

  beforeAll(async () => {
    api = await apiHarness();
    for (let i = 0; i < 25; i++) {
      const response = await api.call(enqueueEvent(validBody(), { key: `list-${i}` }));
      created.push(String(response.json.id));
      api.clock.advance(1000);
    }
    for (const id of created.filter((_, i) => i % 3 === 0)) {
      await api.call(
        apiEvent({
          method: 'DELETE',
          path: `/v1/messages/${id}`,
          routeKey: 'DELETE /v1/messages/{id}',
          pathParameters: { id },
        }),
      );
      cancelled.push(id);
    }
    // Another tenant's messages never show up.
    await api.call(enqueueEvent(validBody(), { key: 'other', tenant: 'globex' }));
  });

  it('lists every message of the tenant newest first, 20 by default, with a cursor', async () => {
    const response = await api.call(list({}));
    expect(response.status).toBe(200);
    const items = response.json.items as { id: string }[];
    expect(items.map((item) => item.id)).toEqual([...created].reverse().slice(0, 20));
    expect(typeof response.json.next_cursor).toBe('string');
    expect(items[0]).not.toHaveProperty('history');
  });

  it('pages through everything exactly once, across the index shards', async () => {
    expect(await listAll(api, { limit: '7' })).toEqual([...created].reverse());
    expect(await listAll(api, { limit: '4' })).toEqual([...created].reverse());
  });

  it('filters by status through the by_status index', async () => {
    expect(await listAll(api, { status: 'cancelled', limit: '3' })).toEqual([...cancelled].reverse());
    const scheduled = created.filter((id) => !cancelled.includes(id)).reverse();
    expect(await listAll(api, { status: 'scheduled', limit: '100' })).toEqual(scheduled);
    expect(await listAll(api, { status: 'sent' })).toEqual([]);
  });

  it('answers null next_cursor when the page holds the rest', async () => {
    const response = await api.call(list({ limit: '100' }));
    expect((response.json.items as unknown[]).length).toBe(25);
    expect(response.json.next_cursor).toBeNull();
  });

  it('shows another tenant only its own messages', async () => {
    expect(await listAll(api, {}, 'globex')).toHaveLength(1);
    expect(await listAll(api, {}, 'initech')).toEqual([]);
  });

  it('refuses a cursor issued for another status (400 naming cursor)', async () => {
    const first = await api.call(list({ status: 'scheduled', limit: '2' }));
    const response = await api.call(list({ status: 'cancelled', cursor: String(first.json.next_cursor) }));
    expect(response.status).toBe(400);
    expect(response.json.errors).toEqual([{ field: 'cursor', message: expect.any(String) }]);
  });

  it('goes on from a cursor issued before the tenant mark (0247): a script paging through a deploy loses nothing (decision 0250)', async () => {
    const first = await api.call(list({ limit: '7' }));
    const issued = JSON.parse(
      Buffer.from(String(first.json.next_cursor), 'base64url').toString('utf8'),
    ) as Record<string, unknown>;
    // The cursor as the version before 0247 issued it: {"v":1,"s":…,"p":[…]}, no `t`.
    const { t: _mark, ...before } = issued;
    const cursor = Buffer.from(JSON.stringify(before), 'utf8').toString('base64url');
    const second = await api.call(list({ limit: '7', cursor }));
    expect(second.status).toBe(200);
    const rest = await listAll(api, { limit: '7', cursor });
    const ids = [...(first.json.items as { id: string }[]).map((item) => item.id), ...rest];
    expect(ids).toEqual([...created].reverse());
  });

  it('refuses limits outside 1–100', async () => {
    for (const limit of ['0', '101', '-1', '2.5', 'ten']) {
      const response = await api.call(list({ limit }));
      expect(response.status).toBe(400);
      expect(response.json.errors).toEqual([{ field: 'limit', message: expect.any(String) }]);
    }
  });
});

describe('the list cursor', () => {
  it('round-trips per-shard positions and ends as null', () => {
    const positions = [
      { kind: 'start' as const },
      { kind: 'after' as const, sortKey: '2026-11-29T18:00:00.000Z#01JDQ1T8Z6J5V1Y5M6Z8K4W2QX' },
      { kind: 'done' as const },
    ];
    const scheduled = { tenant: 'acme', status: 'scheduled' as const };
    const cursor = encodeListCursor(scheduled, positions);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeListCursor(String(cursor), scheduled, 3)).toEqual(positions);
    expect(decodeListCursor(String(cursor), { tenant: 'acme', status: null }, 3)).toBeNull();
    expect(decodeListCursor(String(cursor), scheduled, 8)).toBeNull();
    expect(decodeListCursor(String(cursor), { tenant: 'globex', status: 'scheduled' }, 3)).toBeNull();
    expect(decodeListCursor(String(cursor), { tenant: 'acme.test', status: 'scheduled' }, 3)).toBeNull();
    expect(
      encodeListCursor({ tenant: 'acme', status: null }, [{ kind: 'done' }, { kind: 'done' }]),
    ).toBeNull();
  });

  it('rejects a cursor with an injected sort key', () => {
    const listing = { tenant: 'acme', status: null };
    const issued = JSON.parse(
      Buffer.from(String(encodeListCursor(listing, [{ kind: 'start' }])), 'base64url').toString(),
    ) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...issued, p: ['x" OR 1=1'] })).toString('base64url');
    expect(decodeListCursor(forged, listing, 1)).toBeNull();
  });
});
