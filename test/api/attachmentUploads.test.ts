/**
 * Uploaded attachments (DESIGN §3 `POST /v1/attachments`, §13), against DynamoDB Local and the S3
 * emulator: the reservation answers an id and a pre-signed PUT of the declared size and type, bad
 * declarations are a 400 naming the field with nothing stored; an enqueue referencing the upload
 * checks it against its declaration, copies it into the message and fingerprints its SHA-256.
 */
import { createHash, randomBytes } from 'node:crypto';
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
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
  emulator = await startS3Emulator({ port: 0, bucket: `up-${randomBytes(4).toString('hex')}` });
  client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
  store = new S3AttachmentStore({ bucket: emulator.bucket, client });
});
afterAll(async () => {
  await emulator?.stop();
});

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n');

async function keysUnder(prefix: string): Promise<string[]> {
  const listed = await client.send(new ListObjectsV2Command({ Bucket: emulator.bucket, Prefix: prefix }));
  return (listed.Contents ?? []).map((object) => object.Key ?? '');
}

/** An api whose clock is the real one: s3rver enforces a pre-signed URL's expiry against its own. */
async function uploadApi() {
  const api = await apiHarness({ attachments: store });
  api.clock.set(new Date().toISOString());
  return api;
}

type Api = Awaited<ReturnType<typeof uploadApi>>;

/** The PDF's declaration, as a client reserves it. */
const INVOICE = { filename: 'invoice.pdf', content_type: 'application/pdf', size: PDF.length };

/** The client's PUT of the PDF to its upload URL, with the declared type. */
const putPdf = (url: URL | string) =>
  fetch(url, { method: 'PUT', body: PDF, headers: { 'content-type': 'application/pdf' } });

function reserve(api: Api, body: unknown, tenant: string) {
  return api.call(apiEvent({ method: 'POST', path: '/v1/attachments', body, tenant }));
}

/** Reserves and uploads `bytes` as the client would: plain fetch PUT with the declared type. */
async function upload(api: Api, tenant: string, filename: string, bytes: Buffer, contentType: string) {
  const reserved = await reserve(api, { filename, content_type: contentType, size: bytes.length }, tenant);
  expect(reserved.status).toBe(201);
  const put = await fetch(String(reserved.json.upload_url), {
    method: 'PUT',
    body: bytes,
    headers: { 'content-type': contentType },
  });
  expect(put.status).toBe(200);
  return String(reserved.json.id);
}

const freshTenant = () => `t${randomBytes(4).toString('hex')}`;

/** When S3 stops taking a pre-signed URL: its X-Amz-Date (`20261205T075000Z`) plus X-Amz-Expires. */
function urlExpiry(url: URL): number {
  const date = (url.searchParams.get('X-Amz-Date') ?? '').replace(
    /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/,
    '$1-$2-$3T$4:$5:$6Z',
  );
  return Date.parse(date) + Number(url.searchParams.get('X-Amz-Expires')) * 1000;
}

