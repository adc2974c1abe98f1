import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  classifySmtpError,
  extractEnhancedCode,
  SES_CONFIG_PHRASES,
} from '../../lambdas/core/classifySmtpError.js';
import { decideOutcome } from '../../lambdas/core/sendDecision.js';

/** Builds an error the way nodemailer's SMTPConnection._formatError does. */
function nodemailerError(fields: {
  code?: string;
  responseCode?: number;
  command?: string;
  response?: string;
}) {
  return Object.assign(new Error('SMTP failure'), fields);
}

const classOf = (error: unknown, bodySent = false) => classifySmtpError(error, { bodySent }).class;

describe('classifySmtpError (DESIGN §5)', () => {
  describe('transient: worth retrying soon', () => {
    it('classifies network errors before DATA as transient', () => {
      for (const code of ['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'EPROTOCOL', 'ECONNREFUSED']) {
        expect(classOf(nodemailerError({ code, command: 'CONN' })), code).toBe('transient');
      }
    });
    it('classifies every 4xx reply as transient, whatever nodemailer code carries it', () => {
      for (const [responseCode, code] of [
        [450, 'EENVELOPE'],
        [451, 'EMESSAGE'],
        [452, 'EENVELOPE'],
        [454, 'EENVELOPE'],
      ] as const) {
        expect(classOf(nodemailerError({ code, responseCode, response: `${responseCode} try later` }))).toBe(
          'transient',
        );
      }
    });
    it('classifies 421 as transient and reports the reply code', () => {
      const result = classifySmtpError(
        nodemailerError({
          code: 'ECONNECTION',
          responseCode: 421,
          command: 'CONN',
          response: '421 4.3.2 Bye',
        }),
      );
      expect(result).toEqual({
        class: 'transient',
        // The greeting's reply (CONN): the relay's, before MAIL FROM.
        origin: 'outage',
        code: '421',
        enhancedCode: '4.3.2',
        reason: 'the relay is closing the connection (421); retried later',
        hardBounce: false,
      });
    });
    it('classifies a full mailbox with a 4xx reply (4.2.2) as transient', () => {
      const result = classifySmtpError(
        nodemailerError({ responseCode: 452, response: '452 4.2.2 Mailbox full' }),
      );
      expect(result.class).toBe('transient');
      expect(result.reason).toBe('the mailbox is full for now (4.2.2); retried later');
    });
    it('treats 503 bad sequence as a session problem, not a verdict on the message', () => {
      expect(classOf(nodemailerError({ code: 'EENVELOPE', responseCode: 503, command: 'RCPT TO' }))).toBe(
        'transient',
      );
    });
    it('treats a 2xx or 3xx reply reported as an error as transient', () => {
      expect(classOf(nodemailerError({ code: 'EPROTOCOL', response: '220 hello again' }))).toBe('transient');
    });
    it('treats setup timeouts as transient even if the caller believes the body was sent', () => {
      const error = Object.assign(nodemailerError({ code: 'ETIMEDOUT', command: 'CONN' }), {
        timeoutType: 'GREETING_TIMEOUT',
      });
      expect(classOf(error, false)).toBe('transient');
      expect(classifySmtpError(error).reason).toBe(
        'the connection could not be set up in time; retried later',
      );
    });
  });

  describe('permanent: retrying would get the same answer', () => {
    it('classifies 5.1.1 user unknown, 5.2.2 mailbox full and 5.3.4 too big as permanent', () => {
      const cases = [
        ['550 5.1.1 User unknown', 'RCPT TO', '5.1.1'],
        ['552 5.2.2 Mailbox full', 'RCPT TO', '5.2.2'],
        ['552 5.3.4 Message too big', 'DATA', '5.3.4'],
      ] as const;
      for (const [response, command, enhanced] of cases) {
        const result = classifySmtpError(nodemailerError({ code: 'EENVELOPE', command, response }));
        expect(result.class).toBe('permanent');
        expect(result.enhancedCode).toBe(enhanced);
        expect(result.code).toBe(response.slice(0, 3));
      }
    });
    it('classifies 5.7.1 at RCPT TO and at DATA as permanent', () => {
      const rcpt = nodemailerError({
        responseCode: 550,
        command: 'RCPT TO',
        response: '550 5.7.1 Relaying denied',
      });
      const data = nodemailerError({ responseCode: 554, command: 'DATA', response: '554 5.7.1 Spam' });
      expect(classOf(rcpt)).toBe('permanent');
      expect(classOf(data, true)).toBe('permanent');
    });
    it('classifies any other 5xx as permanent, naming the step', () => {
      const result = classifySmtpError(
        nodemailerError({ responseCode: 554, command: 'DATA', response: '554 No' }),
      );
      expect(result).toMatchObject({ class: 'permanent', code: '554', enhancedCode: null });
      expect(result.reason).toBe('permanent refusal (554) at DATA');
    });
    it('classifies EENVELOPE and EMESSAGE without a reply as permanent', () => {
      expect(classOf(nodemailerError({ code: 'EENVELOPE', command: 'API' }))).toBe('permanent');
      expect(classOf(nodemailerError({ code: 'EMESSAGE', command: 'API' }))).toBe('permanent');
      expect(classOf(nodemailerError({ code: 'EMAXRECIPIENTS' }))).toBe('permanent');
    });
  });

  describe('config: our own setup is wrong', () => {
    it('classifies EAUTH, ETLS and ECONFIG as config, whatever the reply', () => {
      for (const code of ['EAUTH', 'ETLS', 'ECONFIG', 'ENOAUTH', 'EREQUIRETLS']) {
        expect(
          classOf(nodemailerError({ code, responseCode: 454, response: '454 4.7.0 Try later' })),
          code,
        ).toBe('config');
      }
    });
    it('classifies 530 5.7.0 authentication required and 535 5.7.8 bad credentials as config', () => {
      expect(
        classOf(nodemailerError({ responseCode: 530, command: 'MAIL FROM', response: '530 5.7.0 Auth' })),
      ).toBe('config');
      expect(
        classOf(nodemailerError({ responseCode: 535, command: 'AUTH PLAIN', response: '535 5.7.8 No' })),
      ).toBe('config');
    });
    it('classifies any 5xx answer to AUTH as config', () => {
      expect(classOf(nodemailerError({ responseCode: 504, command: 'AUTH CRAM-MD5' }))).toBe('config');
    });
    it('classifies 5.7.1 at MAIL FROM (sender not allowed) as config', () => {
      const result = classifySmtpError(
        nodemailerError({
          code: 'EENVELOPE',
          responseCode: 553,
          command: 'MAIL FROM',
          response: '553 5.7.1 Not yours',
        }),
      );
      expect(result.class).toBe('config');
      expect(result.reason).toBe('the relay does not allow our sender address (553 5.7.1) at MAIL FROM');
    });
    it('keeps other MAIL FROM refusals permanent', () => {
      expect(
        classOf(nodemailerError({ responseCode: 550, command: 'MAIL FROM', response: '550 5.5.2 Syntax' })),
      ).toBe('permanent');
    });
  });

  describe('ambiguous: the relay may have the message', () => {
    it('classifies a connection closed after the body was sent as ambiguous', () => {
      const result = classifySmtpError(nodemailerError({ code: 'ECONNECTION', command: 'CONN' }), {
        bodySent: true,
      });
      expect(result).toMatchObject({ class: 'ambiguous', code: 'ECONNECTION', enhancedCode: null });
    });
    it('classifies a timeout after the final dot as ambiguous', () => {
      const error = Object.assign(nodemailerError({ code: 'ETIMEDOUT', command: 'CONN' }), {
        timeoutType: 'SOCKET_TIMEOUT',
      });
      expect(classOf(error, true)).toBe('ambiguous');
      expect(classOf(error, false)).toBe('transient');
    });
    it('lets a reply after the body win: a 4xx or 5xx is a definite answer', () => {
      expect(classOf(nodemailerError({ code: 'ECONNECTION', response: '421 4.4.2 Timeout' }), true)).toBe(
        'transient',
      );
      expect(classOf(nodemailerError({ code: 'EMESSAGE', responseCode: 550, command: 'DATA' }), true)).toBe(
        'permanent',
      );
    });
  });

  describe('shapes nodemailer does not make', () => {
    it('classifies values without an SMTP shape as transient with a reason', () => {
      for (const value of [null, undefined, 'boom', 42, [], {}, new Error('plain')]) {
        expect(classifySmtpError(value)).toEqual({
          class: 'transient',
          origin: 'transaction',
          code: null,
          enhancedCode: null,
          reason: 'an error without an SMTP code; retried as transient',
          hardBounce: false,
        });
      }
    });
    it('classifies an unknown code as transient and says it is unrecognised', () => {
      expect(classifySmtpError({ code: 'EWHATEVER' }).reason).toBe(
        'unrecognised error code EWHATEVER; retried as transient',
      );
    });
    it('reads the code of a wrapped error from its cause', () => {
      const wrapped = new Error('send failed', {
        cause: nodemailerError({ code: 'EAUTH', command: 'AUTH PLAIN' }),
      });
      expect(classOf(wrapped)).toBe('config');
    });
    it('accepts a reply code given as a string and lower-case codes', () => {
      expect(classifySmtpError({ code: 'eenvelope', responseCode: '550' })).toMatchObject({
        class: 'permanent',
        code: '550',
      });
    });
    it('ignores reply codes that are not SMTP replies', () => {
      expect(classifySmtpError({ responseCode: 999 }).code).toBeNull();
      expect(classifySmtpError({ responseCode: 55.5, code: 'ESOCKET' }).class).toBe('transient');
    });
    it('survives getters that throw and a Proxy that throws on every access', () => {
      const hostile = Object.defineProperty({}, 'code', {
        get() {
          throw new Error('no');
        },
      });
      expect(classOf(hostile)).toBe('transient');
      const proxy = new Proxy(
        {},
        {
          get() {
            throw new Error('no');
          },
          has() {
            throw new Error('no');
          },
        },
      );
      expect(classOf(proxy)).toBe('transient');
      const context = new Proxy({}, { get: () => Symbol('x') });
      expect(classifySmtpError({ code: 'ECONNECTION' }, context).class).toBe('transient');
    });
    it('follows a cause chain only a few levels deep', () => {
      const deep = { cause: { cause: { cause: { cause: { cause: { code: 'EAUTH' } } } } } };
      expect(classOf(deep)).toBe('transient');
      expect(classOf({ cause: { cause: { code: 'EAUTH' } } })).toBe('config');
    });
    it('survives a cause that points at itself', () => {
      const error: { code?: string; cause?: unknown } = {};
      error.cause = error;
      expect(classOf(error)).toBe('transient');
    });
  });

  describe('extractEnhancedCode', () => {
    it('prefers the code right after the reply code, also on multi-line replies', () => {
      expect(extractEnhancedCode('550-5.1.1 The email account does not exist\n550 5.1.1 see 4.2.2')).toBe(
        '5.1.1',
      );
    });
    it('finds a code later in the text', () => {
      expect(extractEnhancedCode('Message rejected (5.7.1) by policy')).toBe('5.7.1');
    });
    it('does not take a piece of an IP address or version number for a code', () => {
      expect(extractEnhancedCode('550 blocked 192.168.2.1.5 listed')).toBeNull();
      expect(extractEnhancedCode('554 see RFC 5.3.4.1')).toBeNull();
    });
    it('returns null for a non-string', () => {
      expect(extractEnhancedCode(42 as unknown as string)).toBeNull();
    });
  });

  describe('properties', () => {
    const classes = ['transient', 'permanent', 'config', 'ambiguous'];
    const check = (error: unknown, bodySent: unknown) => {
      const result = classifySmtpError(error, { bodySent } as { bodySent?: boolean });
      expect(classes).toContain(result.class);
      expect(typeof result.reason).toBe('string');
      expect(result.reason.length).toBeGreaterThan(0);
      expect(result.code === null || typeof result.code === 'string').toBe(true);
      expect(result.enhancedCode === null || /^[245]\.\d{1,3}\.\d{1,3}$/.test(result.enhancedCode)).toBe(
        true,
      );
    };

    it('is total over arbitrary values', () => {
      fc.assert(fc.property(fc.anything(), fc.anything(), check), { numRuns: 500 });
    });

    it('is total over arbitrary error-like records', () => {
      const errorLike = fc.record(
        {
          code: fc.oneof(
            fc.constantFrom('ECONNECTION', 'EAUTH', 'EENVELOPE', 'EMESSAGE', 'ETLS'),
            fc.anything(),
          ),
          responseCode: fc.oneof(fc.integer({ min: 200, max: 599 }), fc.anything()),
          command: fc.oneof(
            fc.constantFrom('CONN', 'MAIL FROM', 'RCPT TO', 'DATA', 'AUTH PLAIN'),
            fc.anything(),
          ),
          response: fc.oneof(fc.string(), fc.anything()),
          cause: fc.anything(),
        },
        { requiredKeys: [] },
      );
      fc.assert(fc.property(errorLike, fc.boolean(), check), { numRuns: 1000 });
    });

    it('every 4xx reply without a config code is transient, every 5xx never ambiguous', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 400, max: 599 }),
          fc.constantFrom('CONN', 'MAIL FROM', 'RCPT TO', 'DATA'),
          fc.boolean(),
          (responseCode, command, bodySent) => {
            const cls = classOf({ code: 'EENVELOPE', responseCode, command }, bodySent);
            if (responseCode < 500) expect(cls).toBe('transient');
            else expect(cls).not.toBe('ambiguous');
          },
        ),
      );
    });
  });
});

