import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lazyS3AttachmentStore } from '../../lambdas/adapters/LazyS3AttachmentStore.js';
import { AttachmentMissingError } from '../../lambdas/ports/AttachmentStore.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';

let emulator: S3Emulator;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `lazy-${randomBytes(4).toString('hex')}` });
});
afterAll(async () => {
  await emulator?.stop();
});

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

describe('the attachment store built on first use (against s3rver)', () => {
  it('answers as the S3 store does, from its bucket, endpoint and client settings alone', async () => {
    const store = lazyS3AttachmentStore({
      bucket: emulator.bucket,
      endpoint: emulator.endpoint,
      config: LOCAL_AWS,
    });
    const bytes = new Uint8Array(randomBytes(10_000));
    await store.put('messages/acme/m1/a', bytes, 'text/plain');
    expect(await store.describe('messages/acme/m1/a')).toEqual({
      size: 10_000,
      contentType: 'text/plain',
      etag: expect.any(String),
    });
    expect(await store.read('messages/acme/m1/a')).toEqual(bytes);
    expect(await readAll(await store.open('messages/acme/m1/a'))).toEqual(Buffer.from(bytes));
    expect(await store.copy('messages/acme/m1/a', 'messages/acme/m2/a')).toEqual({
      sha256: await store.hash('messages/acme/m1/a'),
    });
    expect(await store.describe('messages/acme/none')).toBeUndefined();
    await expect(store.open('messages/acme/none')).rejects.toBeInstanceOf(AttachmentMissingError);
  });

  it('pre-signs an upload that S3 accepts with the signed size and type', async () => {
    const store = lazyS3AttachmentStore({
      bucket: emulator.bucket,
      endpoint: emulator.endpoint,
      config: LOCAL_AWS,
    });
    const now = new Date();
    const upload = await store.presignPut('uploads/acme/att_1', {
      size: 5,
      contentType: 'text/plain',
      expiresInSeconds: 60,
      now,
    });
    const response = await fetch(upload.url, {
      method: 'PUT',
      body: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    expect(response.status).toBe(200);
    expect(await store.describe('uploads/acme/att_1')).toEqual({
      size: 5,
      contentType: 'text/plain',
      etag: expect.any(String),
    });
  });
});