describe('POST /v1/attachments', () => {
  it('answers 201 with an id, a pre-signed PUT signing size and type for 1 h, and the upload lands under the tenant', async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const res = await reserve(api, INVOICE, tenant);

    expect(res.status).toBe(201);
    expect(res.json.id).toMatch(/^att_[0-9a-z]{26}$/);
    const url = new URL(String(res.json.upload_url));
    // The hour from the signing second (X-Amz-Date has whole seconds): exactly when S3 stops taking it.
    expect(new Date(String(res.json.expires_at)).getTime()).toBe(urlExpiry(url));
    expect(urlExpiry(url)).toBe(Math.floor(api.clock.now().getTime() / 1000) * 1000 + 3_600_000);
    expect(url.pathname).toBe(`/${emulator.bucket}/uploads/${tenant}/${res.json.id}`);
    expect(url.searchParams.get('X-Amz-SignedHeaders')?.split(';')).toEqual(
      expect.arrayContaining(['content-length', 'content-type']),
    );
    expect(url.searchParams.get('X-Amz-Expires')).toBe('3600');

    expect((await putPdf(url)).status).toBe(200);
    expect(await store.read(`uploads/${tenant}/${res.json.id}`)).toEqual(new Uint8Array(PDF));
    // Nothing is in DynamoDB: the reservation lives in the bucket, and expires with it.
    expect(await api.scanAll()).toEqual([]);
  });

  it("answers an expires_at no later than the signing credentials' own expiry (a role's session ending in 20 minutes), and the URL says the same", async () => {
    const credentialsEnd = new Date(Date.now() + 20 * 60_000);
    const sessionClient = attachmentS3Client(emulator.endpoint, {
      region: LOCAL_AWS.region,
      credentials: { ...LOCAL_AWS.credentials, sessionToken: 'session', expiration: credentialsEnd },
    });
    const api = await apiHarness({
      attachments: new S3AttachmentStore({ bucket: emulator.bucket, client: sessionClient }),
    });
    api.clock.set(new Date().toISOString());
    const tenant = freshTenant();
    const res = await reserve(api, INVOICE, tenant);

    expect(res.status).toBe(201);
    const url = new URL(String(res.json.upload_url));
    const expiresAt = new Date(String(res.json.expires_at)).getTime();
    // S3 refuses a URL signed with a session token once the session ends, whatever X-Amz-Expires says.
    expect(expiresAt).toBeLessThanOrEqual(credentialsEnd.getTime());
    expect(expiresAt).toBeGreaterThan(credentialsEnd.getTime() - 5 * 60_000);
    expect(urlExpiry(url)).toBe(expiresAt);
    expect(url.searchParams.get('X-Amz-Security-Token')).toBe('session');

    expect((await putPdf(url)).status).toBe(200);
  });

  it.each([
    [
      'an executable filename',
      { filename: 'setup.exe', content_type: 'application/pdf', size: 10 },
      '/filename',
    ],
    [
      'a CR/LF in the filename',
      { filename: 'a\r\nBcc: x', content_type: 'application/pdf', size: 10 },
      '/filename',
    ],
    [
      'an executable type',
      { filename: 'a.bin', content_type: 'application/x-msdownload', size: 10 },
      '/content_type',
    ],
    ['a multipart type', { filename: 'a.bin', content_type: 'Multipart/Related', size: 10 }, '/content_type'],
    [
      'an encoded-word filename',
      { filename: '=?utf-8?B?c2V0dXAuZXhl?=', content_type: 'application/pdf', size: 10 },
      '/filename',
    ],
    ['no content type', { filename: 'a.pdf', size: 10 }, '/content_type'],
    ['an empty file', { filename: 'a.pdf', content_type: 'application/pdf', size: 0 }, '/size'],
    [
      'a file larger than a message',
      { filename: 'a.pdf', content_type: 'application/pdf', size: 40 * 1024 * 1024 },
      '/size',
    ],
    ['an unknown field', { filename: 'a.pdf', content_type: 'application/pdf', size: 10, url: 'x' }, '/url'],
  ])('refuses %s with a 400 naming the field, and stores nothing', async (_what, body, field) => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const res = await reserve(api, body, tenant);

    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.json.errors).toEqual([expect.objectContaining({ field })]);
    expect(await keysUnder(`uploads/${tenant}/`)).toEqual([]);
  });

  it('signs the declared size and type: a PUT of another size or type is refused (403) and nothing lands', async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const res = await reserve(
      api,
      { filename: 'a.pdf', content_type: 'application/pdf', size: PDF.length },
      tenant,
    );
    const url = String(res.json.upload_url);
    const larger = await fetch(url, {
      method: 'PUT',
      body: Buffer.concat([PDF, Buffer.from('more')]),
      headers: { 'content-type': 'application/pdf' },
    });
    const html = await fetch(url, { method: 'PUT', body: PDF, headers: { 'content-type': 'text/html' } });

    expect([larger.status, html.status]).toEqual([403, 403]);
    expect(await keysUnder(`uploads/${tenant}/${res.json.id}`)).toEqual([
      `uploads/${tenant}/${res.json.id}.json`,
    ]);
  });

  it('refuses a PUT that streams the file without a Content-Length (chunked), as S3 does a URL that signs one; nothing lands', async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const res = await reserve(api, INVOICE, tenant);
    const chunked = await fetch(String(res.json.upload_url), {
      method: 'PUT',
      body: new Blob([PDF]).stream(),
      headers: { 'content-type': 'application/pdf' },
      duplex: 'half',
    } as RequestInit);

    expect(chunked.status).toBeGreaterThanOrEqual(400);
    expect(await keysUnder(`uploads/${tenant}/${res.json.id}`)).toEqual([
      `uploads/${tenant}/${res.json.id}.json`,
    ]);
  });

  it('takes a file up to what fits a 40 MB message base64-encoded', async () => {
    const api = await uploadApi();
    const res = await reserve(
      api,
      { filename: 'scan.tiff', content_type: 'image/tiff', size: 29 * 1024 * 1024 },
      freshTenant(),
    );
    expect(res.status).toBe(201);
  });
});