describe('classifySmtpError at the edges (issue 15 §4)', () => {
  describe('SES refusing our sender is config, not permanent', () => {
    it.each([
      '554 Message rejected: Email address is not verified. The following identities failed the check in region US-EAST-1: ops@example.com',
      '554 Message rejected: Sending account is not authorized to send from this address',
      "554 Access denied: User `arn:aws:iam::123456789012:user/ses-smtp' is not authorized to perform `ses:SendRawEmail' on resource `arn:aws:ses:us-east-1:123456789012:identity/example.com'",
      '554 Message rejected: Sending paused for this account. For more information, please check the AWS console.',
    ])('%s', (response) => {
      for (const command of ['MAIL FROM', 'DATA']) {
        const result = classifySmtpError(
          nodemailerError({ code: 'EMESSAGE', responseCode: 554, command, response }),
          { bodySent: command === 'DATA' },
        );
        expect(result.class, command).toBe('config');
        expect(result.code).toBe('554');
        // The reason never quotes the reply (it holds an address).
        expect(result.reason).not.toContain('example.com');
      }
    });
    it('keeps other 554 replies permanent, and an enhanced code wins over the words', () => {
      expect(
        classOf(nodemailerError({ responseCode: 554, command: 'DATA', response: '554 Transaction failed' })),
      ).toBe('permanent');
      expect(
        classOf(
          nodemailerError({
            responseCode: 554,
            command: 'RCPT TO',
            response: '554 5.1.1 Email address is not verified by the receiver',
          }),
        ),
      ).toBe('permanent');
      expect(
        classOf(
          nodemailerError({
            responseCode: 550,
            command: 'DATA',
            response: '550 Email address is not verified',
          }),
        ),
      ).toBe('permanent');
    });
    it('reads SES_CONFIG_PHRASES, a small table, case-insensitively', () => {
      expect(SES_CONFIG_PHRASES.length).toBeLessThanOrEqual(6);
      for (const phrase of SES_CONFIG_PHRASES) {
        const response = `554 Message rejected: ${phrase.toUpperCase()}`;
        expect(classOf(nodemailerError({ responseCode: 554, command: 'DATA', response })), phrase).toBe(
          'config',
        );
      }
    });
  });

  describe('an untrusted relay certificate is config, before the relay saw anything', () => {
    const certificateCodes = [
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'SELF_SIGNED_CERT_IN_CHAIN',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
      'CERT_HAS_EXPIRED',
      'CERT_NOT_YET_VALID',
      'ERR_TLS_CERT_ALTNAME_INVALID',
    ];
    it.each(certificateCodes)('%s as nodemailer reports it (ESOCKET, CONN, originalCode)', (tlsCode) => {
      // The message is deliberately unhelpful: only the fields decide.
      const error = nodemailerError({ code: 'ESOCKET', command: 'CONN' });
      Object.assign(error, { originalCode: tlsCode });
      expect(classOf(error)).toBe('config');
      expect(classifySmtpError(error).origin).toBe('outage');
      expect(classifySmtpError(error).reason).toContain(tlsCode);
    });
    it.each(certificateCodes)('%s as the cause of a wrapped error', (tlsCode) => {
      const error = nodemailerError({ code: 'ESOCKET', command: 'CONN' });
      Object.assign(error, { cause: Object.assign(new Error('x'), { code: tlsCode }) });
      expect(classOf(error)).toBe('config');
      expect(classifySmtpError(error).origin).toBe('outage');
    });
    it('keeps a plain socket error transient, and does not read the message', () => {
      const reset = Object.assign(nodemailerError({ code: 'ESOCKET', command: 'CONN' }), {
        originalCode: 'ECONNRESET',
      });
      expect(classOf(reset)).toBe('transient');
      const worded = nodemailerError({ code: 'ESOCKET', command: 'CONN' });
      worded.message = 'self-signed certificate';
      expect(classOf(worded)).toBe('transient');
    });
  });

  describe('the relay login from Secrets Manager', () => {
    it('files a failed read (ESECRETREAD) as transient and a malformed secret (ECONFIG) as config, neither reaching the relay', () => {
      const read = Object.assign(new Error('the SMTP secret could not be read'), { code: 'ESECRETREAD' });
      expect(classifySmtpError(read)).toMatchObject({ class: 'transient', code: 'ESECRETREAD' });
      expect(classifySmtpError(read).origin).toBe('outage');
      const malformed = Object.assign(new Error('the SMTP secret is not JSON'), { code: 'ECONFIG' });
      expect(classOf(malformed)).toBe('config');
      expect(classifySmtpError(malformed).origin).toBe('outage');
    });
  });
});

