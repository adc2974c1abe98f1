import type { AddressInfo } from 'node:net';
import { type SecretsManagerClient, SecretsManagerServiceException } from '@aws-sdk/client-secrets-manager';
import { SMTPServer } from 'smtp-server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NodemailerMailer, type NodemailerMailerOptions } from '../../lambdas/adapters/NodemailerMailer.js';
import {
  environmentSmtpCredentials,
  secretsManagerSmtpCredentials,
} from '../../lambdas/adapters/smtpCredentials.js';
import type { OutgoingEmail } from '../../lambdas/ports/Mailer.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { startRelayOutage } from '../../local/smtp/relayOutage.js';

// The relay runs in this process: after a stall of the event loop Node runs expired timers before it
// reads the sockets, so a short greeting limit could beat a greeting already waiting. The greeting
// gets 5 s (the 1 s phase before the dot bounds it anyway); only a relay that never greets gets 400 ms.
const FAST_TIMEOUTS = { connectionMs: 1000, greetingMs: 5000, dnsMs: 1000, preDotMs: 1000, replyMs: 1000 };

/** A mailer against a test relay: no login, no TLS, the fast timeouts; `overrides` replace any of it. */
function mailerFor(
  relay: { readonly host: string; readonly port: number },
  overrides: Partial<NodemailerMailerOptions> = {},
): NodemailerMailer {
  return new NodemailerMailer({
    host: relay.host,
    port: relay.port,
    secure: false,
    requireTls: false,
    messageIdDomain: 'mail.test',
    credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
    timeouts: FAST_TIMEOUTS,
    ...overrides,
  });
}

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
    envelope: overrides.envelope ?? [...(overrides.to ?? ['ada@example.org'])],
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
  const newMailer = () => mailerFor(server);
  afterEach(async () => {
    await mailer.close();
  });

  it('delivers with Message-ID <id@domain> and X-Postdate-Id, passing the caller headers but never over ours', async () => {
    mailer = newMailer();
    server.script();
    const before = server.received.length;
    const outcome = await mailer.send(
      email({
        headers: {
          'X-Campaign': '42',
          'Message-ID': '<forged@evil.test>',
          'x-postdate-id': 'forged',
          // Stored before the enqueue refused relay controls, or written by the outbox helper.
          'X-SES-CONFIGURATION-SET': 'another-tenants-set',
        },
      }),
    );
    expect(outcome).toMatchObject({ delivered: true, refused: [] });
    const received = server.received.slice(before);
    expect(received).toHaveLength(1);
    expect(received[0]?.messageId).toBe('<01JTESTMAILER0000000000000@mail.test>');
    expect(received[0]?.postdateId).toBe('01JTESTMAILER0000000000000');
    expect(received[0]?.raw).toMatch(/^X-Campaign: 42$/m);
    expect(received[0]?.raw).not.toContain('forged');
    expect(received[0]?.raw).not.toMatch(/another-tenants-set/);
  });

  it('reports a partial recipient rejection on a delivered message', async () => {
    mailer = newMailer();
    server.script({
      rcptTo: (address) =>
        address === 'gone@example.net' ? { code: 550, message: '5.1.1 User unknown' } : undefined,
    });
    const outcome = await mailer.send(email({ to: ['ada@example.org', 'Gone <gone@example.net>'] }));
    expect(outcome).toMatchObject({
      delivered: true,
      refused: [{ index: 1, code: '550', enhancedCode: '5.1.1', permanent: true }],
    });
  });

  // DESIGN §5: recipients one by one; §12: a 5.1.1 at RCPT TO is suppressed. The replies each recipient
  // got at RCPT TO are the outcome's whatever ends the transaction after them (decision 0314).
  it.each([
    ['a 554 to the final dot', { code: 554, message: '5.6.0 Content rejected' } as const, 'permanent'],
    ['a 451 to the final dot', { code: 451, message: '4.3.0 Try again later' } as const, 'transient'],
    ['a connection dropped after the final dot', 'drop' as const, 'ambiguous'],
    ['no reply to the final dot', 'stall' as const, 'ambiguous'],
  ])('keeps the refusals at RCPT TO when %s ends the transaction', async (_name, afterData, failureClass) => {
    mailer = newMailer();
    server.script({
      rcptTo: (address) =>
        address === 'later@example.net'
          ? { code: 450, message: '4.2.1 Mailbox busy' }
          : address === 'gone@example.net'
            ? { code: 550, message: '5.1.1 User unknown' }
            : undefined,
      afterData,
    });
    const outcome = await mailer.send(
      email({ to: ['later@example.net', 'ada@example.org', 'gone@example.net'] }),
    );
    expect(outcome.delivered ? 'delivered' : outcome.failure.class).toBe(failureClass);
    expect(outcome.refused).toMatchObject([
      { index: 0, code: '450', enhancedCode: '4.2.1', permanent: false },
      { index: 2, code: '550', enhancedCode: '5.1.1', permanent: true, hardBounce: true },
    ]);
  });

  // A refused MAIL FROM opens no transaction: with PIPELINING the RCPT TO sent along gets a 503
  // ("need MAIL command"), which says nothing of its recipient (decision 0315).
  it.each([
    [
      '552 5.3.4 (the message, for good)',
      { code: 552, message: '5.3.4 Message size exceeds fixed limit' },
      'permanent',
    ],
    ['451 4.3.0', { code: 451, message: '4.3.0 Try again later' }, 'transient'],
  ] as const)(
    'reports no recipient refused at RCPT TO when the relay answers MAIL FROM %s',
    async (_name, mailFrom, failureClass) => {
      mailer = newMailer();
      server.script({ mailFrom });
      const outcome = await mailer.send(email({ to: ['ada@example.org', 'bob@example.net'] }));
      expect({
        outcome: outcome.delivered ? 'delivered' : outcome.failure.class,
        refused: outcome.refused,
      }).toEqual({ outcome: failureClass, refused: [] });
    },
  );

  it.each([
    {
      rule: 'named more than once when its one RCPT TO is refused (decision 0234)',
      refuses: (address: string) => address === 'gone@example.net',
      recipients: ['gone@example.net', 'ada@example.org', 'Gone <gone@EXAMPLE.net>'],
    },
    {
      rule: 'whose spellings differ only in the local part’s case (decision 0237)',
      refuses: (address: string) => address.toLowerCase() === 'gone@example.net',
      recipients: ['Gone@example.net', 'ada@example.org', 'gone@EXAMPLE.net'],
    },
  ])('refuses every place of a mailbox $rule', async ({ refuses, recipients }) => {
    mailer = newMailer();
    server.script({
      rcptTo: (address) => (refuses(address) ? { code: 550, message: '5.1.1 User unknown' } : undefined),
    });
    const outcome = await mailer.send(
      email({ to: recipients.slice(0, 2), bcc: recipients.slice(2), envelope: recipients }),
    );
    expect(outcome).toMatchObject({
      delivered: true,
      refused: [
        { index: 0, code: '550', permanent: true, hardBounce: true },
        { index: 2, code: '550', permanent: true, hardBounce: true },
      ],
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

  // DESIGN §5: a reply to the message's own commands, 421 included, is its outcome (one attempt),
  // whatever command nodemailer files it under: with PIPELINING (smtp-server advertises it, as
  // Postfix does) a 421 at RCPT TO ends the session and nodemailer reports it under CONN.
  it.each([
    ['at MAIL FROM', { mailFrom: { code: 421, message: '4.7.0 Closing' } }, ['ada@example.org']],
    ['at RCPT TO', { rcptTo: { code: 421, message: '4.7.0 Too many errors, closing' } }, ['ada@example.org']],
    [
      'at the second RCPT TO of two',
      {
        rcptTo: (address: string) =>
          address === 'bob@example.net' ? { code: 421, message: '4.7.0 Closing' } : undefined,
      },
      ['ada@example.org', 'bob@example.net'],
    ],
    ['after the final dot', { afterData: { code: 421, message: '4.4.2 Closing' } }, ['ada@example.org']],
  ] as const)(
    'files a 421 %s as the message’s outcome (transaction), never the relay’s outage',
    async (_name, behaviour, to) => {
      mailer = newMailer();
      server.script(behaviour);
      const outcome = await mailer.send(email({ to: [...to] }));
      expect(outcome.delivered ? 'delivered' : outcome.failure).toMatchObject({
        origin: 'transaction',
        class: 'transient',
        code: '421',
      });
      expect(outcome.delivered ? 'delivered' : outcome.failure.origin).toBe('transaction');
    },
  );

  it.each([
    [
      'at MAIL FROM',
      {
        mailFrom: { code: 554, message: 'Access denied: User is not authorized to perform ses:SendRawEmail' },
      },
    ],
    [
      'after the final dot',
      {
        afterData: {
          code: 554,
          message:
            'Message rejected: Email address is not verified. The following identities failed the check in region US-EAST-1: ops@example.com',
        },
      },
    ],
  ] as const)(
    'files an SES sender refusal (bare 554) %s under config, without closing the pool for everyone',
    async (_name, behaviour) => {
      let invalidations = 0;
      mailer = mailerFor(server, {
        credentials: {
          get: async () => undefined,
          invalidate: () => {
            invalidations += 1;
          },
        },
      });
      server.script(behaviour);
      const outcome = await mailer.send(email());
      expect(outcome.delivered ? 'delivered' : outcome.failure).toMatchObject({
        class: 'config',
        code: '554',
      });
      expect(outcome.delivered ? 'delivered' : outcome.failure.origin).toBe('transaction');
      // A refusal of one sender is not a broken session: the pool and the login stay.
      expect(invalidations).toBe(0);
    },
  );

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
    expect(outcome.delivered ? 'delivered' : outcome.failure.origin).toBe('transaction');
  });

  it('ends the phase before the dot at its own limit, even against a relay that trickles nothing: transient', async () => {
    mailer = newMailer();
    server.script({ rcptTo: 'stall' });
    const started = Date.now();
    const outcome = await mailer.send(email(), { endsBy: Date.now() + 60_000 });
    expect(outcome.delivered ? 'delivered' : outcome.failure).toMatchObject({
      class: 'transient',
      code: 'ETIMEDOUT',
    });
    // Bounded by the phase's limit (preDotMs = 1 s), not by the invocation's minute.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('waits for the reply to the final dot the reply timeout when the caller sets no end, then calls it ambiguous', async () => {
    mailer = newMailer();
    server.script({ afterData: 'stall' });
    const outcome = await mailer.send(email());
    expect(outcome.delivered ? 'delivered' : outcome.failure).toMatchObject({
      class: 'ambiguous',
      code: 'ETIMEDOUT',
    });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(FAST_TIMEOUTS.replyMs - 50);
  });
});

