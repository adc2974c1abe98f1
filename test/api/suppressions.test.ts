import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoSuppressionList } from '../../lambdas/store/suppressionList.js';
import { stateRecord } from '../cli/cliFixtures.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent } from './events.js';

/**
 * DESIGN §3 and §12: `GET /v1/suppressions?cursor=`, `PUT /v1/suppressions/{address}` `{reason?}`,
 * `DELETE /v1/suppressions/{address}` — this tenant's list only, addresses stored normalised,
 * problem+json naming the field for bad input, nothing written by a refused request.
 */

type Api = Awaited<ReturnType<typeof apiHarness>>;

const put = (api: Api, address: string, options: { body?: unknown; tenant?: string } = {}) =>
  api.call(
    apiEvent({
      method: 'PUT',
      path: `/v1/suppressions/${encodeURIComponent(address)}`,
      routeKey: 'PUT /v1/suppressions/{address}',
      pathParameters: { address },
      ...(options.body === undefined ? {} : { body: options.body }),
      ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
    }),
  );

const remove = (api: Api, address: string, tenant?: string) =>
  api.call(
    apiEvent({
      method: 'DELETE',
      path: `/v1/suppressions/${encodeURIComponent(address)}`,
      routeKey: 'DELETE /v1/suppressions/{address}',
      pathParameters: { address },
      ...(tenant === undefined ? {} : { tenant }),
    }),
  );

const list = (api: Api, query: Record<string, string> = {}, tenant?: string) =>
  api.call(
    apiEvent({
      method: 'GET',
      path: '/v1/suppressions',
      routeKey: 'GET /v1/suppressions',
      query,
      ...(tenant === undefined ? {} : { tenant }),
    }),
  );

const suppressionItems = async (api: Api) =>
  (await api.scanAll()).filter((item) => String(item.pk).startsWith('SUPP#'));

