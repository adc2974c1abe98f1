/**
 * A batch's attachments (DESIGN §3a, §13), against DynamoDB Local and the S3 emulator: `mode:
 * "strict"` validates all first and enqueues none if one is invalid — an item's attachments
 * included (no bucket, an unknown or not-uploaded upload, too much inline) — and stores no byte of
 * any item; permissive mode answers each item as a single enqueue would.
 */
import { randomBytes } from 'node:crypto';
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, validBody } from './events.js';

let emulator: S3Emulator;
let client: S3Client;
let store: S3AttachmentStore;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `batch-${randomBytes(4).toString('hex')}` });
  client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
  store = new S3AttachmentStore({ bucket: emulator.bucket, client });
});
afterAll(async () => {
  await emulator?.stop();
});

type Api = Awaited<ReturnType<typeof apiHarness>>;

interface BatchResult {
  index: number;
  status: number;
  problem?: { errors?: { field: string }[] };
}

const PDF = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n');
const inline = (filename: string, bytes: Buffer) => ({ filename, content: bytes.toString('base64') });
const freshTenant = () => `t${randomBytes(4).toString('hex')}`;

async function keysUnder(prefix: string): Promise<string[]> {
  const listed = await client.send(new ListObjectsV2Command({ Bucket: emulator.bucket, Prefix: prefix }));
  return (listed.Contents ?? []).map((object) => object.Key ?? '');
}

function sendBatch(api: Api, tenant: string, body: unknown) {
  return api.call(
    apiEvent({
      method: 'POST',
      path: '/v1/messages/batch',
      routeKey: 'POST /v1/messages/batch',
      body,
      tenant,
    }),
  );
}

/** An api on the real clock (s3rver checks a pre-signed URL's expiry against its own). */
async function bucketApi(options: { inlineAttachmentMaxKb?: number } = {}) {
  const api = await apiHarness({ attachments: store, ...options });
  api.clock.set(new Date().toISOString());
  return api;
}

/** A reservation whose file was never PUT: the enqueue finds nothing uploaded. */
async function reservedOnly(api: Api, tenant: string): Promise<string> {
  const reserved = await api.call(
    apiEvent({
      method: 'POST',
      path: '/v1/attachments',
      body: { filename: 'ledger.pdf', content_type: 'application/pdf', size: PDF.length },
      tenant,
    }),
  );
  expect(reserved.status).toBe(201);
  return String(reserved.json.id);
}

/** Items 0 and 2 valid (0 with a file), 1 an upload never reserved, 3 never uploaded, 4 too much inline. */
async function mixedBatch(api: Api, tenant: string, prefix: string) {
  return [
    { idempotency_key: `${prefix}-0`, ...validBody({ attachments: [inline('invoice.pdf', PDF)] }) },
    {
      idempotency_key: `${prefix}-1`,
      ...validBody({ attachments: [{ attachment_id: 'att_01jf6y8m3v3x1z6d2qk4n8r5tw' }] }),
    },
    { idempotency_key: `${prefix}-2`, ...validBody() },
    {
      idempotency_key: `${prefix}-3`,
      ...validBody({ attachments: [{ attachment_id: await reservedOnly(api, tenant) }] }),
    },
    {
      idempotency_key: `${prefix}-4`,
      ...validBody({
        attachments: [inline('a.bin', randomBytes(40_000)), inline('b.bin', randomBytes(40_000))],
      }),
    },
  ];
}