describe('NodemailerMailer against a slow relay (RFC 5321 §4.5.3.2.6: wait for the reply to the dot)', () => {
  /** A relay that answers the final dot only after `replyDelayMs` (content scanning, tarpitting). */
  async function slowRelay(replyDelayMs: number) {
    const received: string[] = [];
    const server = new SMTPServer({
      disabledCommands: ['STARTTLS', 'AUTH'],
      authOptional: true,
      logger: false,
      onData(stream, _session, callback) {
        stream.on('data', () => {});
        stream.on('end', () => {
          received.push('body');
          setTimeout(() => callback(), replyDelayMs);
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.server.address() as AddressInfo).port;
    // The reply timeout is 1 s; the relay takes 2.5 s.
    const mailer = mailerFor({ host: '127.0.0.1', port });
    return {
      received,
      mailer,
      async close() {
        await mailer.close();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }

  it('is delivered once when the invocation has the time, although the reply timeout is shorter', async () => {
    const relay = await slowRelay(2500);
    try {
      const outcome = await relay.mailer.send(email(), { endsBy: Date.now() + 6000 });
      expect(outcome.delivered ? 'delivered' : outcome.failure).toBe('delivered');
      expect(relay.received).toHaveLength(1);
    } finally {
      await relay.close();
    }
  });
});

describe('NodemailerMailer, more of the same server', () => {
  let server: TestSmtpServer;
  let mailer: NodemailerMailer;
  beforeAll(async () => {
    server = await startSmtpServer();
  });
  afterAll(async () => {
    await mailer.close();
    await server.close();
  });

  it('calls a greeting that never comes transient, and no attempt: the relay never saw the message', async () => {
    mailer = mailerFor(server, { timeouts: { ...FAST_TIMEOUTS, greetingMs: 400 } });
    server.script({ stallGreeting: true });
    const outcome = await mailer.send(email());
    expect(outcome.delivered ? 'delivered' : outcome.failure.class).toBe('transient');
    expect(outcome.delivered ? 'delivered' : outcome.failure.origin).toBe('outage');
  });
});

describe('NodemailerMailer against a relay that answers 421 at the greeting', () => {
  it('files it as the relay’s outage: before MAIL FROM, the relay never saw the message', async () => {
    const server = await startSmtpServer();
    const relay = await startRelayOutage({ targetHost: server.host, targetPort: server.port });
    const mailer = mailerFor(relay);
    try {
      await relay.set('down');
      const outcome = await mailer.send(email());
      expect(outcome.delivered ? 'delivered' : outcome.failure).toMatchObject({
        origin: 'outage',
        class: 'transient',
        code: '421',
      });
      expect(outcome.delivered ? 'delivered' : outcome.failure.origin).toBe('outage');
      expect(server.transactions).toBe(0);
    } finally {
      await mailer.close();
      await relay.close();
      await server.close();
    }
  });
});

describe('NodemailerMailer with a relay that requires a login', () => {
  it('files a refused login (535) under config and reads the credentials again afterwards', async () => {
    const server = await startSmtpServer({ credentials: { username: 'postdate', password: 'right' } });
    let reads = 0;
    let password = 'wrong';
    const mailer = mailerFor(server, {
      credentials: {
        get: async () => {
          reads += 1;
          return { username: 'postdate', password };
        },
        invalidate: () => {},
      },
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

describe('NodemailerMailer reading the relay login from Secrets Manager (issue 15 §4)', () => {
  let server: TestSmtpServer;
  beforeAll(async () => {
    server = await startSmtpServer({ credentials: { username: 'postdate', password: 'right' } });
  });
  afterAll(async () => {
    await server.close();
  });

  /** A Secrets Manager client (the one stand-in: no local Secrets Manager) answering in turn. */
  function secretsManager(answers: (() => Promise<{ SecretString?: string }>)[]) {
    let calls = 0;
    const client = {
      send: () => {
        const answer = answers[Math.min(calls, answers.length - 1)];
        calls += 1;
        return answer === undefined ? Promise.reject(new Error('no answer')) : answer();
      },
    } as unknown as SecretsManagerClient;
    return { client, calls: () => calls };
  }

  function mailerWith(client: SecretsManagerClient, invalidations: { count: number }) {
    const source = secretsManagerSmtpCredentials({
      client,
      secretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:smtp',
    });
    return mailerFor(server, {
      credentials: {
        get: () => source.get(),
        invalidate: () => {
          invalidations.count += 1;
          source.invalidate();
        },
      },
    });
  }

  const goodSecret = async () => ({ SecretString: '{"username":"postdate","password":"right"}' });

  it('files a throttled read as transient (ESECRETREAD), before the relay, and reads again on the next send', async () => {
    const throttled = new SecretsManagerServiceException({
      name: 'ThrottlingException',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
      message: 'Rate exceeded',
    });
    const sm = secretsManager([() => Promise.reject(throttled), goodSecret]);
    const invalidations = { count: 0 };
    const mailer = mailerWith(sm.client, invalidations);
    try {
      const failed = await mailer.send(email());
      expect(failed.delivered ? 'delivered' : failed.failure).toMatchObject({
        class: 'transient',
        code: 'ESECRETREAD',
      });
      expect(failed.delivered ? 'delivered' : failed.failure.origin).toBe('outage');
      // Not a config failure: the pool and the cache are left alone.
      expect(invalidations.count).toBe(0);
      const sent = await mailer.send(email());
      expect(sent.delivered).toBe(true);
      expect(sm.calls()).toBe(2);
    } finally {
      await mailer.close();
    }
  });

  it('files a malformed secret as config, before the relay, and drops the cached login', async () => {
    const sm = secretsManager([async () => ({ SecretString: '{"username":"postdate"}' })]);
    const invalidations = { count: 0 };
    const mailer = mailerWith(sm.client, invalidations);
    try {
      const failed = await mailer.send(email());
      expect(failed.delivered ? 'delivered' : failed.failure).toMatchObject({
        class: 'config',
        code: 'ECONFIG',
      });
      expect(failed.delivered ? 'delivered' : failed.failure.origin).toBe('outage');
      expect(invalidations.count).toBe(1);
    } finally {
      await mailer.close();
    }
  });

  it('ends an attempt whose secret read hangs at the limit before the dot: transient, not after minutes', async () => {
    const sm = secretsManager([() => new Promise(() => {}), goodSecret]);
    const mailer = mailerWith(sm.client, { count: 0 });
    try {
      const started = Date.now();
      const outcome = await mailer.send(email(), { endsBy: Date.now() + 60_000 });
      expect(outcome.delivered ? 'delivered' : outcome.failure).toMatchObject({
        class: 'transient',
        code: 'ETIMEDOUT',
      });
      expect(outcome.delivered ? 'delivered' : outcome.failure.origin).toBe('outage');
      // The secret read counts inside the phase before the dot (preDotMs = 1 s).
      expect(Date.now() - started).toBeLessThan(FAST_TIMEOUTS.preDotMs + 1500);
      // The hanging read is not kept: the next attempt reads again and goes out.
      const sent = await mailer.send(email());
      expect(sent.delivered).toBe(true);
      expect(sm.calls()).toBe(2);
    } finally {
      await mailer.close();
    }
  });
});

/**
 * A relay that logs every command as it came over the wire (smtp-server shows a received domain in
 * Unicode and keeps one RCPT TO per address, so its envelope cannot show what was sent), without
 * STARTTLS or SMTPUTF8, as a relay that offers neither.
 */
async function startCommandLog(): Promise<{
  port: number;
  envelope: () => string[];
  close: () => Promise<void>;
}> {
  const commands: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    hideSMTPUTF8: true,
    logger: {
      level: () => 'debug',
      trace: () => {},
      debug: (_meta: unknown, kind: unknown, line: unknown) => {
        if (kind === 'C:' && typeof line === 'string') commands.push(line);
      },
      info: () => {},
      warn: () => {},
      error: () => {},
      fatal: () => {},
      child: () => undefined,
    } as never,
    onData: (stream, _session, callback) => {
      stream.resume();
      stream.once('end', () => callback());
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    envelope: () => commands.filter((line) => /^(MAIL|RCPT) /i.test(line)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('NodemailerMailer: the envelope as the relay reads it (decision 0234)', () => {
  let relay: Awaited<ReturnType<typeof startCommandLog>>;
  let mailer: NodemailerMailer;
  beforeAll(async () => {
    relay = await startCommandLog();
  });
  afterAll(async () => {
    await relay.close();
  });
  afterEach(async () => {
    await mailer.close();
  });

  it('gives an internationalised domain as A-labels in MAIL FROM and RCPT TO, as the headers do (RFC 5321 §2.3.5, no SMTPUTF8)', async () => {
    mailer = mailerFor({ host: '127.0.0.1', port: relay.port });
    const before = relay.envelope().length;
    const outcome = await mailer.send(
      email({ from: 'Ops <ops@exämple.com>', to: ['Ada <ada@bücher.example>'] }),
    );
    expect({ delivered: outcome.delivered, envelope: relay.envelope().slice(before) }).toEqual({
      delivered: true,
      envelope: ['MAIL FROM:<ops@xn--exmple-cua.com>', 'RCPT TO:<ada@xn--bcher-kva.example>'],
    });
  });

  it('gives a mailbox named more than once (to, cc, bcc; the domain in any case) one RCPT TO', async () => {
    mailer = mailerFor({ host: '127.0.0.1', port: relay.port });
    const before = relay.envelope().length;
    const recipients = ['Ada <ada@example.org>', 'ada@EXAMPLE.org', 'ada@example.org', 'bob@example.org'];
    const outcome = await mailer.send(
      email({
        to: recipients.slice(0, 1),
        cc: recipients.slice(1, 2),
        bcc: recipients.slice(2),
        envelope: recipients,
      }),
    );
    expect({ delivered: outcome.delivered, envelope: relay.envelope().slice(before) }).toEqual({
      delivered: true,
      envelope: ['MAIL FROM:<ops@example.com>', 'RCPT TO:<ada@example.org>', 'RCPT TO:<bob@example.org>'],
    });
  });

  it('gives one mailbox in every spelling DESIGN §12 calls one (local part in any case, quoted, the domain in Unicode, NFD or A-labels) one RCPT TO (decision 0237)', async () => {
    mailer = mailerFor({ host: '127.0.0.1', port: relay.port });
    const before = relay.envelope().length;
    const recipients = [
      'ada@bücher.example',
      'ADA@xn--bcher-kva.example',
      '"ada"@BU\u0308CHER.example',
      'Ada <Ada@BÜCHER.example>',
      'ada@example.org',
    ];
    const outcome = await mailer.send(
      email({
        to: recipients.slice(0, 2),
        cc: recipients.slice(2, 3),
        bcc: recipients.slice(3),
        envelope: recipients,
      }),
    );
    expect({ delivered: outcome.delivered, envelope: relay.envelope().slice(before) }).toEqual({
      delivered: true,
      envelope: [
        'MAIL FROM:<ops@example.com>',
        'RCPT TO:<ada@xn--bcher-kva.example>',
        'RCPT TO:<ada@example.org>',
      ],
    });
  });
});