describe('the suppression routes', () => {
  it('adds an address normalised, answers 200 with the entry, and lists it', async () => {
    const api = await apiHarness();
    const added = await put(api, 'Ada@Example.COM');
    expect(added.status).toBe(200);
    expect(added.json).toEqual({
      address: 'ada@example.com',
      reason: 'manual',
      message_id: null,
      created_at: '2026-11-29T18:00:00.000Z',
    });
    const withReason = await put(api, 'bob@example.com', { body: { reason: 'complaint' } });
    expect(withReason).toMatchObject({
      status: 200,
      json: { address: 'bob@example.com', reason: 'complaint' },
    });

    const page = await list(api);
    expect(page.status).toBe(200);
    expect(page.json).toEqual({
      items: [
        expect.objectContaining({ address: 'ada@example.com', reason: 'manual' }),
        expect.objectContaining({ address: 'bob@example.com', reason: 'complaint' }),
      ],
      next_cursor: null,
    });
  });

  it('is idempotent: a repeated PUT keeps the entry; a given reason replaces its reason only', async () => {
    const api = await apiHarness();
    await put(api, 'ada@example.com', { body: { reason: 'complaint' } });
    api.clock.advance(60_000);
    const again = await put(api, 'ADA@example.com');
    expect(again.json).toEqual({
      address: 'ada@example.com',
      reason: 'complaint',
      message_id: null,
      created_at: '2026-11-29T18:00:00.000Z',
    });
    const changed = await put(api, 'ada@example.com', { body: { reason: 'manual' } });
    expect(changed.json).toMatchObject({ reason: 'manual', created_at: '2026-11-29T18:00:00.000Z' });
    expect(await suppressionItems(api)).toHaveLength(1);
  });

  it('pages the list in address order with an opaque cursor', async () => {
    const api = await apiHarness();
    const addresses = Array.from({ length: 23 }, (_, i) => `user${String(i).padStart(2, '0')}@example.org`);
    for (const address of addresses) expect((await put(api, address)).status).toBe(200);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await list(api, { limit: '10', ...(cursor === null ? {} : { cursor }) });
      expect(page.status).toBe(200);
      const body = page.json as { items: { address: string }[]; next_cursor: string | null };
      expect(body.items.length).toBeLessThanOrEqual(10);
      seen.push(...body.items.map((item) => item.address));
      cursor = body.next_cursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(seen).toEqual(addresses);
    expect(pages).toBe(3);
  });

  it('takes a limit from 1 to 100 (default 50); anything else is a 400 naming `limit` (decision 0256)', async () => {
    const api = await apiHarness();
    const addresses = Array.from({ length: 101 }, (_, i) => `bulk${String(i).padStart(3, '0')}@example.org`);
    for (const address of addresses) expect((await put(api, address)).status).toBe(200);
    const count = async (query: Record<string, string>) =>
      ((await list(api, query)).json as { items: unknown[] }).items.length;
    expect(await count({})).toBe(50);
    expect(await count({ limit: '1' })).toBe(1);
    expect(await count({ limit: '100' })).toBe(100);
    for (const limit of ['0', '101', '-1', '1.5', 'ten', '1e2']) {
      const refused = await list(api, { limit });
      expect(refused.status, limit).toBe(400);
      expect(refused.headers['content-type']).toBe('application/problem+json');
      expect(refused.json, limit).toMatchObject({ errors: [expect.objectContaining({ field: 'limit' })] });
    }
  });

  it('removes an address (200 with what was removed), then answers 404 naming the address', async () => {
    const api = await apiHarness();
    await put(api, 'ada@example.com');
    const removed = await remove(api, 'Ada@example.com');
    expect(removed).toMatchObject({ status: 200, json: { address: 'ada@example.com', reason: 'manual' } });
    expect(await suppressionItems(api)).toEqual([]);
    const again = await remove(api, 'ada@example.com');
    expect(again.status).toBe(404);
    expect(again.headers['content-type']).toBe('application/problem+json');
    expect(again.json).toMatchObject({
      type: 'urn:postdate:problem:not-found',
      status: 404,
      errors: [{ field: 'address', message: 'is not on the suppression list' }],
    });
  });

  it('refuses a bad address or body with a 400 naming the field, and writes nothing', async () => {
    const api = await apiHarness();
    for (const bad of ['not-an-address', 'ada@localhost', 'Ada <ada@example.com>', 'a@b@example.com']) {
      const refused = await put(api, bad);
      expect(refused.status, bad).toBe(400);
      expect(refused.headers['content-type']).toBe('application/problem+json');
      expect(refused.json).toMatchObject({
        type: 'urn:postdate:problem:validation',
        errors: [{ field: 'address', message: expect.any(String) }],
      });
      expect(JSON.stringify(refused.json)).not.toContain(bad);
      expect((await remove(api, bad)).status).toBe(400);
    }
    const badReason = await put(api, 'ada@example.com', { body: { reason: 'because' } });
    expect(badReason.status).toBe(400);
    expect((badReason.json as { errors: { field: string }[] }).errors.map((e) => e.field)).toEqual([
      '/reason',
    ]);
    const unknownField = await put(api, 'ada@example.com', { body: { reason: 'manual', note: 'x' } });
    expect((unknownField.json as { errors: { field: string }[] }).errors.map((e) => e.field)).toEqual([
      '/note',
    ]);
    const notJson = await put(api, 'ada@example.com', { body: '{"reason":' });
    expect(notJson.status).toBe(400);
    // JSON that parses but is no object: the body itself is named, never a 500.
    for (const body of ['null', '[]', '"manual"', '3']) {
      const notObject = await put(api, 'ada@example.com', { body });
      expect(notObject, body).toMatchObject({ status: 400, json: { errors: [{ field: 'body' }] } });
    }
    expect(await suppressionItems(api)).toEqual([]);

    const badCursor = await list(api, { cursor: 'bm90LWEtY3Vyc29y' });
    expect(badCursor).toMatchObject({ status: 400, json: { errors: [{ field: 'cursor' }] } });
    const badLimit = await list(api, { limit: '0' });
    expect(badLimit).toMatchObject({ status: 400, json: { errors: [{ field: 'limit' }] } });
  });

  it("keeps tenants apart: another tenant never sees nor removes this tenant's entries", async () => {
    const api = await apiHarness();
    await put(api, 'ada@example.com', { tenant: 'acme' });
    await put(api, 'bob@example.com', { tenant: 'globex' });
    expect((await list(api, {}, 'globex')).json).toEqual({
      items: [expect.objectContaining({ address: 'bob@example.com' })],
      next_cursor: null,
    });
    expect((await remove(api, 'ada@example.com', 'globex')).status).toBe(404);
    expect((await list(api, {}, 'acme')).json).toEqual({
      items: [expect.objectContaining({ address: 'ada@example.com' })],
      next_cursor: null,
    });
    // The same address on both lists is two entries, removed one at a time.
    await put(api, 'ada@example.com', { tenant: 'globex' });
    expect((await remove(api, 'ada@example.com', 'globex')).status).toBe(200);
    expect((await list(api, {}, 'acme')).json).toMatchObject({ items: [{ address: 'ada@example.com' }] });
  });

  it('needs an API key, and matches the routes behind $default too', async () => {
    const api = await apiHarness();
    const anonymous = await api.call(
      apiEvent({ method: 'GET', path: '/v1/suppressions', routeKey: 'GET /v1/suppressions', tenant: null }),
    );
    expect(anonymous.status).toBe(401);
    const viaDefault = await api.call(apiEvent({ method: 'PUT', path: '/v1/suppressions/eve@example.com' }));
    expect(viaDefault).toMatchObject({ status: 200, json: { address: 'eve@example.com' } });
    const wrongMethod = await api.call(
      apiEvent({ method: 'POST', path: '/v1/suppressions/eve@example.com' }),
    );
    expect(wrongMethod.status).toBe(405);
  });

  it('reads a URL-encoded address behind $default as API Gateway decodes it for an explicit route: one entry, plus tag kept', async () => {
    const api = await apiHarness();
    // What a client sends (encodeURIComponent): `@` and `+` escaped in the raw path.
    const encoded = `/v1/suppressions/${encodeURIComponent('Ada+Tag@Example.com')}`;
    const viaDefault = await api.call(apiEvent({ method: 'PUT', path: encoded }));
    expect(viaDefault).toMatchObject({ status: 200, json: { address: 'ada+tag@example.com' } });
    expect((await put(api, 'ada+tag@example.com')).json).toMatchObject({ address: 'ada+tag@example.com' });
    expect((await list(api)).json).toMatchObject({ items: [{ address: 'ada+tag@example.com' }] });
    expect((await suppressionItems(api)).length).toBe(1);
    // The plus tag is part of the address (DESIGN §12 lower-cases, nothing more): `ada@` is not listed.
    expect((await remove(api, 'ada@example.com')).status).toBe(404);
    expect((await api.call(apiEvent({ method: 'DELETE', path: encoded }))).status).toBe(200);
    expect(await suppressionItems(api)).toEqual([]);
  });

  it('lists suppressed messages by status, with their suppressed count', async () => {
    const api = await apiHarness();
    const record = {
      ...stateRecord({
        id: '01JQ5000000000000000000SUP',
        tenant: 'acme',
        status: 'suppressed',
        createdAt: '2026-11-29T17:00:00.000Z',
      }),
      rcpt_total: 2,
      rcpt_suppressed: [0, 1],
    };
    await api.documents.send(new PutCommand({ TableName: api.tableName, Item: record }));
    const listed = await api.call(
      apiEvent({
        method: 'GET',
        path: '/v1/messages',
        routeKey: 'GET /v1/messages',
        query: { status: 'suppressed' },
      }),
    );
    expect(listed.status).toBe(200);
    expect(listed.json).toMatchObject({
      items: [
        {
          id: record.id,
          status: 'suppressed',
          attempts: 0,
          recipients: { accepted: 0, pending: 0, rejected: 0, suppressed: 2 },
        },
      ],
    });
  });

  describe('an internationalised domain (DESIGN §12; decision 0153)', () => {
    it('is one entry whether the domain is spelled in Unicode or in punycode: stored in its ASCII form', async () => {
      const api = await apiHarness();
      const unicode = await put(api, 'Ada@Bücher.example');
      expect(unicode).toMatchObject({ status: 200, json: { address: 'ada@xn--bcher-kva.example' } });
      const punycode = await put(api, 'ada@XN--BCHER-KVA.example', { body: { reason: 'complaint' } });
      expect(punycode).toMatchObject({
        status: 200,
        json: { address: 'ada@xn--bcher-kva.example', reason: 'complaint' },
      });
      expect(await suppressionItems(api)).toHaveLength(1);

      // Removed through either spelling.
      expect((await remove(api, 'ada@bücher.example')).status).toBe(200);
      expect(await suppressionItems(api)).toEqual([]);
      await put(api, 'ada@bücher.example');
      expect((await remove(api, 'ada@xn--bcher-kva.example')).status).toBe(200);
      expect(await suppressionItems(api)).toEqual([]);
    });

    it('is one entry for a domain in NFD or Unicode upper case, listed in A-labels and removed through any spelling; a display name or a trailing dot is a 400 (decision 0237)', async () => {
      const api = await apiHarness();
      expect(await put(api, 'ADA@BU\u0308CHER.example')).toMatchObject({
        status: 200,
        json: { address: 'ada@xn--bcher-kva.example' },
      });
      expect(await put(api, 'ada@bücher.EXAMPLE')).toMatchObject({ status: 200 });
      expect((await suppressionItems(api)).map((item) => item.address)).toEqual([
        'ada@xn--bcher-kva.example',
      ]);
      expect((await put(api, '"Ada" <ada@bücher.example>')).status).toBe(400);
      expect((await put(api, 'ada@bücher.example.')).status).toBe(400);
      expect((await remove(api, 'Ada@XN--BCHER-KVA.example')).status).toBe(200);
      expect(await suppressionItems(api)).toEqual([]);
    });

    it('still removes, and pages past, an entry stored in the Unicode form before', async () => {
      const api = await apiHarness();
      // What PUT wrote before decision 0153: the domain lower-cased as written.
      const before = new DynamoSuppressionList(api.documents, api.tableName);
      await before.put({ tenant: 'acme', address: 'ada@bücher.example', reason: 'manual', now: new Date() });
      await put(api, 'zed@example.org');

      const first = await list(api, { limit: '1' });
      const firstPage = first.json as { items: { address: string }[]; next_cursor: string | null };
      expect(firstPage.items.map((item) => item.address)).toEqual(['ada@bücher.example']);
      const second = await list(api, { limit: '1', cursor: firstPage.next_cursor ?? '' });
      expect(second).toMatchObject({ status: 200, json: { items: [{ address: 'zed@example.org' }] } });

      const removed = await remove(api, 'ada@bücher.example');
      expect(removed).toMatchObject({ status: 200, json: { address: 'ada@bücher.example' } });
      expect((await list(api)).json).toMatchObject({ items: [{ address: 'zed@example.org' }] });
    });
  });

  describe('a quoted local part (RFC 5322 §3.2.4: the atom, semantically; decision 0184)', () => {
    it('is one entry whether the local part is quoted or not: stored unquoted, removed through either', async () => {
      const api = await apiHarness();
      expect(await put(api, '"Ada"@example.com')).toMatchObject({
        status: 200,
        json: { address: 'ada@example.com' },
      });
      expect(await put(api, 'ada@example.com')).toMatchObject({
        status: 200,
        json: { address: 'ada@example.com' },
      });
      // One that needs its quotes keeps them, lower-cased.
      expect(await put(api, '"Ada Lovelace"@example.com')).toMatchObject({
        json: { address: '"ada lovelace"@example.com' },
      });
      expect(await suppressionItems(api)).toHaveLength(2);
      expect((await remove(api, '"ada"@example.com')).status).toBe(200);
      expect((await remove(api, '"ada lovelace"@example.com')).status).toBe(200);
      expect(await suppressionItems(api)).toEqual([]);
    });

    it('still removes, and pages past, an entry stored under the quoted form before', async () => {
      const api = await apiHarness();
      // What PUT wrote before decision 0184: the local part lower-cased as written, quotes and all.
      const before = new DynamoSuppressionList(api.documents, api.tableName);
      await before.put({ tenant: 'acme', address: '"eve"@example.com', reason: 'manual', now: new Date() });
      await put(api, 'zed@example.org');

      const first = await list(api, { limit: '1' });
      const firstPage = first.json as { items: { address: string }[]; next_cursor: string | null };
      expect(firstPage.items.map((item) => item.address)).toEqual(['"eve"@example.com']);
      const second = await list(api, { limit: '1', cursor: firstPage.next_cursor ?? '' });
      expect(second).toMatchObject({ status: 200, json: { items: [{ address: 'zed@example.org' }] } });

      const removed = await remove(api, '"Eve"@example.com');
      expect(removed).toMatchObject({ status: 200, json: { address: '"eve"@example.com' } });
      expect((await list(api)).json).toMatchObject({ items: [{ address: 'zed@example.org' }] });
    });
  });

  it('logs no address', async () => {
    const api = await apiHarness();
    await put(api, 'secret.person@example.com');
    await list(api);
    await remove(api, 'secret.person@example.com');
    expect(JSON.stringify(api.logs)).not.toContain('secret.person');
  });
});
