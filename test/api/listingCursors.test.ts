import { describe, expect, it } from 'vitest';
import { subscribe, webhookHarness } from '../webhooks/webhookHarness.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent } from './events.js';

/**
 * Every listing of DESIGN §3 reads its query by the one rule of GET /v1/messages (decisions 0247,
 * 0250, 0254; lambdas/core/listQuery.ts): a cursor only from the listing that issued it (another
 * tenant's, or the other side's of test mode, is a 400 naming `cursor`; one issued before the
 * tenant's mark is taken for the caller's listing), a parameter it does not take is a 400 naming it
 * (or `query`, never echoing what does not look like a parameter's name), an empty `limit` the
 * default. Covers routes/templates.ts, routes/suppressions.ts, routes/webhooks.ts.
 */

type Answer = { status: number; json: Record<string, unknown> };

const fieldsOf = (answer: Answer) => ((answer.json.errors ?? []) as { field: string }[]).map((e) => e.field);
const namesOf = (answer: Answer) =>
  (answer.json.items as { name?: string; address?: string }[]).map((i) => i.name ?? i.address);
const oldCursor = (fields: Record<string, unknown>) =>
  Buffer.from(JSON.stringify({ v: 1, ...fields }), 'utf8').toString('base64url');

describe('GET /v1/templates and GET /v1/suppressions take a cursor and parameters as GET /v1/messages does', () => {
  const listings = [
    {
      what: 'templates',
      path: '/v1/templates',
      add: (api: Awaited<ReturnType<typeof apiHarness>>, tenant: string, n: string) =>
        api.call(
          apiEvent({
            method: 'PUT',
            path: `/v1/templates/t-${n}`,
            routeKey: 'PUT /v1/templates/{name}',
            pathParameters: { name: `t-${n}` },
            body: { subject: 'x', text: 'y' },
            tenant,
          }),
        ),
      before: (first: string) => oldCursor({ after: first }),
      names: ['t-a', 't-b', 't-c'],
    },
    {
      what: 'suppressions',
      path: '/v1/suppressions',
      add: (api: Awaited<ReturnType<typeof apiHarness>>, tenant: string, n: string) =>
        api.call(
          apiEvent({
            method: 'PUT',
            path: `/v1/suppressions/${n}@example.com`,
            routeKey: 'PUT /v1/suppressions/{address}',
            pathParameters: { address: `${n}@example.com` },
            tenant,
          }),
        ),
      before: (first: string) => oldCursor({ a: first }),
      names: ['a@example.com', 'b@example.com', 'c@example.com'],
    },
  ];

  for (const listing of listings) {
    const list = (
      api: Awaited<ReturnType<typeof apiHarness>>,
      query: Record<string, string>,
      tenant = 'acme',
    ) =>
      api.call(
        apiEvent({ method: 'GET', path: listing.path, routeKey: `GET ${listing.path}`, query, tenant }),
      );

    it(`${listing.what}: another tenant's cursor, or the other side's, is a 400 naming cursor`, async () => {
      const api = await apiHarness();
      for (const tenant of ['acme', 'globex', 'acme.test'])
        for (const n of ['a', 'b', 'c']) expect((await listing.add(api, tenant, n)).status).toBeLessThan(300);
      const first = await list(api, { limit: '1' });
      expect(namesOf(first)).toEqual(listing.names.slice(0, 1));
      const cursor = String(first.json.next_cursor);
      for (const tenant of ['globex', 'acme.test']) {
        const foreign = await list(api, { cursor }, tenant);
        expect(foreign.status).toBe(400);
        expect(fieldsOf(foreign)).toEqual(['cursor']);
      }
      const own = await list(api, { cursor });
      expect(own.status).toBe(200);
      expect(namesOf(own)).toEqual(listing.names.slice(1));
    });

    it(`${listing.what}: a cursor issued before the tenant's mark is taken for the caller's listing`, async () => {
      const api = await apiHarness();
      for (const n of ['a', 'b', 'c']) await listing.add(api, 'acme', n);
      const page = await list(api, { cursor: listing.before(String(listing.names[0])) });
      expect(page.status).toBe(200);
      expect(namesOf(page)).toEqual(listing.names.slice(1));
      // A stray character appended is not the string issued.
      const stray = await list(api, { cursor: `${listing.before(String(listing.names[0]))}A` });
      expect(fieldsOf(stray)).toEqual(['cursor']);
    });

    it(`${listing.what}: a parameter it does not take is a 400 naming it; an empty limit is the default`, async () => {
      const api = await apiHarness();
      await listing.add(api, 'acme', 'a');
      for (const name of ['since', 'status', 'limt', 'tags.kind']) {
        const refused = await list(api, { [name]: 'x' });
        expect(refused.status).toBe(400);
        expect(fieldsOf(refused)).toEqual([name]);
      }
      const address = await list(api, { 'ada@example.com': '' });
      expect(fieldsOf(address)).toEqual(['query']);
      expect(JSON.stringify(address.json)).not.toContain('ada@example.com');
      const empty = await list(api, { limit: '', cursor: '' });
      expect(empty.status).toBe(200);
      expect(namesOf(empty)).toEqual(listing.names.slice(0, 1));
    });
  }
});

