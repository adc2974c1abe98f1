/**
 * The wall between a tenant's live and test sides (DESIGN §14 "Test and live data never meet") on
 * the routes test/api/testKeys.test.ts leaves out: template versions and render, a template name or
 * an upload id of the other side at enqueue, the batch's idempotency keys, the status listing and
 * its cursor. The API handler runs on DynamoDB Local and the S3 emulator; the tenants are the ids the
 * authorizer hands out (`acme` and its test side, core/testSide.ts), the mapping testKeys checks.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { apiHarness, uploadThroughApi } from './apiHarness.js';
import { apiEvent, validBody } from './events.js';

let emulator: S3Emulator;
let api: Awaited<ReturnType<typeof apiHarness>>;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `walls-${randomBytes(4).toString('hex')}` });
  const client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
  api = await apiHarness({ attachments: new S3AttachmentStore({ bucket: emulator.bucket, client }) });
  // s3rver checks a pre-signed URL's expiry against its own clock.
  api.clock.set(new Date().toISOString());
});
afterAll(async () => {
  await emulator?.stop();
});

const PDF = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n');

/** A fresh tenant's two sides, as the authorizer names them for its live and its test key. */
function sides() {
  const live = `t${randomBytes(4).toString('hex')}`;
  return { live, test: testSideOf(live) };
}

const call = (tenant: string, method: string, path: string, body?: unknown, query?: Record<string, string>) =>
  api.call(apiEvent({ method, path, tenant, body, ...(query ? { query } : {}) }));

const enqueue = (tenant: string, key: string, body: Record<string, unknown>) =>
  api.call(
    apiEvent({ method: 'POST', path: '/v1/messages', tenant, body, headers: { 'idempotency-key': key } }),
  );

/** One result of POST /v1/messages/batch (DESIGN §3a). */
interface BatchResult {
  readonly status: number;
  readonly replayed?: boolean;
  readonly message?: { readonly id: string };
  readonly problem?: { readonly errors?: readonly { readonly field: string }[] };
}

/** A day after the api's clock, so every message stays scheduled. */
const sendAt = () => new Date(Date.parse(api.clock.now().toISOString()) + 86_400_000).toISOString();

