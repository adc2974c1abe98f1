/**
 * Invoices uploaded through `POST /v1/attachments` as a developer sees them in the mail viewer of
 * `npm start` (DESIGN §7, §13; decision 0258): the whole local stack (API, S3 emulator, relay,
 * queue, sender) delivers to MailDev, reached as a relay exactly as local/start.ts wires it, and
 * MailDev's REST API (what its page reads) lists each file under the name given, with its type, and
 * serves its exact bytes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { type MaildevViewer, startMaildevViewer } from '../../local/smtp/maildevViewer.js';
import { postLocalMessage } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';

const API_KEY = 'pd_viewer-uploads-key-0001';
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

interface ViewerAttachment {
  readonly filename: string;
  readonly generatedFileName: string;
  readonly contentType: string;
}

interface ViewerEmail {
  readonly id: string;
  readonly subject: string;
  readonly attachments?: readonly ViewerAttachment[];
}

describe('uploaded invoices in the mail viewer', () => {
  let viewer: MaildevViewer;
  let stack: LocalStack;

  beforeAll(async () => {
    viewer = await startMaildevViewer({ smtpPort: 0, webPort: 0, host: '127.0.0.1' });
    const config = loadConfig(
      { POSTDATE_API_KEY: API_KEY, SMTP_HOST: viewer.smtpHost, SMTP_PORT: String(viewer.smtpPort) },
      'local',
    );
    stack = await startLocalStack({
      config,
      ports: ANY_FREE_PORTS,
      quiet: true,
      externalViewer: { smtpPort: viewer.smtpPort, url: viewer.url },
    });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await viewer?.stop();
  });

  /** Reserves and PUTs `bytes` as a client does: the pre-signed URL, the declared type. */
  async function upload(filename: string, contentType: string, bytes: Buffer): Promise<string> {
    const reserved = await fetch(`${stack.apiUrl}/v1/attachments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ filename, content_type: contentType, size: bytes.length }),
    });
    expect(reserved.status).toBe(201);
    const { id, upload_url } = (await reserved.json()) as { id: string; upload_url: string };
    const put = await fetch(upload_url, {
      method: 'PUT',
      body: bytes,
      headers: { 'content-type': contentType },
    });
    expect(put.status).toBe(200);
    return id;
  }

  it('lists every file under the very name given (non-ASCII, quotes, semicolons, 200 characters) with its type, and serves its exact bytes', async () => {
    const files = [
      { filename: 'Rechnung "März"; Nr. 7.pdf', type: 'application/pdf', bytes: randomBytes(70_000) },
      { filename: '請求書 2026年12月.pdf', type: 'application/pdf', bytes: randomBytes(50_000) },
      { filename: `${'Ä'.repeat(196)}.csv`, type: 'text/csv', bytes: Buffer.from('a;b\r\n1;2\r\n') },
      // Two invoices of one name and one size: a developer must still see both.
      { filename: 'invoice.pdf', type: 'application/pdf', bytes: randomBytes(1000) },
      { filename: 'invoice.pdf', type: 'application/pdf', bytes: randomBytes(1000) },
    ];
    const ids = [];
    for (const file of files) ids.push(await upload(file.filename, file.type, file.bytes));
    const subject = `Invoices ${randomBytes(4).toString('hex')}`;
    const enqueued = await postLocalMessage(stack, {
      secret: API_KEY,
      key: subject,
      body: {
        to: ['ada@example.com'],
        subject,
        text: 'Attached.',
        attachments: ids.map((attachment_id) => ({ attachment_id })),
      },
    });
    expect(enqueued.status).toBe(202);

    const email = await eventually(
      `${subject} in MailDev`,
      async () => {
        const emails = (await (await fetch(`${viewer.url}/api/email`)).json()) as ViewerEmail[];
        return emails.find((candidate) => candidate.subject === subject);
      },
      { withinMs: 60_000, everyMs: 100 },
    );
    const listed = email.attachments ?? [];
    expect(listed.map(({ filename, contentType }) => ({ filename, contentType }))).toEqual(
      files.map((file) => ({ filename: file.filename, contentType: file.type })),
    );
    const served = [];
    for (const attachment of listed) {
      const response = await fetch(
        `${viewer.url}/api/email/${email.id}/attachment/${encodeURIComponent(attachment.generatedFileName)}`,
      );
      expect(response.status).toBe(200);
      served.push(sha256(new Uint8Array(await response.arrayBuffer())));
    }
    expect(served).toEqual(files.map((file) => sha256(file.bytes)));
  }, 120_000);
});
