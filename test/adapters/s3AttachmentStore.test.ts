import { createHash, randomBytes } from 'node:crypto';
import {
  DeleteObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import { AttachmentMissingError } from '../../lambdas/ports/AttachmentStore.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';

let emulator: S3Emulator;
let store: S3AttachmentStore;
let client: ReturnType<typeof attachmentS3Client>;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `att-${randomBytes(4).toString('hex')}` });
  client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
  store = new S3AttachmentStore({ bucket: emulator.bucket, client });
});
afterAll(async () => {
  await emulator?.stop();
});

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

describe('the attachment store on S3 (against s3rver)', () => {
  it('stores bytes and gives them back as a stream, byte for byte, with size and type', async () => {
    const bytes = new Uint8Array(randomBytes(300_000));
    await store.put('messages/acme/m1/a', bytes, 'application/pdf');

    // The ETag is the bytes' MD5, as S3 gives it for a PUT or a copy under SSE-S3 (decision 0258).
    expect(await store.describe('messages/acme/m1/a')).toEqual({
      size: 300_000,
      contentType: 'application/pdf',
      etag: `"${createHash('md5').update(bytes).digest('hex')}"`,
    });
    expect(sha256(await readAll(await store.open('messages/acme/m1/a')))).toBe(sha256(bytes));
    expect(await store.read('messages/acme/m1/a')).toEqual(bytes);
  });

  it('answers a missing object as missing: undefined to describe and read, AttachmentMissingError to open', async () => {
    expect(await store.describe('messages/acme/nothing')).toBeUndefined();
    expect(await store.read('messages/acme/nothing')).toBeUndefined();
    await expect(store.open('messages/acme/nothing')).rejects.toBeInstanceOf(AttachmentMissingError);
    await expect(store.open('messages/acme/nothing')).rejects.toMatchObject({ class: 'permanent' });
  });

  it("copies an upload into a message's area and answers the copy's SHA-256", async () => {
    const bytes = new Uint8Array(randomBytes(1000));
    await store.put('uploads/acme/att_1', bytes, 'image/png');

    expect(await store.copy('uploads/acme/att_1', 'messages/acme/m2/x')).toEqual({ sha256: sha256(bytes) });
    expect(await store.describe('messages/acme/m2/x')).toMatchObject({ size: 1000 });
    expect(await store.copy('uploads/acme/gone', 'messages/acme/m2/y')).toBeUndefined();
  });

  it('pre-signs a PUT with the size and the type in the signature, valid for the time asked', async () => {
    const now = new Date();
    const bytes = Buffer.from('%PDF-1.7 hello');
    const upload = await store.presignPut('uploads/acme/att_2', {
      size: bytes.length,
      contentType: 'application/pdf',
      expiresInSeconds: 3600,
      now,
    });

    const url = new URL(upload.url);
    expect(url.searchParams.get('X-Amz-SignedHeaders')?.split(';')).toEqual(
      expect.arrayContaining(['content-length', 'content-type', 'host']),
    );
    expect(url.searchParams.get('X-Amz-Expires')).toBe('3600');
    // No checksum of an empty body in the query: S3 would refuse the real bytes against it.
    expect([...url.searchParams.keys()].filter((name) => name.startsWith('x-amz-checksum'))).toEqual([]);
    // From the signing second (X-Amz-Date has whole seconds): when S3 stops taking it.
    expect(upload.expiresAt).toEqual(new Date(Math.floor(now.getTime() / 1000) * 1000 + 3_600_000));

    const put = await fetch(upload.url, {
      method: 'PUT',
      body: bytes,
      headers: { 'content-type': 'application/pdf' },
    });
    expect(put.status).toBe(200);
    expect(await store.describe('uploads/acme/att_2')).toEqual({
      size: bytes.length,
      contentType: 'application/pdf',
      etag: `"${createHash('md5').update(bytes).digest('hex')}"`,
    });
  });

  it.each([
    ['in 20 minutes', 20 * 60, 20 * 60 - 60],
    ['in 30 seconds (within the minute kept back)', 30, 1],
  ])(
    'signs for no longer than credentials ending %s last, a minute kept back for clocks, and says so',
    async (_when, credentialsSeconds, signedSeconds) => {
      const now = new Date(Math.floor(Date.now() / 1000) * 1000);
      const sessionStore = new S3AttachmentStore({
        bucket: emulator.bucket,
        client: attachmentS3Client(emulator.endpoint, {
          region: LOCAL_AWS.region,
          credentials: {
            ...LOCAL_AWS.credentials,
            sessionToken: 'session',
            expiration: new Date(now.getTime() + credentialsSeconds * 1000),
          },
        }),
      });
      const upload = await sessionStore.presignPut('uploads/acme/att_4', {
        size: 5,
        contentType: 'application/pdf',
        expiresInSeconds: 3600,
        now,
      });

      expect(new URL(upload.url).searchParams.get('X-Amz-Expires')).toBe(String(signedSeconds));
      expect(upload.expiresAt).toEqual(new Date(now.getTime() + signedSeconds * 1000));
    },
  );

  it.each([
    ['another size', Buffer.from('longer than five'), 'application/pdf'],
    ['another type', Buffer.from('%PDF1'), 'text/html'],
  ])(
    'refuses a PUT of %s than signed with 403 SignatureDoesNotMatch, as S3 does, and stores nothing',
    async (_what, body, type) => {
      const upload = await store.presignPut('uploads/acme/att_3', {
        size: 5,
        contentType: 'application/pdf',
        expiresInSeconds: 3600,
        now: new Date(),
      });
      const put = await fetch(upload.url, { method: 'PUT', body, headers: { 'content-type': type } });
      expect(put.status).toBe(403);
      expect(await put.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
      expect(await store.describe('uploads/acme/att_3')).toBeUndefined();

      const right = await fetch(upload.url, {
        method: 'PUT',
        body: Buffer.from('%PDF1'),
        headers: { 'content-type': 'application/pdf' },
      });
      expect(right.status).toBe(200);
      await client.send(new DeleteObjectCommand({ Bucket: emulator.bucket, Key: 'uploads/acme/att_3' }));
    },
  );

  it("tags an object with its message's lifetime; one already gone is no error, a missing bucket is", async () => {
    await store.put('messages/acme/m3/a', new Uint8Array([1]), 'application/pdf');
    await store.setLifetime('messages/acme/m3/a', 'ended');
    const tagging = await client.send(
      new GetObjectTaggingCommand({ Bucket: emulator.bucket, Key: 'messages/acme/m3/a' }),
    );
    expect(tagging.TagSet).toEqual([{ Key: 'postdate-lifetime', Value: 'ended' }]);

    await expect(store.setLifetime('messages/acme/m3/gone', 'ended')).resolves.toBeUndefined();
    const elsewhere = new S3AttachmentStore({ bucket: 'no-such-bucket-here', client });
    await expect(elsewhere.setLifetime('messages/acme/m3/a', 'ended')).rejects.toMatchObject({
      name: 'NoSuchBucket',
    });
  });

  it("ends an object's lifetime: one the rule says is too old is written again onto itself (a LastModified of now; type, metadata and bytes kept; tagged ended in the same request), any other only tagged", async () => {
    const key = 'messages/acme/m4/a';
    const head = () => client.send(new HeadObjectCommand({ Bucket: emulator.bucket, Key: key }));
    const tags = async () =>
      (await client.send(new GetObjectTaggingCommand({ Bucket: emulator.bucket, Key: key }))).TagSet;
    await client.send(
      new PutObjectCommand({
        Bucket: emulator.bucket,
        Key: key,
        Body: Buffer.from('%PDF-old'),
        ContentType: 'application/pdf',
        Metadata: { origin: 'inline' },
        Tagging: 'postdate-lifetime=live',
      }),
    );
    const longAgo = new Date(Date.UTC(2026, 0, 1));
    await emulator.backdate(key, longAgo);
    const seen: Date[] = [];
    expect(await store.endLifetime(key, (writtenAt) => seen.push(writtenAt) < 0)).toBe('tagged');
    expect(seen).toEqual([longAgo]);
    expect((await head()).LastModified).toEqual(longAgo);
    expect(await tags()).toEqual([{ Key: 'postdate-lifetime', Value: 'ended' }]);

    await store.setLifetime(key, 'live');
    const before = new Date(Math.floor(Date.now() / 1000) * 1000);
    expect(await store.endLifetime(key, () => true)).toBe('rewritten');
    const rewritten = await head();
    expect(rewritten.LastModified?.getTime()).toBeGreaterThanOrEqual(before.getTime());
    expect(rewritten.ContentType).toBe('application/pdf');
    expect(rewritten.Metadata).toEqual({ origin: 'inline' });
    expect(await tags()).toEqual([{ Key: 'postdate-lifetime', Value: 'ended' }]);
    expect(Buffer.from((await store.read(key)) ?? []).toString()).toBe('%PDF-old');

    expect(await store.endLifetime('messages/acme/m4/gone', () => true)).toBe('gone');
  });

  it('hashes an object as a stream; undefined when it is gone', async () => {
    const bytes = new Uint8Array(randomBytes(70_000));
    await store.put('uploads/acme/att_h', bytes, 'application/pdf');
    expect(await store.hash('uploads/acme/att_h')).toBe(sha256(bytes));
    expect(await store.hash('uploads/acme/gone')).toBeUndefined();
  });
});