describe("GET /v1/webhooks and an endpoint's deliveries take a cursor and parameters as GET /v1/messages does", () => {
  it("another tenant's cursor, or another endpoint's or status's, is a 400 naming cursor; an old one is taken", async () => {
    const harness = await webhookHarness();
    const acme = await subscribe(harness, 'http://127.0.0.1:9/hook');
    const acmeOther = await subscribe(harness, 'http://127.0.0.1:9/other');
    const globex = await subscribe(harness, 'http://127.0.0.1:9/hook', 'globex');
    const tested = [];
    for (const [endpoint, tenant] of [
      [acme, 'acme'],
      [acme, 'acme'],
      [acmeOther, 'acme'],
      [globex, 'globex'],
      [globex, 'globex'],
    ] as const) {
      const test = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test`, tenant });
      expect(test.status).toBe(202);
      tested.push(test.json.id as string);
    }
    const deliveries = (id: string, query: Record<string, string>, tenant = 'acme') =>
      harness.call({ method: 'GET', path: `/v1/webhooks/${id}/deliveries`, query, tenant });
    const first = await deliveries(acme.id, { limit: '1' });
    expect(first.json.items).toHaveLength(1);
    const cursor = String(first.json.next_cursor);

    const foreign = await deliveries(globex.id, { cursor }, 'globex');
    expect([foreign.status, fieldsOf(foreign)]).toEqual([400, ['cursor']]);
    const otherEndpoint = await deliveries(acmeOther.id, { cursor });
    expect([otherEndpoint.status, fieldsOf(otherEndpoint)]).toEqual([400, ['cursor']]);
    const otherStatus = await deliveries(acme.id, { cursor, status: 'pending' });
    expect([otherStatus.status, fieldsOf(otherStatus)]).toEqual([400, ['cursor']]);

    const own = await deliveries(acme.id, { cursor });
    expect(own.status).toBe(200);
    const both = [...(first.json.items as { id: string }[]), ...(own.json.items as { id: string }[])];
    expect(both.map((item) => item.id).sort()).toEqual(tested.slice(0, 2).sort());
    expect(own.json.next_cursor).toBeNull();

    // Issued before the mark, a cursor was the last delivery's id: taken for the caller's listing.
    const old = await deliveries(acme.id, { cursor: (first.json.items as { id: string }[])[0]?.id ?? '' });
    expect(old.status).toBe(200);
    expect(old.json.items).toEqual(own.json.items);
  });

  it('a parameter a webhook listing does not take is a 400 naming it; an empty limit is the default', async () => {
    const harness = await webhookHarness();
    const acme = await subscribe(harness, 'http://127.0.0.1:9/hook');
    for (const name of ['since', 'limt', 'event']) {
      const refused = await harness.call({
        method: 'GET',
        path: `/v1/webhooks/${acme.id}/deliveries`,
        query: { [name]: 'x' },
      });
      expect([refused.status, fieldsOf(refused)]).toEqual([400, [name]]);
    }
    const address = await harness.call({
      method: 'GET',
      path: `/v1/webhooks/${acme.id}/deliveries`,
      query: { 'ada@example.com': '' },
    });
    expect(fieldsOf(address)).toEqual(['query']);
    const empty = await harness.call({
      method: 'GET',
      path: `/v1/webhooks/${acme.id}/deliveries`,
      query: { limit: '', cursor: '', status: '' },
    });
    expect(empty.status).toBe(200);
    for (const name of ['limit', 'cursor']) {
      const endpoints = await harness.call({ method: 'GET', path: '/v1/webhooks', query: { [name]: '1' } });
      expect([endpoints.status, fieldsOf(endpoints)]).toEqual([400, [name]]);
    }
  });
});
