/**
 * An attachment through the whole local stack (DESIGN §7, §13): enqueue a PDF inline over HTTP; its
 * bytes go to the S3 emulator, and the sender streams them to the SMTP sink byte-identical.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';

const PDF = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n');
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function eventually<T>(probe: () => Promise<T | undefined>, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing after ${withinMs} ms`);
    await sleep(100);
  }
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

    const mail = await eventually(
      async () => stack.smtpSink?.messages().find((message) => message.postdateId === id),
      30_000,
    );
    const parsed = await simpleParser(mail.raw);
    expect(
      parsed.attachments.map((a) => ({
        filename: a.filename,
        type: a.contentType,
        sha256: sha256(a.content),
      })),
    ).toEqual([{ filename: 'invoice.pdf', type: 'application/pdf', sha256: sha256(PDF) }]);
  }, 60_000);
});
