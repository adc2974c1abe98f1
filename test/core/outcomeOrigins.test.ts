import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffCeilingSeconds } from '../../lambdas/core/backoff.js';
import {
  classifyAttachmentRead,
  classifySmtpError,
  type FailureOrigin,
  type ThrottleKind,
} from '../../lambdas/core/classifySmtpError.js';
import { deriveStatusChange } from '../../lambdas/core/messageEvents.js';
import type { MessageStatus } from '../../lambdas/core/messageStatus.js';
import type { ErrorClass } from '../../lambdas/core/postdateError.js';
import { pendingPositions } from '../../lambdas/core/recipients.js';
import {
  type AttemptResult,
  decideOutcome,
  joinsHistory,
  type OutcomeRecord,
  showsLastError,
  THROTTLED_RETRY_SECONDS,
} from '../../lambdas/core/sendDecision.js';
import { AttachmentMissingError } from '../../lambdas/ports/AttachmentStore.js';

/**
 * DESIGN §2 and §5, the one rule: an outage (before MAIL FROM) is no attempt and never dead, and
 * holds every sender; throttling is no attempt and never dead; a reply to the message's own commands
 * counts exactly one attempt; `dead` only when the attempts reach the limit with recipients pending;
 * the backoff's exponent is the message's attempts.
 */

const SETTINGS = { maxAttempts: 4, retryBaseSeconds: 30, retryCapSeconds: 3600, relayWaitSeconds: 30 };

const origins: fc.Arbitrary<FailureOrigin> = fc.constantFrom('outage', 'local', 'throttle', 'transaction');
const classes: fc.Arbitrary<ErrorClass> = fc.constantFrom('transient', 'permanent', 'config', 'ambiguous');

/** A record with up to 5 recipients, some settled, and its attempts anywhere around the limit. */
const records: fc.Arbitrary<OutcomeRecord> = fc
  .record({
    total: fc.integer({ min: 1, max: 5 }),
    settled: fc.array(fc.tuple(fc.nat(4), fc.boolean()), { maxLength: 4 }),
    attempts: fc.nat(8),
    limit: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
    hold: fc.boolean(),
  })
  .map(({ total, settled, attempts, limit, hold }) => {
    const accepted: number[] = [];
    const rejected: number[] = [];
    for (const [position, ok] of settled) {
      if (position >= total || accepted.includes(position) || rejected.includes(position)) continue;
      (ok ? accepted : rejected).push(position);
    }
    return {
      attempts,
      ...(limit === undefined ? {} : { attempt_limit: limit }),
      on_ambiguous: hold ? ('hold' as const) : ('retry' as const),
      recipients: { accepted, rejected },
      recipientTotal: total,
    };
  });

const throttles = fc.constantFrom<ThrottleKind | undefined>(undefined, 'rate', 'quota');

/**
 * A failed (or, `delivered`, accepted) attempt on the record's pending recipients, some refused at
 * RCPT TO — a 4xx among them maybe in throttling words (`throttle`).
 */
const failures = (
  record: OutcomeRecord,
  delivered: fc.Arbitrary<boolean> = fc.constant(false),
): fc.Arbitrary<AttemptResult> => {
  const attempted = pendingPositions(record.recipientTotal, record.recipients);
  return fc.record({
    delivered,
    failureClass: classes,
    origin: origins,
    throttle: throttles,
    attempted: fc.constant(attempted),
    refused: fc
      .subarray(attempted)
      .chain((refused) =>
        fc.tuple(
          ...refused.map((position) =>
            fc
              .record({ position: fc.constant(position), permanent: fc.boolean(), throttle: throttles })
              .map((refusal) => (refusal.permanent ? { ...refusal, throttle: undefined } : refusal)),
          ),
        ),
      ),
  });
};

