import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NodemailerMailer } from '../../lambdas/adapters/NodemailerMailer.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import type { OutgoingEmail } from '../../lambdas/ports/Mailer.js';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer.js';

const FAST_TIMEOUTS = { connectionMs: 1000, greetingMs: 400, socketMs: 400, dnsMs: 1000, attemptMs: 5000 };

function email(overrides: Partial<OutgoingEmail> = {}): OutgoingEmail {
  return {
    id: '01JTESTMAILER0000000000000',
    from: 'Ops <ops@example.com>',
    to: ['ada@example.org'],
    cc: [],
    bcc: [],
    replyTo: null,
    subject: 'Campaign approved',
    text: 'hello',
    html: null,
    headers: {},
    ...overrides,
  };
}

describe('NodemailerMailer against a real SMTP server', () => {
  let server: TestSmtpServer;
  let mailer: NodemailerMailer;

  beforeAll(async () => {
    server = await startSmtpServer();
  });
  afterAll(async () => {
    await server.close();
  });
  const newMailer = () =>
    new NodemailerMailer({
      host: server.host,
      port: server.port,
      secure: false,
      requireTls: false,
      messageIdDomain: 'mail.test',
      credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
      timeouts: FAST_TIMEOUTS,
    });
  afterEach(async () => {
    await mailer.close();
  });

  it('delivers with Message-ID <id@domain> and X-Postdate-Id, passing the caller headers but never over ours', async () => {
    mailer = newMailer();
    server.script();
    const before = server.received.length;
    const outcome = await mailer.send(
      email({
        headers: { 'X-Campaign': '42', 'Message-ID': '<forged@evil.test>', 'x-postdate-id': 'forged' },
      }),
    );
    expect(outcome).toMatchObject({ delivered: true, accepted: ['ada@example.org'], rejected: [] });
    const received = server.received.slice(before);
    expect(received).toHaveLength(1);
    expect(received[0]?.messageId).toBe('<01JTESTMAILER0000000000000@mail.test>');
    expect(received[0]?.postdateId).toBe('01JTESTMAILER0000000000000');
    expect(received[0]?.raw).toMatch(/^X-Campaign: 42$/m);
    expect(received[0]?.raw).not.toContain('forged');
  });

  it('reports a partial recipient rejection on a delivered message', async () => {
    mailer = newMailer();
    server.script({
      rcptTo: (address) =>
        address === 'gone@example.net' ? { code: 550, message: '5.1.1 User unknown' } : undefined,
    });
    const outcome = await mailer.send(email({ to: ['ada@example.org', 'gone@example.net'] }));
    expect(outcome).toMatchObject({
      delivered: true,
      accepted: ['ada@example.org'],
      rejected: [{ address: 'gone@example.net', code: '550', enhancedCode: '5.1.1' }],
    });
  });

  it.each([
    ['451 at RCPT TO', { rcptTo: { code: 451, message: '4.3.0 Try again later' } }, 'transient', '451'],
    ['550 5.1.1 at RCPT TO', { rcptTo: { code: 550, message: '5.1.1 User unknown' } }, 'permanent', '550'],
    [
      '554 5.7.1 after DATA',
      { afterData: { code: 554, message: '5.7.1 Rejected by policy' } },
      'permanent',
      '554',
    ],
    ['421 at MAIL FROM', { mailFrom: { code: 421, message: '4.7.0 Closing' } }, 'transient', '421'],
  ] as const)('classifies %s', async (_name, behaviour, expectedClass, expectedCode) => {
    mailer = newMailer();
    server.script(behaviour);
    const outcome = await mailer.send(email());
    expect(outcome.delivered).toBe(false);
    if (outcome.delivered) return;
    expect(outcome.failure.class).toBe(expectedClass);
    expect(outcome.failure.code).toBe(expectedCode);
  });

  it('calls a connection dropped after the final dot ambiguous, and the relay did get the body', async () => {
    mailer = newMailer();
    server.script({ afterData: 'drop' });
    const before = server.received.length;
    const outcome = await mailer.send(email());
    expect(outcome.delivered).toBe(false);
    if (outcome.delivered) return;
    expect(outcome.failure.class).toBe('ambiguous');
    expect(server.received.slice(before).map((message) => message.outcome)).toEqual(['dropped']);
  });

  it('calls a reply that never comes after the final dot ambiguous (socket timeout)', async () => {
    mailer = newMailer();
    server.script({ afterData: 'stall' });
    const outcome = await mailer.send(email());
    expect(outcome.delivered ? 'delivered' : outcome.failure.class).toBe('ambiguous');
  });

  it('calls a stall before DATA transient, not ambiguous', async () => {
    mailer = newMailer();
    server.script({ rcptTo: 'stall' });
    const outcome = await mailer.send(email());
    expect(outcome.delivered ? 'delivered' : outcome.failure).toMatchObject({
      class: 'transient',
      code: 'ETIMEDOUT',
    });
  });

  it('aborts an attempt at its deadline even when no inactivity timeout fires: ambiguous after the body, transient before', async () => {
    const slowSocket = { ...FAST_TIMEOUTS, socketMs: 10_000, attemptMs: 300 };
    mailer = new NodemailerMailer({
      host: server.host,
      port: server.port,
      secure: false,
      requireTls: false,
      messageIdDomain: 'mail.test',
      credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
      timeouts: slowSocket,
    });
    server.script({ afterData: 'stall' });
    const afterBody = await mailer.send(email());
    expect(afterBody.delivered ? 'delivered' : afterBody.failure).toMatchObject({
      class: 'ambiguous',
      code: 'EABORT',
    });
    server.script({ rcptTo: 'stall' });
    const beforeBody = await mailer.send(email());
    expect(beforeBody.delivered ? 'delivered' : beforeBody.failure).toMatchObject({
      class: 'transient',
      code: 'EABORT',
    });
  });

  it('calls a greeting that never comes transient', async () => {
    mailer = newMailer();
    server.script({ stallGreeting: true });
    const outcome = await mailer.send(email());
    expect(outcome.delivered ? 'delivered' : outcome.failure.class).toBe('transient');
  });
});

describe('NodemailerMailer with a relay that requires a login', () => {
  it('files a refused login (535) under config and reads the credentials again afterwards', async () => {
    const server = await startSmtpServer({ credentials: { username: 'postdate', password: 'right' } });
    let reads = 0;
    let password = 'wrong';
    const mailer = new NodemailerMailer({
      host: server.host,
      port: server.port,
      secure: false,
      requireTls: false,
      messageIdDomain: 'mail.test',
      credentials: {
        get: async () => {
          reads += 1;
          return { username: 'postdate', password };
        },
        invalidate: () => {},
      },
      timeouts: FAST_TIMEOUTS,
    });
    try {
      const refused = await mailer.send(email());
      expect(refused.delivered ? 'delivered' : refused.failure).toMatchObject({
        class: 'config',
        code: '535',
      });
      password = 'right';
      const accepted = await mailer.send(email());
      expect(accepted.delivered).toBe(true);
      expect(reads).toBe(2);
      expect(server.authAttempts.map((attempt) => attempt.ok)).toEqual([false, true]);
    } finally {
      await mailer.close();
      await server.close();
    }
  });
});