describe('POST /v1/messages/batch with attachments', () => {
  it("in strict mode judges every item's attachments before writing: one bad file and nothing is enqueued, no byte stored", async () => {
    const api = await bucketApi({ inlineAttachmentMaxKb: 64 });
    const tenant = freshTenant();
    const messages = await mixedBatch(api, tenant, 'strict');

    const response = await sendBatch(api, tenant, { messages, mode: 'strict' });

    expect(response.status).toBe(400);
    const fields = (response.json.errors as { field: string }[]).map((error) => error.field);
    expect(fields).toEqual(
      expect.arrayContaining([
        '/messages/1/attachments/0/attachment_id',
        '/messages/3/attachments/0/attachment_id',
        '/messages/4/attachments',
      ]),
    );
    expect(fields.every((field) => /^\/messages\/[134]\//.test(field))).toBe(true);
    expect(await api.scanAll()).toEqual([]);
    expect(await keysUnder(`messages/${tenant}/`)).toEqual([]);
  });

  it("a strict batch retried whole after its uploads' day answers every item 200 replayed, though the uploads are gone (DESIGN §3, §3a)", async () => {
    const api = await bucketApi();
    const tenant = freshTenant();
    const id = await reservedOnly(api, tenant);
    await store.put(`uploads/${tenant}/${id}`, new Uint8Array(PDF), 'application/pdf');
    const sendAt = new Date(api.clock.now().getTime() + 3 * 86_400_000).toISOString();
    const messages = [
      { idempotency_key: 'late-0', ...validBody({ send_at: sendAt, attachments: [{ attachment_id: id }] }) },
      { idempotency_key: 'late-1', ...validBody({ send_at: sendAt }) },
    ];
    const first = await sendBatch(api, tenant, { messages, mode: 'strict' });
    expect((first.json.results as BatchResult[]).map((result) => result.status)).toEqual([202, 202]);

    const uploads = await keysUnder(`uploads/${tenant}/`);
    await client.send(
      new DeleteObjectsCommand({
        Bucket: emulator.bucket,
        Delete: { Objects: uploads.map((Key) => ({ Key })) },
      }),
    );
    api.clock.set(new Date(api.clock.now().getTime() + 86_400_000 + 60_000).toISOString());
    const again = await sendBatch(api, tenant, { messages, mode: 'strict' });

    expect(again.status).toBe(200);
    const results = again.json.results as (BatchResult & { replayed?: boolean; message?: unknown })[];
    expect(results.map((result) => [result.status, result.replayed])).toEqual([
      [200, true],
      [200, true],
    ]);
    const firstResults = first.json.results as { message?: unknown }[];
    expect(results.map((result) => result.message)).toEqual(firstResults.map((result) => result.message));
  });

  it('in strict mode on an api without a bucket refuses the batch whole, naming the item with files', async () => {
    const api = await apiHarness();
    const tenant = freshTenant();
    const messages = [
      { idempotency_key: 'nb-0', ...validBody() },
      { idempotency_key: 'nb-1', ...validBody({ attachments: [inline('invoice.pdf', PDF)] }) },
    ];

    const response = await sendBatch(api, tenant, { messages, mode: 'strict' });

    expect(response.status).toBe(400);
    const fields = (response.json.errors as { field: string }[]).map((error) => error.field);
    expect(fields).toEqual(['/messages/1/attachments']);
    expect(await api.scanAll()).toEqual([]);
  });

  it('answers an item carrying 300 KiB of inline files 202, as a single enqueue of its body does: inline content is not held to 256 KiB (DESIGN §3a, §13)', async () => {
    const api = await bucketApi();
    const tenant = freshTenant();
    const body = validBody({ attachments: [inline('statement.pdf', randomBytes(300 * 1024))] });

    const single = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/messages',
        headers: { 'Idempotency-Key': 'alone' },
        body,
        tenant,
      }),
    );
    const batch = await sendBatch(api, tenant, { messages: [{ idempotency_key: 'in-batch', ...body }] });

    expect(single.status).toBe(202);
    expect(batch.status).toBe(200);
    expect((batch.json.results as BatchResult[]).map((result) => result.status)).toEqual([single.status]);
  });

  it('answers an item whose content beside its inline files is over 256 KiB 413, as a single enqueue does', async () => {
    const api = await bucketApi();
    const tenant = freshTenant();
    const body = validBody({
      text: 'x'.repeat(256 * 1024),
      attachments: [inline('statement.pdf', randomBytes(1024))],
    });

    const single = await api.call(
      apiEvent({ method: 'POST', path: '/v1/messages', headers: { 'Idempotency-Key': 'big' }, body, tenant }),
    );
    const batch = await sendBatch(api, tenant, { messages: [{ idempotency_key: 'big', ...body }] });

    expect(single.status).toBe(413);
    const results = batch.json.results as (BatchResult & { problem?: { detail?: string } })[];
    expect(results.map((result) => result.status)).toEqual([413]);
    expect(results[0]?.problem?.detail).toBe((single.json as { detail?: string }).detail);
  });

  it('in permissive mode enqueues the valid items with their files and answers each other item as a single enqueue would', async () => {
    const api = await bucketApi({ inlineAttachmentMaxKb: 64 });
    const tenant = freshTenant();
    const messages = await mixedBatch(api, tenant, 'loose');

    const response = await sendBatch(api, tenant, { messages });

    expect(response.status).toBe(200);
    const results = response.json.results as BatchResult[];
    expect(results.map((result) => result.status)).toEqual([202, 400, 202, 400, 413]);
    expect(results[1]?.problem?.errors?.map((error) => error.field)).toEqual([
      '/messages/1/attachments/0/attachment_id',
    ]);
    expect(results[4]?.problem?.errors?.map((error) => error.field)).toEqual(['/messages/4/attachments']);
    // Only the first item's file is stored: the refused items stored nothing.
    expect(await keysUnder(`messages/${tenant}/`)).toHaveLength(1);
  });
});