describe('the wall between a tenant’s live and test sides (DESIGN §14)', () => {
  it('keeps a template’s versions, render and name at enqueue on its side, both ways', async () => {
    const tenants = sides();
    for (const [side, tenant] of Object.entries(tenants)) {
      const other = side === 'live' ? tenants.test : tenants.live;
      for (const text of ['one {{n}}', 'two {{n}}']) {
        const put = await call(tenant, 'PUT', `/v1/templates/only-${side}`, { subject: 'S {{n}}', text });
        expect(put.status).toBe(201);
      }
      const name = `only-${side}`;
      // What the other side answers for this name is what it answers for a name nobody has.
      expect((await call(other, 'GET', `/v1/templates/${name}/versions/1`)).status).toBe(404);
      expect((await call(other, 'GET', `/v1/templates/${name}`)).status).toBe(404);
      const render = await call(other, 'POST', `/v1/templates/${name}/render`, { data: { n: 1 } });
      const renderNobody = await call(other, 'POST', '/v1/templates/nobody-has-it/render', {
        data: { n: 1 },
      });
      expect(render.status).toBe(404);
      expect(render.status).toBe(renderNobody.status);
      const body = (template: string) =>
        validBody({
          subject: undefined,
          text: undefined,
          html: undefined,
          send_at: sendAt(),
          template: { name: template, data: { n: 1 } },
        });
      const theirs = await enqueue(other, `tpl-${side}`, body(name));
      const nobody = await enqueue(other, `tpl-nobody-${side}`, body('nobody-has-it'));
      expect(theirs.status).toBeGreaterThanOrEqual(400);
      expect([theirs.status, theirs.json.errors]).toEqual([nobody.status, nobody.json.errors]);
      const archive = await call(other, 'DELETE', `/v1/templates/${name}`);
      expect(archive.status).toBe(404);
      // Still there, unarchived, on its own side.
      const own = await call(tenant, 'GET', `/v1/templates/${name}`);
      expect(own.status).toBe(200);
      expect(own.json).toMatchObject({ name, version: 2 });
      expect(own.json.archived_at ?? null).toBeNull();
    }
  });

  it('does not resolve an upload of the other side at enqueue, and leaves the upload usable on its own', async () => {
    const tenants = sides();
    for (const [side, tenant] of Object.entries(tenants)) {
      const other = side === 'live' ? tenants.test : tenants.live;
      const attachments = [{ attachment_id: await uploadThroughApi(api, tenant, 'invoice.pdf', PDF) }];
      const theirs = await enqueue(other, `att-${side}`, validBody({ send_at: sendAt(), attachments }));
      expect(theirs.status).toBe(400);
      expect(theirs.json.errors).toEqual([
        expect.objectContaining({ field: '/attachments/0/attachment_id' }),
      ]);
      const own = await enqueue(tenant, `att-${side}`, validBody({ send_at: sendAt(), attachments }));
      expect(own.status).toBe(202);
      expect(own.json.test).toBe(side === 'test');
    }
  });

  it('replays a batch item’s idempotency key on its side only', async () => {
    const tenants = sides();
    const batch = (tenant: string) =>
      call(tenant, 'POST', '/v1/messages/batch', {
        messages: [{ idempotency_key: 'same-item', ...validBody({ send_at: sendAt() }) }],
      });
    const ids: Record<string, string> = {};
    for (const [side, tenant] of Object.entries(tenants)) {
      const first = await batch(tenant);
      expect(first.status).toBeLessThan(300);
      const item = (first.json.results as BatchResult[])[0];
      expect([item?.status, item?.replayed]).toEqual([202, false]);
      ids[side] = String(item?.message?.id);
      const again = (await batch(tenant)).json.results as BatchResult[];
      expect([again[0]?.status, again[0]?.replayed, again[0]?.message?.id]).toEqual([200, true, ids[side]]);
    }
    expect(ids.live).not.toBe(ids.test);
    const live = await call(tenants.live, 'GET', `/v1/messages/${ids.live}`);
    const test = await call(tenants.test, 'GET', `/v1/messages/${ids.test}`);
    expect([live.json.test, test.json.test]).toEqual([false, true]);
  });

  it("lists by status on its side only, and refuses the other side's cursor (400 naming cursor, decision 0247)", async () => {
    const tenants = sides();
    const mine: Record<string, string[]> = { live: [], test: [] };
    for (const [side, tenant] of Object.entries(tenants)) {
      for (let n = 0; n < 3; n++) {
        const res = await enqueue(tenant, `list-${n}`, validBody({ send_at: sendAt() }));
        expect(res.status).toBe(202);
        mine[side]?.push(String(res.json.id));
      }
    }
    for (const [side, tenant] of Object.entries(tenants)) {
      const other = side === 'live' ? tenants.test : tenants.live;
      for (const status of [undefined, 'scheduled']) {
        const query = { limit: '1', ...(status ? { status } : {}) };
        const first = await call(tenant, 'GET', '/v1/messages', undefined, query);
        expect(first.status).toBe(200);
        const cursor = String(first.json.next_cursor);
        // The other side cannot follow this side's cursor: it names a listing that is not its own.
        const res = await call(other, 'GET', '/v1/messages', undefined, { ...query, cursor });
        expect(res.status).toBe(400);
        expect(res.json.errors).toEqual([{ field: 'cursor', message: expect.any(String) }]);
        // And this side's whole listing is its own three.
        const all = await call(tenant, 'GET', '/v1/messages', undefined, status ? { status } : {});
        expect((all.json.items as { id: string }[]).map((item) => item.id).sort()).toEqual(
          [...(mine[side] ?? [])].sort(),
        );
      }
    }
  });

  it('refuses a simulator address on a live batch item, as on a live single enqueue (decision 0192)', async () => {
    const tenants = sides();
    const to = ['bounce@simulator.postdate.test'];
    const live = await call(tenants.live, 'POST', '/v1/messages/batch', {
      messages: [{ idempotency_key: 'sim', ...validBody({ to, send_at: sendAt() }) }],
    });
    const item = (live.json.results as BatchResult[])[0];
    expect(item?.status).toBe(400);
    expect(item?.problem?.errors).toEqual([expect.objectContaining({ field: '/messages/0/to/0' })]);
    const test = await call(tenants.test, 'POST', '/v1/messages/batch', {
      messages: [{ idempotency_key: 'sim', ...validBody({ to, send_at: sendAt() }) }],
    });
    expect((test.json.results as BatchResult[])[0]?.status).toBe(202);
    expect((await call(tenants.live, 'GET', '/v1/messages')).json.items).toEqual([]);
  });

  it('refuses on a live key a simulator address in any spelling whose RCPT TO is the simulator’s (decision 0192)', async () => {
    const tenants = sides();
    // The mailer puts a domain into RCPT TO as A-labels (UTS #46: `ſ` is `s`, fullwidth letters are
    // ASCII), so each of these reaches a relay as `bounce@simulator.postdate.test`.
    const spellings = ['bounce@\u017Fimulator.postdate.test', 'bounce@\uFF53imulator.postdate.test'];
    for (const [n, spelling] of spellings.entries()) {
      const single = await enqueue(tenants.live, `sim-${n}`, validBody({ to: [spelling] }));
      expect([spelling, single.status]).toEqual([spelling, 400]);
      expect(single.json.errors).toEqual([expect.objectContaining({ field: '/to/0' })]);
      const batch = await call(tenants.live, 'POST', '/v1/messages/batch', {
        messages: [{ idempotency_key: `sim-${n}`, ...validBody({ cc: [spelling] }) }],
      });
      const item = (batch.json.results as BatchResult[])[0];
      expect([spelling, item?.status]).toEqual([spelling, 400]);
      expect(item?.problem?.errors).toEqual([expect.objectContaining({ field: '/messages/0/cc/0' })]);
    }
    expect((await call(tenants.live, 'GET', '/v1/messages')).json.items).toEqual([]);
  });
});
