import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTransport } from 'nodemailer';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type MailViewer, startMailViewer } from '../../local/smtp/mailViewer.js';
import { type SmtpSink, startSmtpSink } from '../../local/smtp/smtpSink.js';

const running: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  while (running.length > 0) await running.pop()?.stop();
});

async function sink(options: { dataDir?: string; maxBytes?: number } = {}): Promise<SmtpSink> {
  const started = await startSmtpSink({ port: 0, ...options });
  running.push(started);
  return started;
}

async function viewer(over: SmtpSink): Promise<MailViewer> {
  const started = await startMailViewer({ port: 0, sink: over });
  running.push(started);
  return started;
}

function transport(to: SmtpSink, auth?: { user: string; pass: string }) {
  return createTransport({ host: to.host, port: to.port, secure: false, auth });
}

const message = {
  from: 'Ops <ops@example.com>',
  to: ['ada@example.com', 'bob@example.org'],
  subject: 'Campaign approved ✓',
  text: 'hello',
  messageId: '<01JDEXAMPLE@postdate.local>',
  headers: { 'X-Postdate-Id': '01JDEXAMPLE' },
};

describe('the local SMTP sink', () => {
  it('accepts mail from nodemailer without authentication and keeps envelope and headers', async () => {
    const smtp = await sink();
    const info = await transport(smtp).sendMail(message);
    expect(info.response).toMatch(/^250 /);
    const [mail] = smtp.messages();
    expect(smtp.messages()).toHaveLength(1);
    expect(mail).toMatchObject({
      envelope: { from: 'ops@example.com', to: ['ada@example.com', 'bob@example.org'] },
      authUser: null,
      subject: 'Campaign approved ✓',
      messageId: '<01JDEXAMPLE@postdate.local>',
      postdateId: '01JDEXAMPLE',
    });
    expect(mail?.size).toBe(mail?.raw.length);
    expect(mail?.raw.toString()).toContain('hello');
  });

  it('accepts any credentials over a plain connection and records the user name', async () => {
    const smtp = await sink();
    await transport(smtp, { user: 'someone', pass: 'anything' }).sendMail(message);
    expect(smtp.messages()[0]?.authUser).toBe('someone');
  });

  it('greets a new connection at once, as a submission relay does: no timer holds the greeting', async () => {
    const smtp = await sink();
    // smtp-server holds every new session's greeting 100 ms on a timer (its early-talker check, an
    // inbound MX's defence): with timers frozen, a greeting held on one never comes (decision 0150).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const socket = connect(smtp.port, smtp.host);
      const greeting = await new Promise<string>((resolve, reject) => {
        socket.once('data', (chunk: Buffer) => resolve(chunk.toString()));
        socket.once('error', reject);
      });
      socket.destroy();
      expect(greeting).toMatch(/^220 /);
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses a message over its size limit with 552', async () => {
    const smtp = await sink({ maxBytes: 2000 });
    await expect(transport(smtp).sendMail({ ...message, text: 'x'.repeat(10_000) })).rejects.toMatchObject({
      responseCode: 552,
    });
    expect(smtp.messages()).toHaveLength(0);
  });

  it('keeps mail as .eml files in its data dir and reads them back after a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'postdate-mail-'));
    try {
      const first = await startSmtpSink({ port: 0, dataDir });
      await transport(first).sendMail(message);
      await first.stop();
      expect(readdirSync(dataDir).filter((file) => file.endsWith('.eml'))).toHaveLength(1);

      const second = await sink({ dataDir });
      expect(second.messages().map((mail) => mail.postdateId)).toEqual(['01JDEXAMPLE']);
      second.clear();
      expect(readdirSync(dataDir)).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the mail viewer', () => {
  it('lists received mail as JSON, newest first, and shows one message with its raw source', async () => {
    const smtp = await sink();
    const page = await viewer(smtp);
    await transport(smtp).sendMail({ ...message, subject: 'first' });
    await transport(smtp).sendMail({ ...message, subject: 'second' });

    const list = (await (await fetch(`${page.url}api/messages`)).json()) as {
      items: { id: string; subject: string; raw?: string }[];
    };
    expect(list.items.map((item) => item.subject)).toEqual(['second', 'first']);
    expect(list.items[0]).not.toHaveProperty('raw');

    const id = list.items[0]?.id ?? '';
    const one = (await (await fetch(`${page.url}api/messages/${id}`)).json()) as { raw: string };
    expect(one.raw).toContain('Subject: second');
    const eml = await fetch(`${page.url}messages/${id}.eml`);
    expect(eml.headers.get('content-type')).toBe('message/rfc822');
    expect(await eml.text()).toBe(one.raw);
  });

  it('escapes what it shows, so a message cannot inject markup into the page', async () => {
    const smtp = await sink();
    const page = await viewer(smtp);
    await transport(smtp).sendMail({ ...message, subject: '<script>alert(1)</script>' });
    const html = await (await fetch(page.url)).text();
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain('01JDEXAMPLE');
  });

  it('empties the sink on DELETE /api/messages and answers 404 for an unknown id', async () => {
    const smtp = await sink();
    const page = await viewer(smtp);
    await transport(smtp).sendMail(message);
    expect((await fetch(`${page.url}api/messages`, { method: 'DELETE' })).status).toBe(204);
    expect(smtp.messages()).toEqual([]);
    expect((await fetch(`${page.url}api/messages/01JDNOPE`)).status).toBe(404);
  });
});
