/**
 * Attachments through the mailer (DESIGN §13) to a real smtp-server, parsed back with mailparser:
 * the bytes arrive identical, streamed from their source as the relay takes the body.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { simpleParser } from 'mailparser';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NodemailerMailer } from '../../lambdas/adapters/NodemailerMailer.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import { AttachmentMissingError } from '../../lambdas/ports/AttachmentStore.js';
import type { OutgoingAttachment, OutgoingEmail } from '../../lambdas/ports/Mailer.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';

const TIMEOUTS = { connectionMs: 5000, greetingMs: 5000, dnsMs: 5000, preDotMs: 60_000, replyMs: 10_000 };
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** A small but real PDF. */
const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj ' +
    '3 0 obj<</Type/Page/MediaBox[0 0 612 792]/Parent 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);

/** An attachment served in 64 KiB chunks, as an S3 body is; counts how often it was opened. */
function served(
  filename: string,
  contentType: string,
  bytes: Buffer,
): OutgoingAttachment & { opened: number } {
  const attachment = {
    filename,
    contentType,
    opened: 0,
    async open() {
      attachment.opened += 1;
      return Readable.from(
        (function* () {
          for (let at = 0; at < bytes.length; at += 65_536) yield bytes.subarray(at, at + 65_536);
        })(),
      );
    },
  };
  return attachment;
}

function email(attachments: readonly OutgoingAttachment[]): OutgoingEmail {
  return {
    id: '01JTESTATTACHMENTS00000000',
    from: 'Ops <ops@example.com>',
    to: ['ada@example.org'],
    cc: [],
    bcc: [],
    replyTo: null,
    subject: 'Your invoice',
    text: 'Attached.',
    html: null,
    headers: {},
    envelope: ['ada@example.org'],
    attachments,
  };
}

describe('attachments through the mailer to a real SMTP server', () => {
  let server: TestSmtpServer;
  let mailer: NodemailerMailer;

  beforeAll(async () => {
    server = await startSmtpServer();
  });
  afterAll(async () => {
    await server.close();
  });
  afterEach(async () => {
    await mailer.close();
  });
  const newMailer = () =>
    new NodemailerMailer({
      host: server.host,
      port: server.port,
      secure: false,
      requireTls: false,
      messageIdDomain: 'mail.test',
      credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
      timeouts: TIMEOUTS,
    });

  it('delivers a PDF and a 20 MB file byte-identical, with their names (RFC 2231 for non-ASCII) and types', async () => {
    mailer = newMailer();
    server.script();
    const big = randomBytes(20 * 1024 * 1024);
    const before = server.received.length;

    const outcome = await mailer.send(
      email([
        served('Rechnung März 2026.pdf', 'application/pdf', PDF),
        served('statement.bin', 'application/octet-stream', big),
      ]),
    );

    expect(outcome).toMatchObject({ delivered: true });
    const raw = server.received[before]?.raw ?? '';
    expect(raw).toMatch(/filename\*0\*?=|filename\*=utf-8''/i);
    const parsed = await simpleParser(raw);
    expect(parsed.text?.trim()).toBe('Attached.');
    expect(
      parsed.attachments.map((a) => ({
        filename: a.filename,
        type: a.contentType,
        size: a.size,
        sha256: sha256(a.content),
      })),
    ).toEqual([
      { filename: 'Rechnung März 2026.pdf', type: 'application/pdf', size: PDF.length, sha256: sha256(PDF) },
      { filename: 'statement.bin', type: 'application/octet-stream', size: big.length, sha256: sha256(big) },
    ]);
  }, 120_000);

  it('opens nothing when the relay refuses the transaction before DATA', async () => {
    mailer = newMailer();
    server.script({ mailFrom: { code: 550, message: '5.7.1 sender refused' } });
    const file = served('a.pdf', 'application/pdf', PDF);

    const outcome = await mailer.send(email([file]));

    expect(outcome).toMatchObject({ delivered: false });
    expect(file.opened).toBe(0);
  });

  // DESIGN §2: an attempt is a transaction in which the relay saw the message (MAIL FROM sent). The
  // attachment is opened after the relay's 354, so a failure to read it comes inside the transaction:
  // it counts (else the message would retry for ever and never go dead).
  it.each([
    [
      'cannot be opened',
      (): Promise<AsyncIterable<Uint8Array>> => Promise.reject(new Error('the store is unreachable')),
      'transient',
    ],
    [
      'fails half-way through its bytes',
      async (): Promise<AsyncIterable<Uint8Array>> =>
        Readable.from(
          (async function* () {
            yield PDF.subarray(0, 16);
            throw new Error('the read was reset');
          })(),
        ),
      'transient',
    ],
    [
      'is gone from the store',
      (): Promise<AsyncIterable<Uint8Array>> => Promise.reject(new AttachmentMissingError('messages/t/m/0')),
      'permanent',
    ],
  ] as const)(
    'an attachment that %s fails the attempt before the final dot, as the message’s outcome: nothing is delivered',
    async (_name, open, expectedClass) => {
      mailer = newMailer();
      server.script();
      const before = server.received.length;
      const transactions = server.transactions;

      const outcome = await mailer.send(
        email([{ filename: 'gone.pdf', contentType: 'application/pdf', open }]),
      );

      expect(outcome.delivered ? 'delivered' : outcome.failure).toMatchObject({
        origin: 'transaction',
        class: expectedClass,
        code: 'ESTREAM',
      });
      expect(outcome.delivered ? 'delivered' : outcome.failure.origin).toBe('transaction');
      // The relay saw the transaction (MAIL FROM), never a whole message.
      expect(server.transactions).toBe(transactions + 1);
      expect(server.received.length).toBe(before);
    },
  );
});
