/**
 * S3 answers a PUT once the object is stored: a LIST or GET sent after the answer finds all of its
 * bytes (S3's read-after-write consistency). s3rver answered as soon as its write stream had been
 * handed the bytes, before they reached the disk, so a busy machine listed nothing right after a
 * 202 (CI at stop 56: test/api/batchAttachments.test.ts). Here the disk is made slow where s3rver
 * writes an object's bytes, so the old answer comes early every time.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { attachmentS3Client } from '../../lambdas/adapters/S3AttachmentStore.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';

type CreateWriteStream = (path: string) => Writable;
// The fs-extra s3rver itself requires (it has its own copy under node_modules/s3rver).
const s3rverFs = createRequire(createRequire(import.meta.url).resolve('s3rver/lib/stores/filesystem.js'))(
  'fs-extra',
) as { createWriteStream: CreateWriteStream };
const realCreateWriteStream = s3rverFs.createWriteStream;

let emulator: S3Emulator;

beforeAll(async () => {
  // A slow disk: a write stream takes its bytes at once and stores them 300 ms after its end
  // ('finish' comes once they are stored, as with a real file's stream).
  s3rverFs.createWriteStream = (path) => {
    const chunks: Buffer[] = [];
    return new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk);
        done();
      },
      final(done) {
        setTimeout(() => {
          const file = realCreateWriteStream(path);
          file.on('error', done).on('finish', () => done());
          file.end(Buffer.concat(chunks));
        }, 300);
      },
    });
  };
  emulator = await startS3Emulator({ port: 0, bucket: `writes-${randomBytes(4).toString('hex')}` });
});
afterAll(async () => {
  s3rverFs.createWriteStream = realCreateWriteStream;
  await emulator?.stop();
});

it('answers a PUT once its bytes are stored: a LIST and a GET right after it find the whole object', async () => {
  const client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
  for (const size of [1_000, 3 * 1024 * 1024]) {
    const bytes = randomBytes(size);
    const key = `messages/t1/m-${size}/0-invoice`;
    await client.send(new PutObjectCommand({ Bucket: emulator.bucket, Key: key, Body: bytes }));

    const listed = await client.send(new ListObjectsV2Command({ Bucket: emulator.bucket, Prefix: key }));
    expect((listed.Contents ?? []).map((object) => object.Key)).toEqual([key]);
    const got = await client.send(new GetObjectCommand({ Bucket: emulator.bucket, Key: key }));
    expect(Buffer.from((await got.Body?.transformToByteArray()) ?? []).equals(bytes)).toBe(true);
  }
});