describe('an enqueue referencing an upload', () => {
  it('copies the upload into the message under the tenant, and lists it with its SHA-256', async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const scan = randomBytes(300_000);
    const id = await upload(api, tenant, 'scan.png', scan, 'image/png');
    const res = await api.call(
      enqueueEvent(
        validBody({ attachments: [{ filename: 'note.txt', content: 'aGk=' }, { attachment_id: id }] }),
        { key: 'up-1', tenant },
      ),
    );

    expect(res.status).toBe(202);
    const expected = [
      expect.objectContaining({ filename: 'note.txt' }),
      { filename: 'scan.png', content_type: 'image/png', size: scan.length, sha256: sha256(scan) },
    ];
    expect(res.json.attachments).toEqual(expected);
    expect((await api.call(getEvent(String(res.json.id), tenant))).json.attachments).toEqual(expected);
    const keys = await keysUnder(`messages/${tenant}/${res.json.id}/`);
    expect(keys).toHaveLength(2);
    const copied = keys.find((key) => key.includes(`-${id}-`)) ?? '';
    expect(await store.read(copied)).toEqual(new Uint8Array(scan));
  });

  it('takes a type declared with capitals (media types are case-insensitive, RFC 6838): the PUT with the declared header lands, the message lists it lower-case', async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const id = await upload(api, tenant, 'Invoice.pdf', PDF, 'application/PDF');
    const res = await api.call(
      enqueueEvent(validBody({ attachments: [{ attachment_id: id }] }), { key: 'caps', tenant }),
    );

    expect(res.status).toBe(202);
    expect(res.json.attachments).toEqual([
      { filename: 'Invoice.pdf', content_type: 'application/pdf', size: PDF.length, sha256: sha256(PDF) },
    ]);
  });

  it('answers a replay 200 (the same id, or the same bytes uploaded again) and another file under the same name 422, the original untouched', async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const first = await upload(api, tenant, 'report.pdf', PDF, 'application/pdf');
    const body = (id: string) => validBody({ attachments: [{ attachment_id: id }] });
    const created = await api.call(enqueueEvent(body(first), { key: 'same', tenant }));
    expect(created.status).toBe(202);
    const keys = await keysUnder(`messages/${tenant}/`);

    const replay = await api.call(enqueueEvent(body(first), { key: 'same', tenant }));
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');

    const again = await upload(api, tenant, 'report.pdf', PDF, 'application/pdf');
    const reuploaded = await api.call(enqueueEvent(body(again), { key: 'same', tenant }));
    expect(reuploaded.status).toBe(200);

    const other = Buffer.from('%PDF-1.4 another file entirely, under the same name');
    const changed = await upload(api, tenant, 'report.pdf', other, 'application/pdf');
    const refused = await api.call(enqueueEvent(body(changed), { key: 'same', tenant }));
    expect(refused.status).toBe(422);
    expect(await keysUnder(`messages/${tenant}/`)).toEqual(keys);
    expect(await store.read(keys[0] ?? '')).toEqual(new Uint8Array(PDF));
  });

  it("answers a replay sent after the upload's day 200 with the same message, though the upload and its declaration are gone (DESIGN §3)", async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const id = await upload(api, tenant, 'report.pdf', PDF, 'application/pdf');
    const sendAt = new Date(api.clock.now().getTime() + 3 * 86_400_000).toISOString();
    const body = validBody({ send_at: sendAt, attachments: [{ attachment_id: id }] });
    const created = await api.call(enqueueEvent(body, { key: 'late', tenant }));
    expect(created.status).toBe(202);

    // The one-day rule: the upload area expires, referenced or not.
    await client.send(
      new DeleteObjectsCommand({
        Bucket: emulator.bucket,
        Delete: { Objects: (await keysUnder(`uploads/${tenant}/`)).map((Key) => ({ Key })) },
      }),
    );
    expect(await keysUnder(`uploads/${tenant}/`)).toEqual([]);
    api.clock.set(new Date(api.clock.now().getTime() + 86_400_000 + 60_000).toISOString());
    const replay = await api.call(enqueueEvent(body, { key: 'late', tenant }));

    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json).toEqual(created.json);

    // Another body under the key is still no replay: with the upload gone, its 400 stands.
    const changed = await api.call(
      enqueueEvent({ ...body, subject: 'Another subject' }, { key: 'late', tenant }),
    );
    expect(changed.status).toBe(400);
    expect(changed.json.errors).toEqual([
      { field: '/attachments/0/attachment_id', message: expect.stringContaining('is no upload') },
    ]);
  });

  it.each([
    ['an id never reserved', 'never', 'is no upload of this tenant'],
    ["another tenant's upload", 'other-tenant', 'is no upload of this tenant'],
    ['a reservation with nothing uploaded', 'not-uploaded', 'nothing was uploaded'],
    ['an upload of another size (a store that took it)', 'other-size', '1000 were declared'],
    ['an upload of another type (a store that took it)', 'other-type', 'Content-Type'],
  ])(
    'refuses %s with a 400 naming /attachments/0/attachment_id and why, storing nothing',
    async (_what, kind, reason) => {
      const api = await uploadApi();
      const tenant = freshTenant();
      const declared = { filename: 'a.pdf', content_type: 'application/pdf', size: 1000 };
      let id = 'att_01jf6y8m3v3x1z6d2qk4n8r5tw';
      if (kind === 'other-tenant')
        id = await upload(api, freshTenant(), 'a.pdf', randomBytes(1000), 'application/pdf');
      if (kind === 'not-uploaded' || kind === 'other-size' || kind === 'other-type') {
        const reserved = await reserve(api, declared, tenant);
        id = String(reserved.json.id);
        // S3 (and the local emulator) refuse such a PUT by its signature; the enqueue checks again.
        if (kind !== 'not-uploaded') {
          await store.put(
            `uploads/${tenant}/${id}`,
            new Uint8Array(randomBytes(kind === 'other-size' ? 999 : 1000)),
            kind === 'other-type' ? 'text/html' : 'application/pdf',
          );
        }
      }
      const res = await api.call(
        enqueueEvent(validBody({ attachments: [{ attachment_id: id }] }), { key: 'bad', tenant }),
      );

      expect(res.status).toBe(400);
      expect(res.json.errors).toEqual([
        { field: '/attachments/0/attachment_id', message: expect.stringContaining(reason) },
      ]);
      expect(await keysUnder(`messages/${tenant}/`)).toEqual([]);
      expect(await api.scanAll()).toEqual([]);
    },
  );
});