/** Recipients the relay throttled at RCPT TO in this attempt and still pending after it. */
const throttledPending = (result: AttemptResult, pending: readonly number[]) =>
  result.refused.filter((refusal) => refusal.throttle !== undefined && pending.includes(refusal.position));

const cases = records
  .filter((record) => pendingPositions(record.recipientTotal, record.recipients).length > 0)
  .chain((record) =>
    fc.tuple(
      fc.constant(record),
      failures(record),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
    ),
  );

describe('the outcome decision, by where the failure happened', () => {
  it('an outage never counts an attempt, never ends the message, leaves its recipients, and holds the fleet', () => {
    fc.assert(
      fc.property(cases, ([record, result, draw]) => {
        const decision = decideOutcome({ ...result, origin: 'outage' }, record, SETTINGS, () => draw);
        expect(decision.to).toBe('retrying');
        expect(decision.attempts).toBe(record.attempts);
        expect(decision.recipients).toEqual(record.recipients);
        expect(decision.fleet).toBe('relay-unavailable');
        expect(decision.visibilitySeconds).toBe(SETTINGS.relayWaitSeconds);
      }),
    );
  });

  // DESIGN §5: "one rejected with a 5xx is recorded and not retried", whatever then throttled the
  // others: each reply at RCPT TO stands whatever ends the transaction (decisions 0314, 0315).
  it('a throttle never counts an attempt, rejects only whom the relay refused for good at RCPT TO, and comes back within seconds', () => {
    fc.assert(
      fc.property(cases, ([record, result, draw]) => {
        const decision = decideOutcome({ ...result, origin: 'throttle' }, record, SETTINGS, () => draw);
        const refusedForGood = result.refused.filter((refusal) => refusal.permanent).map((r) => r.position);
        const rejected = [...record.recipients.rejected, ...refusedForGood].sort((a, b) => a - b);
        expect(decision.attempts).toBe(record.attempts);
        const accepted = [...record.recipients.accepted].sort((a, b) => a - b);
        expect(decision.recipients).toEqual({ accepted, rejected });
        expect(decision.fleet).toBe(result.throttle === 'quota' ? 'quota-exhausted' : 'throttled');
        if (pendingPositions(record.recipientTotal, decision.recipients).length === 0) {
          // Only in theory (a throttle stops someone): settled as any attempt that leaves nobody pending.
          expect(decision.to).toBe(record.recipients.accepted.length > 0 ? 'sent' : 'failed');
          return;
        }
        expect(decision.to).toBe('retrying');
        expect(decision.visibilitySeconds).toBeGreaterThanOrEqual(1);
        expect(decision.visibilitySeconds).toBeLessThanOrEqual(THROTTLED_RETRY_SECONDS);
      }),
    );
  });

  it('a refusal by our own client before MAIL FROM counts no attempt and is never dead', () => {
    fc.assert(
      fc.property(cases, ([record, result, draw]) => {
        const decision = decideOutcome({ ...result, origin: 'local' }, record, SETTINGS, () => draw);
        expect(decision.attempts).toBe(record.attempts);
        expect(decision.to).not.toBe('dead');
        expect(decision.fleet).toBeUndefined();
      }),
    );
  });

  it('a reply to the message’s own commands counts exactly one attempt and holds the fleet only for a recipient throttled at RCPT TO', () => {
    fc.assert(
      fc.property(cases, ([record, result, draw]) => {
        const decision = decideOutcome({ ...result, origin: 'transaction' }, record, SETTINGS, () => draw);
        expect(decision.attempts).toBe(record.attempts + 1);
        const throttled = throttledPending(
          result,
          pendingPositions(record.recipientTotal, decision.recipients),
        );
        const quota = throttled.some((refusal) => refusal.throttle === 'quota');
        expect(decision.fleet).toBe(
          throttled.length === 0 ? undefined : quota ? 'quota-exhausted' : 'throttled',
        );
      }),
    );
  });

  it('a recipient throttled at RCPT TO while the relay took others: the attempt counts, never dead for it, back within seconds when only throttled ones wait', () => {
    const delivered = records
      .filter((record) => pendingPositions(record.recipientTotal, record.recipients).length > 0)
      .chain((record) =>
        fc.tuple(
          fc.constant(record),
          failures(record, fc.constant(true)),
          fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        ),
      );
    fc.assert(
      fc.property(delivered, ([record, result, draw]) => {
        const decision = decideOutcome(result, record, SETTINGS, () => draw);
        expect(decision.attempts).toBe(record.attempts + 1);
        const pending = pendingPositions(record.recipientTotal, decision.recipients);
        const throttled = throttledPending(result, pending);
        if (throttled.length === 0) return;
        expect(decision.to).toBe('retrying');
        expect(decision.fleet).toBeDefined();
        if (throttled.length === pending.length)
          expect(decision.visibilitySeconds).toBeLessThanOrEqual(THROTTLED_RETRY_SECONDS);
      }),
    );
  });

  it('dead iff a counted attempt reaches the limit with recipients still pending (ambiguous under hold aside)', () => {
    fc.assert(
      fc.property(cases, ([record, result, draw]) => {
        const decision = decideOutcome(result, record, SETTINGS, () => draw);
        const limit = record.attempt_limit ?? SETTINGS.maxAttempts;
        const pending = pendingPositions(record.recipientTotal, decision.recipients);
        const heldUnknown = result.failureClass === 'ambiguous' && record.on_ambiguous === 'hold';
        const expected =
          result.origin === 'transaction' &&
          !heldUnknown &&
          pending.length > 0 &&
          throttledPending(result, pending).length === 0 &&
          record.attempts + 1 >= limit;
        expect(decision.to === 'dead').toBe(expected);
      }),
    );
  });

  it('the backoff’s exponent is the message’s attempts before this one (no receive count enters)', () => {
    fc.assert(
      fc.property(fc.nat(12), fc.constantFrom<FailureOrigin>('transaction', 'local'), (attempts, origin) => {
        const record: OutcomeRecord = {
          attempts,
          attempt_limit: 100,
          on_ambiguous: 'retry',
          recipients: { accepted: [], rejected: [] },
          recipientTotal: 1,
        };
        const result: AttemptResult = {
          delivered: false,
          failureClass: 'transient',
          origin,
          attempted: [0],
          refused: [],
        };
        const policy = { baseSeconds: SETTINGS.retryBaseSeconds, capSeconds: SETTINGS.retryCapSeconds };
        // The highest draw gives the ceiling: min(cap, base · 2^attempts).
        const top = decideOutcome(result, record, SETTINGS, () => 1 - Number.EPSILON);
        expect(top.visibilitySeconds).toBe(backoffCeilingSeconds(attempts, policy));
        expect(decideOutcome(result, record, SETTINGS, () => 0).visibilitySeconds).toBe(0);
      }),
    );
  });
});