/**
 * DESIGN §5 (sender-not-allowed is config: a long backoff, alarmed) and §12 (only a recipient's bad
 * address is suppressed). RFC 3463 X.1.7 and X.1.8 are the *sender's* address (bad sender mailbox
 * syntax, bad sender system address): ours. Postfix checks the sender at RCPT TO by default
 * (smtpd_delay_reject), so they arrive once per recipient, as well as at MAIL FROM.
 */
describe("our sender's address refused (RFC 3463 X.1.7, X.1.8)", () => {
  it.each([
    ['550 5.1.7 Bad sender address syntax', 'MAIL FROM'],
    ['553 5.1.8 Sender address rejected: Domain not found', 'MAIL FROM'],
    ['553 5.1.8 <ops@sender.example>: Sender address rejected: Domain not found', 'RCPT TO'],
    ['550 5.1.7 <ops@sender.example>: Sender address rejected: malformed', 'RCPT TO'],
    ['554 5.1.8 Sender address rejected', 'DATA'],
  ])('%s at %s is config, and suppresses nobody', (response, command) => {
    const result = classifySmtpError(
      nodemailerError({ responseCode: Number(response.slice(0, 3)), command, response }),
      { transactionStarted: true },
    );
    expect(result).toMatchObject({ class: 'config', origin: 'transaction', hardBounce: false });
    expect(result.reason).toMatch(/our sender address/);
    expect(result.reason).not.toContain('sender.example');
  });

  // Postfix answers every sender check with "<sender>: Sender address rejected: …", whatever its
  // code: reject_unlisted_sender with X.1.0 (other address status; a recipient's would be 5.1.1),
  // reject_sender_login_mismatch with 5.7.1; with smtpd_delay_reject, at RCPT TO (decision 0256).
  it.each([
    [
      '550 5.1.0 <ops@sender.example>: Sender address rejected: User unknown in virtual mailbox table',
      'RCPT TO',
    ],
    [
      '550 5.1.0 <ops@sender.example>: Sender address rejected: User unknown in local recipient table',
      'MAIL FROM',
    ],
    ['553 5.7.1 <ops@sender.example>: Sender address rejected: not owned by user app', 'RCPT TO'],
    ['550 <ops@sender.example>: SENDER ADDRESS REJECTED: Access denied', 'RCPT TO'],
  ])('%s at %s is config by its words, and suppresses nobody', (response, command) => {
    const result = classifySmtpError(
      nodemailerError({ responseCode: Number(response.slice(0, 3)), command, response }),
      { transactionStarted: true },
    );
    expect(result).toMatchObject({ class: 'config', origin: 'transaction', hardBounce: false });
    expect(result.reason).toMatch(/our sender address/);
    expect(result.reason).not.toContain('sender.example');
  });

  // The words are read in the relay's text, not in an address it echoes: a quoted local part may hold
  // them (parseAddress takes `"sender address rejected"@example.com`, RFC 5321 §4.1.2), and the
  // refusal of that recipient is still its own hard bounce, never a config error (decision 0267).
  it.each([
    '550 5.1.1 <"sender address rejected"@example.com>: Recipient address rejected: User unknown in virtual mailbox table',
    '550 5.1.1 <"x>: Sender address rejected: y"@example.com>: Recipient address rejected: User unknown',
    '550 5.1.1 "Sender Address Rejected"@example.com... User unknown',
  ])('a recipient whose address holds the words is its own hard bounce: %s', (response) => {
    const result = classifySmtpError(nodemailerError({ responseCode: 550, command: 'RCPT TO', response }), {
      transactionStarted: true,
    });
    expect(result).toMatchObject({ class: 'permanent', hardBounce: true });
  });

  it("a recipient's bad address (5.1.x but 7 and 8), refused for good, is a hard bounce; nothing else is", () => {
    const bounce = (response: string, command = 'RCPT TO') =>
      classifySmtpError(nodemailerError({ responseCode: Number(response.slice(0, 3)), command, response }))
        .hardBounce;
    for (const code of ['5.1.1', '5.1.2', '5.1.3', '5.1.6', '5.1.10']) {
      expect(bounce(`550 ${code} No such user`), code).toBe(true);
    }
    for (const response of [
      '550 5.1.7 Bad sender',
      '553 5.1.8 Sender rejected',
      '550 5.7.1 Policy',
      '552 5.2.2 Mailbox full',
      '550 5.4.1 No route',
      '550 5.0.0 Rejected',
      '450 4.1.1 Try later',
      '550 No code',
      '554 5.1.1 Email address is not verified',
    ]) {
      expect(bounce(response), response).toBe(response.startsWith('554 5.1.1'));
    }
    // SES's throttling is never a bounce, nor a connection failure.
    expect(classifySmtpError({ code: 'ECONNECTION', command: 'CONN' }).hardBounce).toBe(false);
  });

  it('no sender-address code, at any step and in any reply, ever suppresses or fails a message for good', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 500, max: 599 }),
        fc.constantFrom('5.1.7', '5.1.8'),
        fc.constantFrom('MAIL FROM', 'RCPT TO', 'DATA', 'CONN', 'BDAT'),
        fc.string({ maxLength: 40 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 0, max: 4 }),
        (reply, code, command, words, bodySent, total, acceptedCount, attemptsBefore) => {
          const response = `${reply} ${code} ${words}`;
          const refusal = classifySmtpError(nodemailerError({ responseCode: reply, command, response }), {
            bodySent,
            transactionStarted: true,
          });
          expect(refusal.class).toBe('config');
          expect(refusal.hardBounce).toBe(false);
          // Every recipient refused this way (the transaction failed with it), or only some while
          // the others were accepted: the message never ends `failed`.
          const attempted = Array.from({ length: total }, (_, position) => position);
          const accepted = Math.min(acceptedCount, total - 1);
          const refused = attempted
            .slice(accepted)
            .map((position) => ({ position, permanent: refusal.class === 'permanent' }));
          const decision = decideOutcome(
            {
              delivered: accepted > 0,
              ...(accepted > 0 ? {} : { failureClass: refusal.class, origin: refusal.origin }),
              attempted,
              refused,
            },
            {
              attempts: attemptsBefore,
              on_ambiguous: 'retry',
              recipients: { accepted: [], rejected: [] },
              recipientTotal: total,
            },
            { maxAttempts: 5, retryBaseSeconds: 1, retryCapSeconds: 60 },
            () => 0.5,
          );
          expect(decision.to).not.toBe('failed');
          expect(decision.recipients.rejected).toEqual([]);
        },
      ),
    );
  });
});

