/**
 * Attachments through the whole local stack (DESIGN §7, §13): a PDF inline, and a 5 MB file uploaded
 * through `POST /v1/attachments` and its pre-signed URL; the bytes go to the S3 emulator, and the
 * sender streams them to the SMTP sink byte-identical.
 */
import { createHash, randomBytes } from 'node:crypto';
import { GetObjectTaggingCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client } from '../../lambdas/adapters/S3AttachmentStore.js';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';

const PDF = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n');
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** The attachments of the message `id` as the SMTP sink received it: name, type and SHA-256. */
async function deliveredAttachments(stack: LocalStack, id: string, withinMs: number) {
  const mail = await eventually(
    `message ${id} at the SMTP sink`,
    () => stack.smtpSink?.messages().find((message) => message.postdateId === id),
    { withinMs, everyMs: 100 },
  );
  const parsed = await simpleParser(mail.raw);
  return parsed.attachments.map((a) => ({
    filename: a.filename,
    type: a.contentType,
    sha256: sha256(a.content),
  }));
}

describe('an attachment on the local stack', () => {
  let stack: LocalStack;

  beforeAll(async () => {
    const config = loadConfig({ POSTDATE_API_KEY: 'pd_local-stack-attachments-01' }, 'local');
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('stores the bytes in the S3 emulator and delivers them to the SMTP sink byte-identical', async () => {
    const enqueued = await fetch(`${stack.apiUrl}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': 'local-attachment-1',
      },
      body: JSON.stringify({
        to: ['ada@example.com'],
        subject: 'Your invoice',
        text: 'Attached.',
        attachments: [{ filename: 'invoice.pdf', content: PDF.toString('base64') }],
      }),
    });
    expect(enqueued.status).toBe(202);
    const { id } = (await enqueued.json()) as { id: string };

    expect(await deliveredAttachments(stack, id, 30_000)).toEqual([
      { filename: 'invoice.pdf', type: 'application/pdf', sha256: sha256(PDF) },
    ]);

    // Sent: the message has ended, and its objects are tagged for the bucket's expiry (DESIGN §2).
    const s3 = attachmentS3Client(stack.s3Endpoint, LOCAL_AWS);
    const listed = await s3.send(
      new ListObjectsV2Command({ Bucket: stack.attachmentBucket, Prefix: `messages/local/${id}/` }),
    );
    const key = listed.Contents?.[0]?.Key ?? '';
    // Written `pending`, tagged `live` when the message was accepted, `ended` once it was sent (0144).
    const tags = await eventually(
      `the tag ended on ${key}`,
      async () => {
        const tagging = await s3.send(
          new GetObjectTaggingCommand({ Bucket: stack.attachmentBucket, Key: key }),
        );
        const ended = tagging.TagSet?.some((tag) => tag.Value === 'ended');
        return ended ? tagging.TagSet : undefined;
      },
      { withinMs: 30_000, everyMs: 100 },
    );
    expect(tags).toEqual([{ Key: 'postdate-lifetime', Value: 'ended' }]);
  }, 60_000);

  it('takes a 5 MB file uploaded through POST /v1/attachments and delivers it byte-identical', async () => {
    const headers = { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' };
    const bytes = randomBytes(5 * 1024 * 1024);
    const reserved = await fetch(`${stack.apiUrl}/v1/attachments`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ filename: 'ledger.zip', content_type: 'application/zip', size: bytes.length }),
    });
    expect(reserved.status).toBe(201);
    const { id: attachmentId, upload_url } = (await reserved.json()) as { id: string; upload_url: string };
    const put = await fetch(upload_url, {
      method: 'PUT',
      body: bytes,
      headers: { 'content-type': 'application/zip' },
    });
    expect(put.status).toBe(200);

    const enqueued = await fetch(`${stack.apiUrl}/v1/messages`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': 'local-attachment-upload-1' },
      body: JSON.stringify({
        to: ['ada@example.com'],
        subject: 'Your ledger',
        text: 'Attached.',
        attachments: [{ attachment_id: attachmentId }],
      }),
    });
    expect(enqueued.status).toBe(202);
    const { id } = (await enqueued.json()) as { id: string };

    expect(await deliveredAttachments(stack, id, 60_000)).toEqual([
      { filename: 'ledger.zip', type: 'application/zip', sha256: sha256(bytes) },
    ]);
  }, 120_000);
});