/** Any outcome on a record with recipients pending: delivered or not, from anywhere. */
const outcomes = records
  .filter((record) => pendingPositions(record.recipientTotal, record.recipients).length > 0)
  .chain((record) =>
    fc.tuple(
      fc.constant(record),
      fc.oneof(
        failures(record),
        failures(record).map(
          (failure): AttemptResult => ({
            delivered: true,
            attempted: failure.attempted,
            refused: failure.refused,
          }),
        ),
      ),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
    ),
  );

/**
 * DESIGN §2 and §3: `history` is "the attempts, each with its per-recipient replies", capped. An
 * outcome joins it when it counted an attempt or ends the message (one that ends before any attempt
 * still says why); an outage, a throttle or a local failure that leaves the message retrying is its
 * `last_error` only, so no outage, however long, pushes a real attempt out (decision 0175).
 */
describe('what joins the history', () => {
  it('joins exactly when the outcome counted an attempt or ends the message (property)', () => {
    fc.assert(
      fc.property(outcomes, ([record, result, draw]) => {
        const decision = decideOutcome(result, record, SETTINGS, () => draw);
        const counted = decision.attempts === record.attempts + 1;
        expect(decision.joinsHistory).toBe(counted || decision.to !== 'retrying');
        expect(decision.joinsHistory).toBe(joinsHistory(counted, decision.to));
      }),
    );
  });

  it('never joins for an outage or a throttle; always for a reply to the message’s own commands (property)', () => {
    fc.assert(
      fc.property(outcomes, ([record, result, draw]) => {
        const failed = { ...result, delivered: false, failureClass: result.failureClass ?? 'transient' };
        expect(
          decideOutcome({ ...failed, origin: 'outage' }, record, SETTINGS, () => draw).joinsHistory,
        ).toBe(false);
        // A throttle ends the message only when every recipient it could stop was refused for good at
        // RCPT TO (in theory: a throttle stops someone); then it says why, as any ending does.
        const throttled = decideOutcome({ ...failed, origin: 'throttle' }, record, SETTINGS, () => draw);
        expect(throttled.joinsHistory).toBe(throttled.to !== 'retrying');
        expect(
          decideOutcome({ ...result, origin: 'transaction' }, record, SETTINGS, () => draw).joinsHistory,
        ).toBe(true);
      }),
    );
  });

  it('joins for a local failure before MAIL FROM only when it ends the message (the file or the envelope refused for good)', () => {
    fc.assert(
      fc.property(cases, ([record, result, draw]) => {
        const decision = decideOutcome({ ...result, origin: 'local' }, record, SETTINGS, () => draw);
        expect(decision.joinsHistory).toBe(decision.to !== 'retrying');
      }),
    );
  });

  it('is an event exactly when it joins: a claim given back without an attempt is neither (property, decision 0223)', () => {
    fc.assert(
      fc.property(outcomes, ([record, result, draw]) => {
        const decision = decideOutcome(result, record, SETTINGS, () => draw);
        const image = (status: MessageStatus, attempts: number, at: string) =>
          ({ id: 'm1', tenant: 't1', status, rev: 1, updated_at: at, attempts }) as const;
        const event = deriveStatusChange({
          eventName: 'MODIFY',
          before: image('sending', record.attempts, '2026-12-01T09:00:00.000Z'),
          after: image(decision.to, decision.attempts, '2026-12-01T09:00:01.000Z'),
        });
        expect(event !== null).toBe(decision.joinsHistory);
      }),
    );
  });

  it('an ending without an attempt joins; a retry without one does not', () => {
    for (const to of ['sent', 'failed', 'dead', 'unknown'] as const)
      expect(joinsHistory(false, to)).toBe(true);
    expect(joinsHistory(false, 'retrying')).toBe(false);
    expect(joinsHistory(true, 'retrying')).toBe(true);
  });
});