describe('every recipient refused at RCPT TO: whose failure it is does not depend on their order', () => {
  // DESIGN §5: a throttle is the fleet's pressure and no attempt; a recipient deferred with another
  // 4xx is this message's own transient failure; our sender refused is our setup (config, alarmed);
  // one refused with a 5xx is settled for itself. With
  // every recipient refused, nodemailer puts the first 4xx of the envelope on its error (or, with
  // none, the last reply): the order of the recipients must not decide which of these it is.
  const REPLIES = {
    deferred: { responseCode: 450, response: '450 4.2.1 Mailbox busy' },
    greylisted: { responseCode: 451, response: '451 4.7.1 Greylisted, try again' },
    throttled: { responseCode: 454, response: '454 Throttling failure: Maximum sending rate exceeded' },
    quota: { responseCode: 454, response: '454 Throttling failure: Daily message quota exceeded' },
    otherQuota: { responseCode: 550, response: '550 5.4.5 Daily user sending limit exceeded' },
    bounced: { responseCode: 550, response: '550 5.1.1 No such user' },
    refused: { responseCode: 554, response: '554 5.7.1 Rejected by policy' },
    ourSender: { responseCode: 553, response: '553 5.1.8 <a@example.com>: Sender address rejected' },
  } as const;
  type Reply = keyof typeof REPLIES;
  const THROTTLES: readonly Reply[] = ['throttled', 'quota', 'otherQuota'];
  const DEFERRALS: readonly Reply[] = ['deferred', 'greylisted'];

  /** nodemailer's all-refused error (smtp-connection `_envelopeError`) for replies in this order. */
  function allRefused(replies: readonly Reply[]) {
    const rejectedErrors = replies.map((reply, index) =>
      Object.assign(new Error(`Recipient command failed: ${REPLIES[reply].response}`), {
        code: 'EENVELOPE',
        command: 'RCPT TO',
        recipient: `r${index}@example.com`,
        ...REPLIES[reply],
      }),
    );
    const deferred = rejectedErrors.find((error) => error.responseCode < 500);
    const said = deferred ?? rejectedErrors[rejectedErrors.length - 1];
    return Object.assign(new Error("Can't send mail - all recipients were rejected"), {
      code: 'EENVELOPE',
      command: 'RCPT TO',
      response: said?.response,
      responseCode: said?.responseCode,
      rejectedErrors,
    });
  }

  const judged = (replies: readonly Reply[]) => {
    const result = classifySmtpError(allRefused(replies), { transactionStarted: true });
    return { origin: result.origin, class: result.class };
  };

  it('a deferral beside a throttle is the message’s own failure, whichever came first', () => {
    expect(judged(['deferred', 'throttled'])).toEqual({ origin: 'transaction', class: 'transient' });
    expect(judged(['throttled', 'deferred'])).toEqual({ origin: 'transaction', class: 'transient' });
  });

  it('throttles beside refusals for good are the fleet’s pressure, whichever came first', () => {
    expect(judged(['bounced', 'otherQuota'])).toEqual({ origin: 'throttle', class: 'transient' });
    expect(judged(['otherQuota', 'bounced'])).toEqual({ origin: 'throttle', class: 'transient' });
  });

  it('any order of the same replies is judged alike: a throttle only when nobody was deferred or our sender refused', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...(Object.keys(REPLIES) as Reply[])), { minLength: 1, maxLength: 6 }),
        fc.infiniteStream(fc.nat()),
        (replies, draws) => {
          const shuffled = [...replies];
          for (let index = shuffled.length - 1; index > 0; index -= 1) {
            const other = (draws.next().value as number) % (index + 1);
            [shuffled[index], shuffled[other]] = [shuffled[other] as Reply, shuffled[index] as Reply];
          }
          const deferral = replies.some((reply) => DEFERRALS.includes(reply));
          const throttle = replies.some((reply) => THROTTLES.includes(reply));
          const expected = replies.includes('ourSender')
            ? { origin: 'transaction', class: 'config' }
            : deferral
              ? { origin: 'transaction', class: 'transient' }
              : throttle
                ? { origin: 'throttle', class: 'transient' }
                : { origin: 'transaction', class: 'permanent' };
          expect(judged(replies)).toEqual(expected);
          expect(judged(shuffled)).toEqual(expected);
        },
      ),
    );
  });
});
