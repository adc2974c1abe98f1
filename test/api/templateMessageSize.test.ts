/**
 * A template message's whole size (DESIGN §13: "the whole message within POSTDATE_MAX_MESSAGE_MB";
 * §10: "a template error is a 422 at enqueue, not a failure at send time"), against DynamoDB Local
 * and the S3 emulator: the rendered subject, text and html count as an inline message's do, so a
 * template message that is too large with its attachments is refused at enqueue exactly as its
 * inline twin is — 413 naming `/attachments`, nothing stored — single and in a batch.
 */
import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import { maxUploadBytes } from '../../lambdas/core/attachments.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent } from './events.js';

let emulator: S3Emulator;
let client: S3Client;
let store: S3AttachmentStore;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `size-${randomBytes(4).toString('hex')}` });
  client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
  store = new S3AttachmentStore({ bucket: emulator.bucket, client });
});
afterAll(async () => {
  await emulator?.stop();
});

type Api = Awaited<ReturnType<typeof apiHarness>>;

const MAX_MESSAGE_MB = 1;
/** The largest file `POST /v1/attachments` takes: it fits a message by itself, and any body byte tips it over. */
const FILE = randomBytes(
  maxUploadBytes({ maxMessageBytes: MAX_MESSAGE_MB * 1024 * 1024, inlineMaxBytes: 3072 * 1024 }),
);
const NOTE = 'Your invoice is attached.';

/** The same message, inline and as the `invoice` template renders it, with the uploaded file. */
function twins(attachmentId: string) {
  const envelope = {
    to: ['ada@example.com'],
    from: 'ops@example.com',
    attachments: [{ attachment_id: attachmentId }],
  };
  return {
    inline: { ...envelope, subject: 'Invoice 42', text: NOTE, html: `<p>${NOTE}</p>` },
    templated: { ...envelope, template: { name: 'invoice' }, data: { n: 42, note: NOTE } },
  };
}

/**
 * An api whose messages may be MAX_MESSAGE_MB in all, on the real clock (the emulator checks a
 * pre-signed URL's expiry against its own), with the `invoice` template of `tenant` and FILE
 * uploaded through `POST /v1/attachments`: the api and the upload's id.
 */
async function invoiceApi(tenant: string): Promise<{ api: Api; attachmentId: string }> {
  const api = await apiHarness({ attachments: store, maxMessageMb: MAX_MESSAGE_MB });
  api.clock.set(new Date().toISOString());
  const stored = await api.call(
    apiEvent({
      method: 'PUT',
      path: '/v1/templates/invoice',
      body: { subject: 'Invoice {{n}}', text: '{{note}}', html: '<p>{{note}}</p>' },
      tenant,
    }),
  );
  expect(stored.status).toBe(201);
  const contentType = 'application/pdf';
  const reserved = await api.call(
    apiEvent({
      method: 'POST',
      path: '/v1/attachments',
      body: { filename: 'invoice.pdf', content_type: contentType, size: FILE.length },
      tenant,
    }),
  );
  expect(reserved.status).toBe(201);
  const put = await fetch(String(reserved.json.upload_url), {
    method: 'PUT',
    body: FILE,
    headers: { 'content-type': contentType },
  });
  expect(put.status).toBe(200);
  return { api, attachmentId: String(reserved.json.id) };
}

async function keysUnder(prefix: string): Promise<string[]> {
  const listed = await client.send(new ListObjectsV2Command({ Bucket: emulator.bucket, Prefix: prefix }));
  return (listed.Contents ?? []).map((object) => object.Key ?? '');
}

const freshTenant = () => `t${randomBytes(4).toString('hex')}`;

describe("a template message's rendered body counts in its whole size (DESIGN §13)", () => {
  it('refuses a template message over POSTDATE_MAX_MESSAGE_MB as its inline twin: 413 naming /attachments, nothing stored', async () => {
    const tenant = freshTenant();
    const { api, attachmentId } = await invoiceApi(tenant);
    const { inline: inlineBody, templated: templateBody } = twins(attachmentId);
    const before = await api.scanAll();

    const inline = await api.call(enqueueEvent(inlineBody, { key: 'inline', tenant }));
    expect(inline.status).toBe(413);
    expect(inline.json.errors).toEqual([expect.objectContaining({ field: '/attachments' })]);

    const templated = await api.call(enqueueEvent(templateBody, { key: 'templated', tenant }));
    expect(templated.status).toBe(413);
    expect(templated.headers['content-type']).toBe('application/problem+json');
    expect(templated.json).toEqual(inline.json);
    expect(await keysUnder(`messages/${tenant}/`)).toEqual([]);
    expect(await api.scanAll()).toEqual(before);
  });

  it('refuses the same item in a batch as its inline twin, and a strict batch stores nothing', async () => {
    const tenant = freshTenant();
    const { api, attachmentId } = await invoiceApi(tenant);
    const { inline: inlineBody, templated: templateBody } = twins(attachmentId);
    const before = await api.scanAll();
    const batch = (mode: string) =>
      api.call(
        apiEvent({
          method: 'POST',
          path: '/v1/messages/batch',
          routeKey: 'POST /v1/messages/batch',
          body: {
            mode,
            messages: [
              { idempotency_key: `${mode}-inline`, ...inlineBody },
              { idempotency_key: `${mode}-templated`, ...templateBody },
            ],
          },
          tenant,
        }),
      );

    const permissive = await batch('permissive');
    expect(permissive.status).toBe(200);
    const [inline, templated] = permissive.json.results as {
      status: number;
      problem: { errors: { field: string }[] };
    }[];
    expect(inline?.status).toBe(413);
    expect(inline?.problem.errors).toEqual([expect.objectContaining({ field: '/messages/0/attachments' })]);
    expect(templated?.status).toBe(413);
    expect(templated?.problem.errors).toEqual([
      expect.objectContaining({ field: '/messages/1/attachments' }),
    ]);

    const strict = await batch('strict');
    expect(strict.status).toBe(400);
    expect((strict.json.errors as { field: string }[]).map((error) => error.field)).toEqual([
      '/messages/0/attachments',
      '/messages/1/attachments',
    ]);
    expect(await keysUnder(`messages/${tenant}/`)).toEqual([]);
    expect(await api.scanAll()).toEqual(before);
  });
});