/**
 * DESIGN §3, `last_error`: a `sent` message shows none, however it came to be sent (a 250, or the
 * last pending recipient refused for good or suppressed after an earlier failure); any other
 * outcome shows the failure that led to it (decision 0223).
 */
describe('what the message shows as its last error', () => {
  it('the outcome’s failure, unless the message is sent (property)', () => {
    fc.assert(
      fc.property(outcomes, ([record, result, draw]) => {
        const decision = decideOutcome(result, record, SETTINGS, () => draw);
        expect(decision.showsLastError).toBe(decision.to !== 'sent');
        expect(decision.showsLastError).toBe(showsLastError(decision.to));
      }),
    );
  });

  it('none once a later attempt refuses the last pending recipient for good while one was accepted before (property)', () => {
    const lastRefused = records
      .filter((record) => {
        const pending = pendingPositions(record.recipientTotal, record.recipients);
        return record.recipients.accepted.length > 0 && pending.length > 0;
      })
      .chain((record) =>
        fc.tuple(fc.constant(record), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })),
      );
    fc.assert(
      fc.property(lastRefused, ([record, draw]) => {
        const attempted = pendingPositions(record.recipientTotal, record.recipients);
        const result: AttemptResult = {
          delivered: false,
          failureClass: 'permanent',
          origin: 'transaction',
          attempted,
          refused: attempted.map((position) => ({ position, permanent: true })),
        };
        const decision = decideOutcome(result, record, SETTINGS, () => draw);
        expect(decision.to).toBe('sent');
        expect(decision.showsLastError).toBe(false);
      }),
    );
  });

  it('a screening without an attempt: the earlier error stays on a failed or suppressed message, none on a sent one', () => {
    expect(showsLastError('sent')).toBe(false);
    for (const to of ['failed', 'suppressed', 'retrying', 'dead', 'unknown'] as const)
      expect(showsLastError(to)).toBe(true);
  });
});

