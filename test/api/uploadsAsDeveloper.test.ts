/**
 * Uploads and attachments as an application developer sending invoices uses them (DESIGN §4, §13;
 * decision 0258), against DynamoDB Local, the S3 emulator as the local stack runs it and real HTTP
 * PUTs to the pre-signed URL: an expired URL, an upload PUT again with other bytes before a retry,
 * one upload twice in a message, and the inline limit at its edge, counted decoded.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent, validBody } from './events.js';

let emulator: S3Emulator;
let client: S3Client;
let store: S3AttachmentStore;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `dev-${randomBytes(4).toString('hex')}` });
  client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
  store = new S3AttachmentStore({ bucket: emulator.bucket, client });
});
afterAll(async () => {
  await emulator?.stop();
});

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const freshTenant = () => `t${randomBytes(4).toString('hex')}`;
const invoice = (version: string) => Buffer.from(`%PDF-1.4\n% invoice ${version}\n%%EOF\n`);

async function keysUnder(prefix: string): Promise<string[]> {
  const listed = await client.send(new ListObjectsV2Command({ Bucket: emulator.bucket, Prefix: prefix }));
  return (listed.Contents ?? []).map((object) => object.Key ?? '');
}

/** An api on the real clock (s3rver judges a URL's expiry by its own), or `offsetMs` from it. */
async function uploadApi(options: { offsetMs?: number; inlineAttachmentMaxKb?: number } = {}) {
  const api = await apiHarness({
    attachments: store,
    ...(options.inlineAttachmentMaxKb === undefined
      ? {}
      : { inlineAttachmentMaxKb: options.inlineAttachmentMaxKb }),
  });
  api.clock.set(new Date(Date.now() + (options.offsetMs ?? 0)).toISOString());
  return api;
}

type Api = Awaited<ReturnType<typeof uploadApi>>;

async function reserve(api: Api, tenant: string, size: number) {
  const res = await api.call(
    apiEvent({
      method: 'POST',
      path: '/v1/attachments',
      body: { filename: 'invoice.pdf', content_type: 'application/pdf', size },
      tenant,
    }),
  );
  expect(res.status).toBe(201);
  return { id: String(res.json.id), url: String(res.json.upload_url) };
}

const put = (url: string, bytes: Buffer) =>
  fetch(url, { method: 'PUT', body: bytes, headers: { 'content-type': 'application/pdf' } });

describe('the pre-signed PUT (DESIGN §13: 1 h)', () => {
  it('is refused once its hour has passed, and nothing lands', async () => {
    const api = await uploadApi({ offsetMs: -(3600 + 120) * 1000 });
    const tenant = freshTenant();
    const { id, url } = await reserve(api, tenant, invoice('v1').length);

    const late = await put(url, invoice('v1'));

    expect(late.status).toBe(403);
    expect(await keysUnder(`uploads/${tenant}/${id}`)).toEqual([`uploads/${tenant}/${id}.json`]);
  });
});

describe('a retry with the same Idempotency-Key (DESIGN §4: the fingerprint covers the contents)', () => {
  it('is a 422 when the upload it names was PUT again with other bytes of the same size after the message was made, the message untouched', async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const first = invoice('v1');
    const second = invoice('v2');
    const { id, url } = await reserve(api, tenant, first.length);
    expect((await put(url, first)).status).toBe(200);
    const body = validBody({ attachments: [{ attachment_id: id }] });
    const created = await api.call(enqueueEvent(body, { key: 'inv-1', tenant }));
    expect(created.status).toBe(202);

    // Within the URL's hour the developer uploads the corrected invoice to the same URL and retries.
    expect((await put(url, second)).status).toBe(200);
    const retried = await api.call(enqueueEvent(body, { key: 'inv-1', tenant }));

    expect(retried.status).toBe(422);
    expect(retried.headers['content-type']).toBe('application/problem+json');
    const kept = await api.call(getEvent(String(created.json.id), tenant));
    expect(kept.json.attachments).toEqual([expect.objectContaining({ sha256: sha256(first) })]);
  });

  it('is still a replay when the upload holds the same bytes, PUT again or not, told by ETag without reading the upload', async () => {
    const hashed: string[] = [];
    const counting: S3AttachmentStore = Object.assign(Object.create(store), {
      hash: (key: string) => {
        hashed.push(key);
        return store.hash(key);
      },
    });
    const api = await apiHarness({ attachments: counting });
    api.clock.set(new Date().toISOString());
    const tenant = freshTenant();
    const bytes = invoice('v1');
    const { id, url } = await reserve(api, tenant, bytes.length);
    expect((await put(url, bytes)).status).toBe(200);
    const body = validBody({ attachments: [{ attachment_id: id }] });
    expect((await api.call(enqueueEvent(body, { key: 'inv-1', tenant }))).status).toBe(202);
    // The emulator answers a copy no checksum, so making the message hashed the upload (EMULATORS.md).
    hashed.length = 0;

    const replay = await api.call(enqueueEvent(body, { key: 'inv-1', tenant }));
    expect((await put(url, bytes)).status).toBe(200);
    const replayAfterPut = await api.call(enqueueEvent(body, { key: 'inv-1', tenant }));

    expect([replay.status, replayAfterPut.status]).toEqual([200, 200]);
    expect(replayAfterPut.headers['idempotent-replayed']).toBe('true');
    expect(hashed).toEqual([]);
  });
});

