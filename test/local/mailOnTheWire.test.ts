/**
 * The email as the recipient's server receives it (DESIGN §3, §5, §10, §13; RFC 5322, 2045–2047,
 * 2231): enqueued over HTTP on the local stack, sent by the sender, read raw at the SMTP sink and
 * parsed with mailparser. Envelope against headers, Message-ID and Date, non-ASCII, long lines,
 * dot-stuffing, the MIME structure, attachments, the caller's headers and a template's render.
 * Covers lambdas/adapters/NodemailerMailer.ts (composeMessage) and the enqueue's header rules
 * (lambdas/core/headerSafety.ts, addresses.ts); the review is docs/decisions/0234.
 */
import { randomBytes } from 'node:crypto';
import { type AddressObject, type ParsedMail, simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { decodeEncodedWords } from '../../local/smtp/mailHeaders.js';
import type { ReceivedMail } from '../../local/smtp/smtpSink.js';
import { eventually } from '../support/eventually.js';

const API_KEY = 'pd_local-stack-wire-key-0001';

let stack: LocalStack;
let keys = 0;

beforeAll(async () => {
  const config = loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local');
  stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

function call(method: string, path: string, body?: unknown, idempotent = false): Promise<Response> {
  return fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${stack.apiKey}`,
      'content-type': 'application/json',
      ...(idempotent ? { 'idempotency-key': `wire-${++keys}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** Enqueues `body` and answers the mail the sink received for it, raw and parsed. */
async function delivered(body: Record<string, unknown>): Promise<{ mail: ReceivedMail; parsed: ParsedMail }> {
  const enqueued = await call('POST', '/v1/messages', body, true);
  expect(enqueued.status, await enqueued.clone().text()).toBe(202);
  const { id } = (await enqueued.json()) as { id: string };
  const mail = await eventually(
    `message ${id} at the SMTP sink`,
    () => stack.smtpSink?.messages().find((message) => message.postdateId === id),
    { withinMs: 30_000, everyMs: 50 },
  );
  return { mail, parsed: await simpleParser(mail.raw) };
}

/** The raw header block, unfolded lines kept as received. */
const headerBlock = (raw: Buffer) => raw.toString('utf8').split('\r\n\r\n', 1)[0] ?? '';
/** How many header fields of this name the raw message carries. */
const headerCount = (raw: Buffer, name: string) =>
  headerBlock(raw)
    .split('\r\n')
    .filter((line) => line.toLowerCase().startsWith(`${name.toLowerCase()}:`)).length;
const addresses = (field: AddressObject | AddressObject[] | undefined) =>
  (Array.isArray(field) ? field : field ? [field] : []).flatMap((object) =>
    object.value.map((entry) => ({ name: entry.name, address: entry.address })),
  );

describe('the envelope and the headers (RFC 5321/5322)', () => {
  it('puts bcc in RCPT TO only, cc in Cc:, the from address in MAIL FROM; a unique Message-ID and an RFC 5322 Date', async () => {
    const { mail, parsed } = await delivered({
      from: '"Ops, Team" <ops@example.com>',
      to: ['"Ada \\"the Countess\\" Lovelace" <ada@example.com>'],
      cc: ['Zoë Müller <zoe@example.com>'],
      bcc: ['hidden@example.com'],
      reply_to: 'Support <help@example.com>',
      subject: 'Envelope',
      text: 'Hello.',
    });
    expect(mail.envelope.from).toBe('ops@example.com');
    expect([...mail.envelope.to].sort()).toEqual([
      'ada@example.com',
      'hidden@example.com',
      'zoe@example.com',
    ]);
    expect(headerCount(mail.raw, 'Bcc')).toBe(0);
    expect(mail.raw.toString('utf8')).not.toContain('hidden@example.com');
    expect(addresses(parsed.from)).toEqual([{ name: 'Ops, Team', address: 'ops@example.com' }]);
    expect(addresses(parsed.to)).toEqual([
      { name: 'Ada "the Countess" Lovelace', address: 'ada@example.com' },
    ]);
    expect(addresses(parsed.cc)).toEqual([{ name: 'Zoë Müller', address: 'zoe@example.com' }]);
    expect(addresses(parsed.replyTo)).toEqual([{ name: 'Support', address: 'help@example.com' }]);
    expect(parsed.messageId).toBe(`<${mail.postdateId}@postdate.local>`);
    const date = /^Date: (.*)$/m.exec(headerBlock(mail.raw))?.[1] ?? '';
    // RFC 5322 §3.3: [day-of-week ","] day month year hour ":" minute [":" second] zone
    expect(date).toMatch(
      /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}$/,
    );
    expect(Math.abs(Date.parse(date) - Date.now())).toBeLessThan(10 * 60_000);
    for (const name of ['From', 'To', 'Cc', 'Reply-To', 'Subject', 'Date', 'Message-ID', 'MIME-Version'])
      expect(headerCount(mail.raw, name), name).toBe(1);
  }, 40_000);

  it('delivers to a mailbox named more than once (to, cc, bcc) and counts each place accepted', async () => {
    const { mail } = await delivered({
      to: ['Ada <ada@example.com>'],
      cc: ['ada@EXAMPLE.com'],
      bcc: ['ada@example.com', 'bob@example.com'],
      subject: 'Once',
      text: 'Hello.',
    });
    // smtp-server keeps one RCPT TO per address; the commands sent (one for Ada) are read in
    // test/adapters/nodemailerMailer.test.ts (decision 0234).
    expect(mail.envelope.to).toEqual(['ada@example.com', 'bob@example.com']);
    const view = await eventually(
      'the message sent',
      async () => {
        const message = (await (await call('GET', `/v1/messages/${mail.postdateId}`)).json()) as {
          status: string;
          recipients: Record<string, number>;
        };
        return message.status === 'sent' ? message : undefined;
      },
      { withinMs: 20_000, everyMs: 50 },
    );
    expect(view.recipients).toEqual({ accepted: 4, pending: 0, rejected: 0, suppressed: 0 });
  }, 40_000);

  it('gives an internationalised domain as A-labels in the headers, and the envelope reaches its mailbox', async () => {
    const { mail, parsed } = await delivered({
      from: 'Ops <ops@exämple.com>',
      to: ['ada@bücher.example'],
      subject: 'IDN',
      text: 'Hello.',
    });
    // smtp-server shows a received domain in Unicode; the commands on the wire, A-labels as the
    // headers, are read in test/adapters/nodemailerMailer.test.ts (decision 0234).
    expect(mail.envelope).toEqual({ from: 'ops@exämple.com', to: ['ada@bücher.example'] });
    expect(addresses(parsed.to)).toEqual([{ name: '', address: 'ada@bücher.example' }]);
    expect(headerBlock(mail.raw)).toContain('To: ada@xn--bcher-kva.example');
  }, 40_000);
});

describe('non-ASCII, long lines and lines that SMTP treats specially (RFC 2045–2047, 5321 §4.5.2)', () => {
  const subject = `Grüße, Zoë — your order is ready 🎉 ${'déjà vu '.repeat(12)}end`;
  const longLine = `${'a'.repeat(1500)} ü ${'b'.repeat(1500)}`;
  const text = [
    'Grüße aus Köln ✓',
    '.a line that begins with a dot',
    '.',
    '..two dots',
    'a bare\rCR and a bare\nLF',
    'From the start of a line',
    longLine,
    'last',
  ].join('\n');
  /** What a reader gets: a bare CR is sent as a line end (CRLF), as a bare LF is. */
  const textRead = text.replace(/\r(?!\n)/g, '\n');
  const html = `<p>Grüße ✓</p>\n<p>${'c'.repeat(2500)}</p>\n.\n<p>From here</p>`;

  it('decodes to what was enqueued: subject, text and html, with every line within 998 and header lines folded', async () => {
    const { mail, parsed } = await delivered({ to: ['ada@example.com'], subject, text, html });
    expect(parsed.subject).toBe(subject);
    expect(parsed.text).toBe(textRead);
    expect(parsed.html).toBe(html);
    expect(parsed.headers.get('content-type')).toMatchObject({ value: 'multipart/alternative' });
    const lines = mail.raw.toString('utf8').split('\r\n');
    expect(Math.max(...lines.map((line) => Buffer.byteLength(line)))).toBeLessThanOrEqual(998);
    expect(
      Math.max(
        ...headerBlock(mail.raw)
          .split('\r\n')
          .map((line) => line.length),
      ),
    ).toBeLessThanOrEqual(78);
    // 7-bit on the wire: no relay needs 8BITMIME for this message.
    expect([...mail.raw].every((byte) => byte < 0x80)).toBe(true);
    // RFC 5321 §2.3.8: CR and LF only together, as line ends.
    expect(mail.raw.toString('latin1')).not.toMatch(/\r(?!\n)|(?<!\r)\n/);
  }, 40_000);

  it('sends text alone as text/plain and html alone as text/html, each with its charset', async () => {
    const textOnly = await delivered({ to: ['ada@example.com'], subject: 'Text', text });
    expect(textOnly.parsed.headers.get('content-type')).toMatchObject({
      value: 'text/plain',
      params: { charset: 'utf-8' },
    });
    // A single part's last line ends with CRLF, which mailparser keeps as a newline.
    expect(textOnly.parsed.text).toBe(`${textRead}\n`);
    const htmlOnly = await delivered({ to: ['ada@example.com'], subject: 'Html', html });
    expect(htmlOnly.parsed.headers.get('content-type')).toMatchObject({
      value: 'text/html',
      params: { charset: 'utf-8' },
    });
    expect(htmlOnly.parsed.html).toBe(`${html}\n`);
  }, 60_000);
});

describe('attachments (DESIGN §13, RFC 2183, 2231)', () => {
  it('carries the bytes exactly, as an attachment, with a non-ASCII filename', async () => {
    const bytes = randomBytes(4099);
    const { parsed, mail } = await delivered({
      to: ['ada@example.com'],
      subject: 'Invoice',
      text: 'Attached.',
      html: '<p>Attached.</p>',
      attachments: [
        {
          filename: 'Rechnung März – "Zoë"; v=2.pdf',
          content_type: 'application/pdf',
          content: bytes.toString('base64'),
        },
      ],
    });
    expect(parsed.headers.get('content-type')).toMatchObject({ value: 'multipart/mixed' });
    expect(parsed.attachments).toHaveLength(1);
    const [attachment] = parsed.attachments;
    expect(attachment?.filename).toBe('Rechnung März – "Zoë"; v=2.pdf');
    expect(attachment?.contentType).toBe('application/pdf');
    expect(attachment?.contentDisposition).toBe('attachment');
    expect(Buffer.compare(attachment?.content ?? Buffer.alloc(0), bytes)).toBe(0);
    expect(parsed.text?.trim()).toBe('Attached.');
    expect([...mail.raw].every((byte) => byte < 0x80)).toBe(true);
  }, 40_000);
});

describe("the caller's headers (DESIGN §3)", () => {
  it('carries an allowed header once, non-ASCII encoded', async () => {
    const { mail, parsed } = await delivered({
      to: ['ada@example.com'],
      subject: 'Headers',
      text: 'Hi.',
      headers: {
        'X-Campaign': '42',
        'X-Note': 'Grüße ✓',
        // RFC 2369 and 8058 one-click: DESIGN asks none of Postdate, so the caller gives them.
        'List-Unsubscribe': '<https://example.com/u/1>',
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
    });
    expect(headerCount(mail.raw, 'X-Campaign')).toBe(1);
    expect(parsed.headers.get('x-campaign')).toBe('42');
    // An unstructured field (RFC 5322 §3.6.8) as RFC 2047 words; mailparser decodes only the fields it knows.
    expect(decodeEncodedWords(String(parsed.headers.get('x-note')))).toBe('Grüße ✓');
    expect(headerCount(mail.raw, 'List-Unsubscribe')).toBe(1);
    expect(headerBlock(mail.raw)).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/m);
    expect(headerCount(mail.raw, 'List-Unsubscribe-Post')).toBe(1);
    expect(headerCount(mail.raw, 'X-Postdate-Id')).toBe(1);
  }, 40_000);

  it.each([
    'From',
    'to',
    'BCC',
    'Message-Id',
    'Content-Type',
    'content-transfer-encoding',
    'Date',
    'MIME-Version',
    'Return-Path',
    'X-Postdate-Id',
  ])('refuses %s at enqueue', async (name) => {
    const answer = await call(
      'POST',
      '/v1/messages',
      { to: ['ada@example.com'], subject: 's', text: 't', headers: { [name]: 'x' } },
      true,
    );
    expect(answer.status).toBe(400);
  });

  it.each([
    ['a header value', { headers: { 'X-A': 'one\r\nBcc: evil@example.com' } }],
    ['a header value with LF alone', { headers: { 'X-A': 'one\nBcc: evil@example.com' } }],
    ['the subject', { subject: 'one\r\nBcc: evil@example.com' }],
    ['a display name', { to: ['"Ada\r\nBcc: evil@example.com" <ada@example.com>'] }],
    ['from', { from: 'ops@example.com\r\nBcc: evil@example.com' }],
    ['reply_to', { reply_to: 'help@example.com\nBcc: evil@example.com' }],
    [
      'an attachment filename',
      { attachments: [{ filename: 'a.pdf\r\nBcc: evil@example.com', content: 'AAAA' }] },
    ],
  ])('refuses CR or LF in %s at enqueue', async (_field, fields) => {
    const answer = await call(
      'POST',
      '/v1/messages',
      { to: ['ada@example.com'], subject: 's', text: 't', ...fields },
      true,
    );
    expect(answer.status).toBe(400);
  });
});

describe('a template (DESIGN §10)', () => {
  it('arrives exactly as its render preview shows it', async () => {
    const stored = await call('PUT', '/v1/templates/wire-receipt', {
      subject: 'Grüße {{name}}: order {{order}} — {{note}}',
      text: 'Hi {{name}},\n.{{order}}\nFrom us: {{note}}\n{{long}}',
      html: '<p>Hi {{name}}</p>\n<p>{{note}}</p>\n<p>{{long}}</p>',
    });
    expect(stored.status).toBe(201);
    const data = { name: 'Zoë "Z" <z>', order: 'A-17', note: 'tea & cups ✓', long: 'x'.repeat(1200) };
    const preview = await call('POST', '/v1/templates/wire-receipt/render', { data });
    expect(preview.status).toBe(200);
    const shown = (await preview.json()) as { subject: string; text: string; html: string };

    const { parsed } = await delivered({ to: ['ada@example.com'], template: { name: 'wire-receipt' }, data });
    expect(parsed.subject).toBe(shown.subject);
    expect(parsed.text).toBe(shown.text);
    expect(parsed.html).toBe(shown.html);
  }, 40_000);
});