describe('SES throttling is read at the edge into the throttle origin', () => {
  const reply = (responseCode: number, response: string, command: string) =>
    Object.assign(new Error('smtp'), { code: 'EENVELOPE', responseCode, response, command });

  it.each([
    ['454 Throttling failure: Maximum sending rate exceeded.', 454, 'MAIL FROM'],
    ['454 Throttling failure: Daily message quota exceeded.', 454, 'MAIL FROM'],
    ['454 Throttling failure: Maximum sending rate exceeded.', 454, 'DATA'],
    ['421 Throttling failure: Maximum sending rate exceeded.', 421, 'MAIL FROM'],
    ['454 Throttling failure: Daily message quota exceeded.', 454, 'RCPT TO'],
  ])('%s at %s', (text, code, command) => {
    const classified = classifySmtpError(reply(code, text, command));
    expect(classified).toMatchObject({ origin: 'throttle', class: 'transient', code: String(code) });
    expect(classified.throttle).toBe(text.includes('Daily message quota') ? 'quota' : 'rate');
    expect(classified.reason).not.toContain('Throttling failure');
  });

  // Microsoft 365 allows three SMTP AUTH connections per mailbox and refuses more with a 432
  // ("Changes coming to the SMTP Authenticated Submission client protocol", Exchange Team Blog):
  // the relay's pressure, not the message's fault (decision 0203).
  it.each([
    ['432 4.3.2 STOREDRV.ClientSubmit; sender thread limit exceeded [Hostname=AM0PR01MB1234]', 'DATA'],
    ['432 4.3.2 STOREDRV.ClientSubmit; sender thread limit exceeded', 'MAIL FROM'],
    ['432 4.3.2 Concurrent connections limit exceeded. Visit https://aka.ms/concurrent_sending', 'CONN'],
  ])('a concurrency throttle: %s at %s', (text, command) => {
    expect(classifySmtpError(reply(432, text, command))).toMatchObject({
      origin: 'throttle',
      class: 'transient',
      throttle: 'rate',
    });
  });

  it('a recipient’s own thread limit is the message’s, not the relay’s pressure', () => {
    const recipient = classifySmtpError(
      reply(432, '432 4.3.2 STOREDRV.Deliver; recipient thread limit exceeded', 'DATA'),
    );
    expect(recipient.origin).toBe('transaction');
  });

  it('only a 4xx: a 5xx that says the words is the message’s own refusal', () => {
    expect(classifySmtpError(reply(554, '554 Throttling failure: nope', 'DATA')).origin).toBe('transaction');
  });

  // Other providers' documented daily-quota replies (docs/smtp-classification.md, decision 0198):
  // the relay throttles the sender, so no attempt and the fleet holds, never `failed`.
  it.each([
    [
      '550 5.4.5 Daily user sending limit exceeded. For more information please visit https://support.google.com/a/answer/166852',
      550,
      'MAIL FROM',
    ],
    [
      '550-5.4.5 Daily SMTP relay limit exceeded for customer. For more information on SMTP relay sending\n550 5.4.5 limits please contact your administrator - gsmtp',
      550,
      'RCPT TO',
    ],
    ['550 5.4.5 Daily SMTP relay limit exceeded for user.', 550, 'DATA'],
    [
      '550 5.4.5 Daily sending quota exceeded. https://support.google.com/mail/?p=DailyLimitExceeded - gsmtp',
      550,
      'MAIL FROM',
    ],
    [
      '554 5.2.0 STOREDRV.Submission.Exception:SubmissionQuotaExceededException; Failed to process message due to a permanent exception with message [BeginDiagnosticData]',
      554,
      'DATA',
    ],
    // Microsoft's own list ("Email non-delivery reports and SMTP errors in Exchange Online"),
    // which names the enhanced code and the words, not the reply code.
    [
      "550 5.1.90 Your message can't be sent because you've reached your daily limit for message recipients",
      550,
      'RCPT TO',
    ],
    ['554 5.2.2 Submission quota exceeded', 554, 'DATA'],
    [
      "550 5.7.233 Your message can't be sent because your tenant exceeded its daily limit for sending email to external recipients (tenant external recipient rate limit)",
      550,
      'RCPT TO',
    ],
    [
      "550 5.7.232 Your message can't be sent because your trial tenant has exceeded its daily limit for sending email to external recipients (tenant external recipient rate limit)",
      550,
      'DATA',
    ],
  ])('a daily quota: %s (%i at %s)', (text, code, command) => {
    const classified = classifySmtpError(reply(code, text, command));
    expect(classified).toMatchObject({
      origin: 'throttle',
      class: 'transient',
      throttle: 'quota',
      hardBounce: false,
    });
  });

  it('a quota reply is matched by its enhanced code and its words together, nothing looser', () => {
    for (const [code, text] of [
      [550, '550 5.7.1 Daily user sending limit exceeded'],
      [550, '550 Daily SMTP relay limit exceeded for customer'],
      [550, '550 5.4.5 Message rejected'],
      [554, '554 5.2.0 STOREDRV.Submission.Exception:OutboundSpamException; message rejected'],
      [554, '554 5.6.0 SubmissionQuotaExceededException'],
      // A recipient's full mailbox shares 5.2.2 with Microsoft's submission quota, not its words.
      [552, '552 5.2.2 Mailbox full'],
      [550, '550 5.2.2 Mailbox quota exceeded'],
      [550, '550 5.1.1 daily limit for message recipients'],
    ] as const) {
      expect(classifySmtpError(reply(code, text, 'DATA')).origin).toBe('transaction');
    }
    // Google's temporary "try again later" is the message's 4xx, not a quota.
    const later = classifySmtpError(
      reply(421, '421 4.7.0 Try again later, closing connection.', 'MAIL FROM'),
    );
    expect(later).toMatchObject({ origin: 'transaction', class: 'transient' });
    expect(later.throttle).toBeUndefined();
  });

  it('a 421 without the words at MAIL FROM or after DATA is the message’s own, at the greeting the relay’s', () => {
    expect(classifySmtpError(reply(421, '421 4.4.2 closing', 'MAIL FROM')).origin).toBe('transaction');
    expect(classifySmtpError(reply(421, '421 4.4.2 closing', 'DATA')).origin).toBe('transaction');
    expect(classifySmtpError(reply(421, '421 4.3.2 Service not available', 'CONN')).origin).toBe('outage');
  });

  it('an empty envelope refused by nodemailer before MAIL FROM (EENVELOPE at API) is local: no attempt', () => {
    const refused = Object.assign(new Error('No recipients defined'), { code: 'EENVELOPE', command: 'API' });
    expect(classifySmtpError(refused)).toMatchObject({ origin: 'local', class: 'permanent' });
  });
});