describe('one upload named twice in one message', () => {
  it('attaches it twice, each place its own copy of the exact bytes', async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const bytes = randomBytes(5000);
    const { id, url } = await reserve(api, tenant, bytes.length);
    expect((await put(url, bytes)).status).toBe(200);
    const res = await api.call(
      enqueueEvent(validBody({ attachments: [{ attachment_id: id }, { attachment_id: id }] }), {
        key: 'twice',
        tenant,
      }),
    );

    expect(res.status).toBe(202);
    const listed = {
      filename: 'invoice.pdf',
      content_type: 'application/pdf',
      size: 5000,
      sha256: sha256(bytes),
    };
    expect(res.json.attachments).toEqual([listed, listed]);
    const keys = await keysUnder(`messages/${tenant}/${res.json.id}/`);
    expect(keys).toHaveLength(2);
    for (const key of keys) expect(await store.read(key)).toEqual(new Uint8Array(bytes));
    const replay = await api.call(
      enqueueEvent(validBody({ attachments: [{ attachment_id: id }, { attachment_id: id }] }), {
        key: 'twice',
        tenant,
      }),
    );
    expect(replay.status).toBe(200);
  });
});

describe('the whole message over POSTDATE_MAX_MESSAGE_MB', () => {
  it('refuses two uploads that each fit but together do not with a 413 naming /attachments, storing nothing', async () => {
    const api = await apiHarness({ attachments: store, maxMessageMb: 1 });
    api.clock.set(new Date().toISOString());
    const tenant = freshTenant();
    const ids = [];
    for (const bytes of [randomBytes(400_000), randomBytes(400_000)]) {
      const { id, url } = await reserve(api, tenant, bytes.length);
      expect((await put(url, bytes)).status).toBe(200);
      ids.push(id);
    }
    const one = await api.call(
      enqueueEvent(validBody({ attachments: [{ attachment_id: ids[0] }] }), { key: 'one', tenant }),
    );
    const both = await api.call(
      enqueueEvent(validBody({ attachments: ids.map((attachment_id) => ({ attachment_id })) }), {
        key: 'both',
        tenant,
      }),
    );

    expect(one.status).toBe(202);
    expect(both.status).toBe(413);
    expect(both.headers['content-type']).toBe('application/problem+json');
    expect(both.json.errors).toEqual([
      { field: '/attachments', message: expect.stringContaining('POSTDATE_MAX_MESSAGE_MB') },
    ]);
    expect(await keysUnder(`messages/${tenant}/`)).toEqual(
      await keysUnder(`messages/${tenant}/${one.json.id}/`),
    );
  });
});

describe('inline attachments at POSTDATE_INLINE_ATTACHMENT_MAX_KB (decoded, not base64)', () => {
  const inline = (bytes: Buffer) => ({
    filename: 'invoice.pdf',
    content_type: 'application/pdf',
    content: bytes.toString('base64'),
  });

  it('takes exactly the limit decoded (its base64 a third longer) and refuses one byte more with a 413 naming /attachments, storing nothing', async () => {
    const api = await uploadApi({ inlineAttachmentMaxKb: 4 });
    const tenant = freshTenant();
    const edge = randomBytes(4096);
    const over = randomBytes(4097);
    expect(inline(edge).content.length).toBeGreaterThan(4096);

    const taken = await api.call(
      enqueueEvent(validBody({ attachments: [inline(edge)] }), { key: 'edge', tenant }),
    );
    const refused = await api.call(
      enqueueEvent(validBody({ attachments: [inline(over)] }), { key: 'over', tenant }),
    );

    expect(taken.status).toBe(202);
    expect(taken.json.attachments).toEqual([expect.objectContaining({ size: 4096, sha256: sha256(edge) })]);
    expect(refused.status).toBe(413);
    expect(refused.json.errors).toEqual([expect.objectContaining({ field: '/attachments' })]);
    expect(await keysUnder(`messages/${tenant}/`)).toEqual(
      await keysUnder(`messages/${tenant}/${taken.json.id}/`),
    );
  });
});
