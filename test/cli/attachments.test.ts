/**
 * `postdate attachments upload FILE` (DESIGN §13): through the typed client to the api handler on
 * DynamoDB Local (the client's fetch calls the handler in-process) and the pre-signed PUT to s3rver;
 * the id it prints is one an enqueue can reference, with the file's bytes behind it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentsUpload } from '../../cli/attachmentsCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import { createPostdateClient } from '../../lambdas/client/index.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { apiHarness } from '../api/apiHarness.js';
import { apiEvent, enqueueEvent, validBody } from '../api/events.js';
import { LOCAL_AWS } from '../support/awsLocal.js';

let emulator: S3Emulator;
let store: S3AttachmentStore;
let dir: string;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `cli-${randomBytes(4).toString('hex')}` });
  store = new S3AttachmentStore({
    bucket: emulator.bucket,
    client: attachmentS3Client(emulator.endpoint, LOCAL_AWS),
  });
  dir = await mkdtemp(join(tmpdir(), 'postdate-cli-attachments-'));
});
afterAll(async () => {
  await emulator?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function clientOnHarness() {
  const api = await apiHarness({ attachments: store });
  api.clock.set(new Date().toISOString());
  const client = createPostdateClient({
    baseUrl: 'https://postdate.test',
    apiKey: 'pd_test',
    fetch: async (request) => {
      const result = await api.handle(
        apiEvent({
          method: request.method,
          path: new URL(request.url).pathname,
          body: await request.text(),
          headers: { 'content-type': 'application/json' },
        }),
      );
      return new Response(result.body ?? null, {
        status: result.statusCode ?? 200,
        headers: (result.headers ?? {}) as Record<string, string>,
      });
    },
  });
  return { api, client };
}

describe('postdate attachments upload', () => {
  it('uploads the file, prints its id, and an enqueue referencing it carries its bytes', async () => {
    const { api, client } = await clientOnHarness();
    const bytes = randomBytes(200_000);
    const path = join(dir, 'statement.pdf');
    await writeFile(path, bytes);
    const out = memoryOutput();
    const report = await attachmentsUpload(client, { path }, out);

    expect(out.lines).toEqual([report.id]);
    expect(report).toMatchObject({
      filename: 'statement.pdf',
      content_type: 'application/pdf',
      size: bytes.length,
    });
    const enqueued = await api.call(
      enqueueEvent(validBody({ attachments: [{ attachment_id: report.id }] }), { key: 'cli-upload' }),
    );
    expect(enqueued.status).toBe(202);
    expect(enqueued.json.attachments).toEqual([
      {
        filename: 'statement.pdf',
        content_type: 'application/pdf',
        size: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
      },
    ]);
  });

  it('with --json prints one document: id, filename, content_type, size, expires_at', async () => {
    const { client } = await clientOnHarness();
    const path = join(dir, 'data.bin');
    await writeFile(path, randomBytes(10));
    const out = memoryOutput({ json: true });
    await attachmentsUpload(
      client,
      { path, contentType: 'application/octet-stream', filename: 'export.dat' },
      out,
    );

    expect(out.documents).toEqual([
      {
        id: expect.stringMatching(/^att_[0-9a-z]{26}$/),
        filename: 'export.dat',
        content_type: 'application/octet-stream',
        size: 10,
        expires_at: expect.any(String),
      },
    ]);
  });

  it('refuses what is not a file, and an executable through the API (400 naming the field)', async () => {
    const { client } = await clientOnHarness();
    await expect(attachmentsUpload(client, { path: dir }, memoryOutput())).rejects.toMatchObject({
      name: 'UsageError',
    });
    const path = join(dir, 'setup.exe');
    await writeFile(path, randomBytes(10));
    await expect(attachmentsUpload(client, { path }, memoryOutput())).rejects.toMatchObject({
      status: 400,
      errors: [expect.objectContaining({ field: '/filename' })],
    });
  });
});