/**
 * DESIGN §5: "A reply to this message's own commands (MAIL, RCPT, DATA, the final dot), 421 included,
 * is this message's outcome and counts toward its attempts"; §2: an attempt is a transaction in which
 * the relay saw the message (MAIL FROM sent). nodemailer files some of those replies under `CONN`
 * (with PIPELINING a 421 at RCPT TO ends the session: `ECONNECTION`, `CONN`, 421), and a message
 * stream that fails after 354 under `API` (`ESTREAM`, no reply). Only the mailer knows that the
 * transaction had begun (`transactionStarted`); then neither is the relay's outage nor a local refusal.
 */
describe('once the transaction began, whose a failure is does not depend on the command nodemailer names', () => {
  const connError = (fields: Record<string, unknown>) =>
    Object.assign(new Error('Server closed the connection'), {
      code: 'ECONNECTION',
      command: 'CONN',
      ...fields,
    });
  const started = { transactionStarted: true } as const;

  it('a 421 filed under CONN at the greeting stays the relay’s outage', () => {
    const greeting = connError({ responseCode: 421, response: '421 4.3.2 Service not available' });
    expect(classifySmtpError(greeting).origin).toBe('outage');
    expect(classifySmtpError(greeting, { beforeTransaction: true }).origin).toBe('outage');
  });

  it.each([
    [
      'a 421 at RCPT TO (PIPELINING: nodemailer ends the session under CONN)',
      421,
      '421 4.7.0 Too many errors, closing',
      'transient',
    ],
    ['a 421 at MAIL FROM filed under CONN', 421, '421 4.4.2 Closing', 'transient'],
    ['a 5xx cut short by the close (no line end)', 554, '554 5.7.1 Rejected', 'permanent'],
    ['a 4xx cut short by the close', 451, '451 4.3.0 Local error', 'transient'],
  ] as const)('%s is the message’s: one attempt', (_name, responseCode, response, expectedClass) => {
    const error = connError({ responseCode, response });
    expect(classifySmtpError(error, started)).toMatchObject({
      origin: 'transaction',
      class: expectedClass,
      code: String(responseCode),
    });
  });

  it('a reply nodemailer did not expect (EPROTOCOL, CONN) mid-transaction is the message’s', () => {
    const error = Object.assign(new Error('Unexpected Response'), {
      code: 'EPROTOCOL',
      command: 'CONN',
      responseCode: 550,
      response: '550 5.7.1 Go away',
    });
    expect(classifySmtpError(error, started)).toMatchObject({ origin: 'transaction', class: 'permanent' });
  });

  it('SES’s throttling words stay the fleet’s pressure, whatever the command', () => {
    const error = connError({
      responseCode: 421,
      response: '421 Throttling failure: Maximum sending rate exceeded.',
    });
    expect(classifySmtpError(error, started).origin).toBe('throttle');
  });

  it('any reply once the transaction began counts one attempt and never holds the fleet (property)', () => {
    const replies = fc
      .record({
        responseCode: fc.integer({ min: 400, max: 599 }),
        command: fc.constantFrom('CONN', 'MAIL FROM', 'RCPT TO', 'DATA', 'API', ''),
        code: fc.constantFrom('ECONNECTION', 'EENVELOPE', 'EMESSAGE', 'EPROTOCOL', 'ETIMEDOUT'),
        words: fc.constantFrom('Closing', 'Try again later', 'Rejected', ''),
      })
      .map(({ responseCode, command, code, words }) =>
        Object.assign(new Error('smtp'), {
          responseCode,
          command,
          code,
          response: `${responseCode} ${words}`,
        }),
      );
    fc.assert(
      fc.property(replies, fc.boolean(), (error, bodySent) => {
        const classified = classifySmtpError(error, { ...started, bodySent });
        expect(classified.origin).toBe('transaction');
        const decision = decideOutcome(
          {
            delivered: false,
            failureClass: classified.class,
            origin: classified.origin,
            attempted: [0],
            refused: [],
          },
          {
            attempts: 2,
            on_ambiguous: 'retry',
            recipients: { accepted: [], rejected: [] },
            recipientTotal: 1,
          },
          SETTINGS,
          () => 0,
        );
        expect(decision.attempts).toBe(3);
        expect(decision.fleet).toBeUndefined();
      }),
    );
  });

  describe('the message’s own stream failing after 354 (an attachment that cannot be read: ESTREAM at API)', () => {
    const streamError = (error: Error) => Object.assign(error, { code: 'ESTREAM', command: 'API' });

    it('counts one attempt, transient when the read failed, and the message goes dead at the limit', () => {
      const error = streamError(new Error('socket hang up'));
      const classified = classifySmtpError(error, started);
      expect(classified).toMatchObject({ origin: 'transaction', class: 'transient', code: 'ESTREAM' });
      expect(classified.reason).not.toMatch(/before the message was sent/);
      const last = decideOutcome(
        {
          delivered: false,
          failureClass: classified.class,
          origin: classified.origin,
          attempted: [0],
          refused: [],
        },
        {
          attempts: SETTINGS.maxAttempts - 1,
          on_ambiguous: 'retry',
          recipients: { accepted: [], rejected: [] },
          recipientTotal: 1,
        },
        SETTINGS,
        () => 0,
      );
      expect(last).toMatchObject({ to: 'dead', attempts: SETTINGS.maxAttempts });
    });

    it('is permanent when the store says the attachment is gone (AttachmentMissingError)', () => {
      const error = streamError(new AttachmentMissingError('messages/t/m/0'));
      expect(classifySmtpError(error, started)).toMatchObject({ origin: 'transaction', class: 'permanent' });
    });
  });

  it('a refusal by our own client before anything was sent (API, no reply) stays local', () => {
    const destroyed = Object.assign(new Error('Connection already closed'), {
      code: 'ECONNECTION',
      command: 'API',
    });
    expect(classifySmtpError(destroyed, started).origin).toBe('local');
    const envelope = Object.assign(new Error('No recipients defined'), { code: 'EENVELOPE', command: 'API' });
    expect(classifySmtpError(envelope, started).origin).toBe('local');
  });
});