describe('one upload referenced more than once (decision 0240)', () => {
  it('makes each message its own copy: the file of one that ended and was expired leaves the other and a later one whole', async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const id = await upload(api, tenant, 'invoice.pdf', PDF, 'application/pdf');
    const enqueue = (key: string) =>
      api.call(enqueueEvent(validBody({ attachments: [{ attachment_id: id }] }), { key, tenant }));
    const first = await enqueue('first');
    const second = await enqueue('second');
    expect([first.status, second.status]).toEqual([202, 202]);
    const [firstKey] = await keysUnder(`messages/${tenant}/${first.json.id}/`);
    // What the bucket's lifecycle does a retention after the first message ends (DESIGN §13).
    await client.send(
      new DeleteObjectsCommand({ Bucket: emulator.bucket, Delete: { Objects: [{ Key: firstKey }] } }),
    );
    const third = await enqueue('third');

    expect(third.status).toBe(202);
    for (const message of [second, third]) {
      const [key] = await keysUnder(`messages/${tenant}/${message.json.id}/`);
      expect(await store.read(key ?? '')).toEqual(new Uint8Array(PDF));
    }
  });

  it("is no upload of the tenant's other side: a test key's upload is refused to the live key and the reverse (DESIGN §14)", async () => {
    const api = await uploadApi();
    const tenant = freshTenant();
    const testSide = `${tenant}.test`;
    const testUpload = await upload(api, testSide, 'invoice.pdf', PDF, 'application/pdf');
    const liveUpload = await upload(api, tenant, 'invoice.pdf', PDF, 'application/pdf');
    const live = await api.call(
      enqueueEvent(validBody({ attachments: [{ attachment_id: testUpload }] }), { key: 'l', tenant }),
    );
    const test = await api.call(
      enqueueEvent(validBody({ attachments: [{ attachment_id: liveUpload }] }), {
        key: 't',
        tenant: testSide,
      }),
    );

    for (const res of [live, test]) {
      expect(res.status).toBe(400);
      expect(res.json.errors).toEqual([
        {
          field: '/attachments/0/attachment_id',
          message: expect.stringContaining('is no upload of this tenant'),
        },
      ]);
    }
    expect(await keysUnder(`messages/${tenant}`)).toEqual([]);
  });
});