/**
 * DESIGN §2 (an attempt is a transaction the relay saw) and §5 (an outage is not the message's
 * fault), for our own storage: the sender asks the bucket for every file before MAIL FROM (decision
 * 0171). Whatever the store throws, the message loses no attempt and is never `dead`; it ends
 * (`failed`, or `sent` when earlier attempts were accepted) only when the store says the file is gone.
 */
describe('an attachment the store could not give before MAIL FROM', () => {
  const storeErrors = fc.oneof(
    fc.anything(),
    fc.constantFrom(
      Object.assign(new Error('Service Unavailable'), {
        name: 'ServiceUnavailable',
        $metadata: { httpStatusCode: 503 },
      }),
      Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } }),
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', syscall: 'connect' }),
      Object.assign(new Error('boom'), { class: 'config' }),
    ),
  );

  it('never counts an attempt, never holds the fleet, is never dead, and retries unless the file is gone', () => {
    fc.assert(
      fc.property(cases, storeErrors, fc.boolean(), ([record, result, draw], thrown, gone) => {
        const error = gone ? new AttachmentMissingError('messages/t/m/0') : thrown;
        const failure = classifyAttachmentRead(error);
        expect(failure.origin).toBe('local');
        expect(failure.class).toBe(gone ? 'permanent' : 'transient');
        const decision = decideOutcome(
          { ...result, failureClass: failure.class, origin: failure.origin, refused: [] },
          record,
          SETTINGS,
          () => draw,
        );
        expect(decision.attempts).toBe(record.attempts);
        expect(decision.fleet).toBeUndefined();
        expect(decision.to).toBe(
          gone ? (record.recipients.accepted.length > 0 ? 'sent' : 'failed') : 'retrying',
        );
      }),
    );
  });
});
