import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffCeilingSeconds } from '../../lambdas/core/backoff.js';
import { classifySmtpError, type SmtpFailureContext } from '../../lambdas/core/classifySmtpError.js';
import { isTerminal, type MessageStatus } from '../../lambdas/core/messageStatus.js';
import {
  pendingPositions,
  progressAfterManualRetry,
  type RecipientProgress,
  type RecipientRefusal,
  screenRecipients,
} from '../../lambdas/core/recipients.js';
import {
  type AttemptResult,
  admitCopy,
  decideOutcome,
  freshAttemptLimit,
  type OutcomeRecord,
} from '../../lambdas/core/sendDecision.js';
import { fateOf } from '../support/recipientFates.js';

/**
 * The promise's per-recipient rules, written from DESIGN §2, §5, §12 and §15 alone and checked over
 * generated sequences of SMTP exchanges: any number of attempts, through any relay, each recipient
 * with its own reply at RCPT TO, the exchange ending anywhere (an outage before MAIL FROM, a reply
 * to MAIL FROM, DATA or the final dot, a throttle, a silence after the dot), the suppression list
 * changing between attempts, and an operator's manual retry. Each exchange is given to the core as
 * the sender does: the failure classified at the edge (`classifySmtpError`, nodemailer's shapes),
 * the refusals at RCPT TO one by one, then `decideOutcome`.
 *
 * The rules, in DESIGN's words:
 * - "A recipient the relay accepted is never sent the message again" (§5), "whichever relay" (§15);
 * - "one deferred with a 4xx at RCPT stays pending and is retried; one rejected with a 5xx is
 *   recorded and not retried" (§5) — a 5xx to DATA or the final dot is the relay's permanent refusal
 *   of the message for every recipient it had taken at RCPT TO (§2 `failed`: "5xx for every recipient");
 * - "`sent` when no recipient is pending and at least one was accepted, `failed` when all were
 *   rejected" (§5);
 * - `attempts` counts the transactions in which the relay saw MAIL FROM (§2); a failure before it is
 *   the relay's and counts none; a throttling reply counts none (§5 "Rate");
 * - ambiguous under `hold` is `unknown`, and nothing more is sent, through any relay (§5, §15);
 * - the backoff is `random(0, min(cap, base · 2^attempts))` on the message's attempts (§5);
 * - `dead` after POSTDATE_MAX_ATTEMPTS attempts (§5);
 * - suppressed recipients are left out of the envelope; all suppressed ends `suppressed` with no SMTP
 *   transaction (§12);
 * - a manual retry makes every recipient not yet accepted pending again (§3).
 */

const SETTINGS = { maxAttempts: 4, retryBaseSeconds: 30, retryCapSeconds: 3600, relayWaitSeconds: 30 };
const RELAYS = ['primary', 'secondary', 'tertiary'] as const;

/** A recipient's own reply to RCPT TO. */
type RcptReply = 'ok' | 'defer' | 'reject' | 'bounce' | 'throttle';

/** How the exchange ended once at least one recipient was taken at RCPT TO. */
type Ending =
  | 'dot-250'
  | 'dot-451'
  | 'dot-554'
  | 'data-451'
  | 'data-554'
  | 'dot-throttle'
  | 'silent-after-dot'
  | 'break-before-dot';

type Exchange =
  | { readonly kind: 'outage'; readonly how: 'refused' | 'greeting-421' | 'auth'; readonly relay: number }
  | {
      readonly kind: 'mail';
      readonly reply: 'defer' | 'close' | 'throttle' | 'reject';
      readonly relay: number;
    }
  | {
      readonly kind: 'rcpt';
      readonly replies: readonly RcptReply[];
      readonly ending: Ending;
      readonly relay: number;
    };

type Step =
  | { readonly kind: 'send'; readonly exchange: Exchange; readonly suppressedNow: readonly number[] }
  | { readonly kind: 'manual-retry' };

const relayIndex = fc.nat(RELAYS.length - 1);
const exchanges: fc.Arbitrary<Exchange> = fc.oneof(
  fc.record({
    kind: fc.constant('outage' as const),
    how: fc.constantFrom('refused' as const, 'greeting-421' as const, 'auth' as const),
    relay: relayIndex,
  }),
  fc.record({
    kind: fc.constant('mail' as const),
    reply: fc.constantFrom('defer' as const, 'close' as const, 'throttle' as const, 'reject' as const),
    relay: relayIndex,
  }),
  fc.record({
    kind: fc.constant('rcpt' as const),
    replies: fc.array(fc.constantFrom<RcptReply>('ok', 'ok', 'defer', 'reject', 'bounce', 'throttle'), {
      minLength: 5,
      maxLength: 5,
    }),
    ending: fc.constantFrom<Ending>(
      'dot-250',
      'dot-250',
      'dot-451',
      'dot-554',
      'data-451',
      'data-554',
      'dot-throttle',
      'silent-after-dot',
      'break-before-dot',
    ),
    relay: relayIndex,
  }),
);
const steps: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('send' as const),
      exchange: exchanges,
      suppressedNow: fc.subarray([0, 1, 2, 3, 4], { maxLength: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'manual-retry' as const }) },
);

const scenarios = fc.record({
  total: fc.integer({ min: 1, max: 5 }),
  hold: fc.boolean(),
  steps: fc.array(steps, { minLength: 1, maxLength: 10 }),
  draw: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
});

/** nodemailer's error for a reply (the shapes of docs/smtp-classification.md). */
const reply = (responseCode: number, response: string, command: string, code = 'EENVELOPE') => ({
  code,
  responseCode,
  command,
  response,
});

const THROTTLE_TEXT = '454 Throttling failure: Maximum sending rate exceeded.';

function rcptError(answer: Exclude<RcptReply, 'ok'>, recipient: string) {
  const text = {
    defer: '450 4.2.1 Mailbox busy, try again later',
    reject: '550 5.7.1 Recipient refused by policy',
    bounce: '550 5.1.1 User unknown',
    throttle: THROTTLE_TEXT,
  }[answer];
  return { ...reply(Number(text.slice(0, 3)), text, 'RCPT TO'), recipient };
}

/** What one exchange is, as the sender hands it to the decision: classified at the edge. */
interface Played {
  readonly result: AttemptResult;
  /** The relay saw MAIL FROM. */
  readonly mailFromSeen: boolean;
  /** What the reply the exchange ended with says, in DESIGN's words, read from the scenario itself. */
  readonly ended: 'outage' | 'throttle' | 'transient' | 'permanent' | 'ambiguous' | 'delivered';
  /** Each envelope position's own reply at RCPT TO, when the exchange got that far. */
  readonly rcpt: ReadonlyMap<number, RcptReply>;
}

function play(exchange: Exchange, envelope: readonly number[]): Played {
  const attempt = (
    delivered: boolean,
    error: unknown,
    context: SmtpFailureContext,
    refused: readonly RecipientRefusal[],
  ): AttemptResult => {
    if (delivered) return { delivered, attempted: envelope, refused };
    const classified = classifySmtpError(error, context);
    return {
      delivered,
      failureClass: classified.class,
      origin: classified.origin,
      throttle: classified.throttle,
      attempted: envelope,
      refused,
    };
  };
  const none = new Map<number, RcptReply>();
  if (exchange.kind === 'outage') {
    const error = {
      refused: { code: 'ECONNECTION', command: 'CONN', syscall: 'connect' },
      'greeting-421': reply(421, '421 4.3.2 Service not available, closing channel', 'CONN', 'EPROTOCOL'),
      auth: reply(535, '535 5.7.8 Authentication credentials invalid', 'AUTH PLAIN', 'EAUTH'),
    }[exchange.how];
    return {
      result: attempt(false, error, { beforeTransaction: true }, []),
      mailFromSeen: false,
      ended: 'outage',
      rcpt: none,
    };
  }
  const inTransaction = { transactionStarted: true, bodySent: false };
  if (exchange.kind === 'mail') {
    const error = {
      defer: reply(451, '451 4.3.0 Temporary local problem', 'MAIL FROM'),
      close: reply(421, '421 4.4.2 Connection dropped', 'MAIL FROM'),
      throttle: reply(454, THROTTLE_TEXT, 'MAIL FROM'),
      reject: reply(552, '552 5.3.4 Message size exceeds fixed limit', 'MAIL FROM'),
    }[exchange.reply];
    const ended = (
      { defer: 'transient', close: 'transient', throttle: 'throttle', reject: 'permanent' } as const
    )[exchange.reply];
    return { result: attempt(false, error, inTransaction, []), mailFromSeen: true, ended, rcpt: none };
  }
  const rcpt = new Map(
    envelope.map((position, index) => [position, exchange.replies[index % exchange.replies.length] ?? 'ok']),
  );
  const rejectedErrors = [...rcpt].flatMap(([position, answer]) =>
    answer === 'ok' ? [] : [rcptError(answer, `r${position}@example.com`)],
  );
  // Each refusal at RCPT TO, one by one, as the mailer adapter reads it (NodemailerMailer refusalsOf).
  const refused: RecipientRefusal[] = rejectedErrors.map((error) => {
    const classified = classifySmtpError(error);
    return {
      position: Number(error.recipient.slice(1, error.recipient.indexOf('@'))),
      permanent: classified.class === 'permanent',
      throttle: classified.throttle,
    };
  });
  if (![...rcpt.values()].includes('ok')) {
    // nodemailer: "Can't send mail - all recipients were rejected", with a deferral's reply if any.
    const deferred = rejectedErrors.find((error) => error.responseCode < 500);
    const last = rejectedErrors[rejectedErrors.length - 1];
    const shown = deferred ?? last;
    const error = { ...reply(shown?.responseCode ?? 550, shown?.response ?? '', 'RCPT TO'), rejectedErrors };
    // The replies decide together, in any order (decision 0323): a recipient deferred is the message's
    // own transient failure; else a throttle is the fleet's; with only 5xx, permanent.
    const answers = [...rcpt.values()];
    const ended = answers.includes('defer')
      ? 'transient'
      : answers.includes('throttle')
        ? 'throttle'
        : 'permanent';
    return { result: attempt(false, error, inTransaction, refused), mailFromSeen: true, ended, rcpt };
  }
  const afterDot = { transactionStarted: true, bodySent: true };
  const ending = {
    'dot-250': undefined,
    'dot-451': [reply(451, '451 4.3.0 Queue file write error', 'DATA', 'EMESSAGE'), afterDot],
    'dot-554': [reply(554, '554 5.6.0 Message content rejected', 'DATA', 'EMESSAGE'), afterDot],
    'data-451': [reply(451, '451 4.3.0 Try again later', 'DATA'), inTransaction],
    'data-554': [reply(554, '554 5.3.0 Transaction failed', 'DATA'), inTransaction],
    'dot-throttle': [reply(454, THROTTLE_TEXT, 'DATA', 'EMESSAGE'), afterDot],
    'silent-after-dot': [{ code: 'ECONNECTION', command: 'CONN' }, afterDot],
    'break-before-dot': [{ code: 'ECONNECTION', command: 'CONN' }, inTransaction],
  }[exchange.ending] as [unknown, SmtpFailureContext] | undefined;
  const result =
    ending === undefined ? attempt(true, null, {}, refused) : attempt(false, ending[0], ending[1], refused);
  const ended = (
    {
      'dot-250': 'delivered',
      'dot-451': 'transient',
      'dot-554': 'permanent',
      'data-451': 'transient',
      'data-554': 'permanent',
      'dot-throttle': 'throttle',
      'silent-after-dot': 'ambiguous',
      'break-before-dot': 'transient',
    } as const
  )[exchange.ending];
  return { result, mailFromSeen: true, ended, rcpt };
}

/** What DESIGN §5 says becomes of one recipient of the envelope, by its reply at RCPT TO and the end. */
function expectedOf(exchange: Exchange, answer: RcptReply | undefined): 'accepted' | 'rejected' | 'pending' {
  if (exchange.kind === 'outage') return 'pending';
  if (exchange.kind === 'mail') return exchange.reply === 'reject' ? 'rejected' : 'pending';
  if (answer === 'reject' || answer === 'bounce') return 'rejected';
  if (answer !== 'ok') return 'pending';
  if (exchange.ending === 'dot-250') return 'accepted';
  if (exchange.ending === 'dot-554' || exchange.ending === 'data-554') return 'rejected';
  return 'pending';
}

describe('the promise, recipient by recipient, over any sequence of exchanges and relays (DESIGN §2, §5, §12, §15)', () => {
  it('each recipient settles as its own replies say; sent, failed, unknown and dead exactly as DESIGN says; attempts only where MAIL FROM was seen', () => {
    fc.assert(
      fc.property(scenarios, ({ total, hold, steps: plan, draw }) => {
        let status: MessageStatus = 'scheduled';
        let progress: RecipientProgress = { accepted: [], rejected: [] };
        let attempts = 0;
        let attemptLimit: number | undefined;
        const everAccepted = new Set<number>();
        for (const step of plan) {
          if (step.kind === 'manual-retry') {
            if (status !== 'failed' && status !== 'dead' && status !== 'unknown') continue;
            progress = progressAfterManualRetry(progress);
            attemptLimit = freshAttemptLimit(attempts, SETTINGS.maxAttempts);
            status = 'retrying';
            continue;
          }
          // A terminal message takes no copy of its rev, whichever relay would carry it (§2, §15).
          const admission = admitCopy(
            { status, rev: 1, attempts },
            { rev: 1, sqsMessageId: 'copy', fromDeadLetters: false },
            new Date('2026-12-01T09:00:00Z'),
          );
          expect(admission.kind === 'proceed').toBe(!isTerminal(status));
          if (admission.kind !== 'proceed') continue;

          const screening = screenRecipients(total, progress, step.suppressedNow);
          if (screening.kind === 'settle') {
            // No SMTP transaction: `suppressed` when nobody was ever accepted or rejected (§12).
            const untouched = progress.accepted.length === 0 && progress.rejected.length === 0;
            expect(screening.to === 'suppressed').toBe(untouched);
            expect(pendingPositions(total, screening.progress)).toEqual([]);
            progress = screening.progress;
            status = screening.to;
            continue;
          }
          const envelope = screening.envelope;
          for (const position of envelope) {
            // Never again to one the relay accepted, nor to one rejected or suppressed (§5, §12, §15).
            expect(everAccepted.has(position)).toBe(false);
            expect(fateOf(progress, position)).toBe('pending');
            expect(step.suppressedNow).not.toContain(position);
          }
          const exchange = step.exchange;
          const played = play(exchange, envelope);
          const record: OutcomeRecord = {
            attempts,
            ...(attemptLimit === undefined ? {} : { attempt_limit: attemptLimit }),
            on_ambiguous: hold ? 'hold' : 'retry',
            recipients: screening.progress,
            recipientTotal: total,
          };
          const decision = decideOutcome(played.result, record, SETTINGS, () => draw);
          const label = `${RELAYS[exchange.relay]}: ${JSON.stringify(exchange)} on envelope ${JSON.stringify(envelope)}`;

          const throttled = played.ended === 'throttle';
          const ambiguous = played.ended === 'ambiguous';
          // Each recipient of the envelope, by its own reply and the exchange's end (§5).
          // A throttling reply takes nobody (§5 "Rate"); a 5xx one recipient had at RCPT TO before it
          // stands: "one rejected with a 5xx is recorded and not retried" (§5; decision 0315).
          if (throttled)
            for (const position of envelope) {
              const own = played.rcpt.get(position);
              expect(fateOf(decision.recipients, position), `${label}: recipient ${position} (${own})`).toBe(
                own === 'reject' || own === 'bounce' ? 'rejected' : 'pending',
              );
            }
          if (!throttled) {
            for (const position of envelope) {
              expect(
                fateOf(decision.recipients, position),
                `${label}: recipient ${position} (${played.rcpt.get(position) ?? 'no RCPT'})`,
              ).toBe(expectedOf(exchange, played.rcpt.get(position)));
            }
          }
          // Whoever was settled before stays as it was.
          for (const position of screening.progress.accepted)
            expect(decision.recipients.accepted).toContain(position);
          for (const position of screening.progress.rejected)
            expect(decision.recipients.rejected).toContain(position);

          // attempts: +1 exactly when the relay saw MAIL FROM and the reply was not a throttle (§2, §5).
          const counted = played.mailFromSeen && !throttled;
          expect(decision.attempts, label).toBe(attempts + (counted ? 1 : 0));

          const pending = pendingPositions(total, decision.recipients);
          const accepted = decision.recipients.accepted.length;
          if (ambiguous && hold) expect(decision.to, label).toBe('unknown');
          else if (pending.length === 0) expect(decision.to, label).toBe(accepted > 0 ? 'sent' : 'failed');
          else {
            // dead after the last allowed attempt, and only then; a recipient throttled at RCPT TO
            // is the fleet's pressure, which counts no attempt against it (§5 "Rate"): DESIGN leaves
            // open whether the message dies while such a recipient waits.
            const spent = counted && attempts + 1 >= (attemptLimit ?? SETTINGS.maxAttempts);
            const throttledWaits = pending.some((position) => played.rcpt.get(position) === 'throttle');
            if (!spent) expect(decision.to, label).toBe('retrying');
            else if (!throttledWaits) expect(decision.to, label).toBe('dead');
            else expect(['dead', 'retrying']).toContain(decision.to);
          }

          // The backoff of a counted transient failure: random(0, min(cap, base · 2^attempts)) (§5).
          const onlyThrottledWait = pending.every((position) => played.rcpt.get(position) === 'throttle');
          if (decision.to === 'retrying' && counted && played.ended === 'transient' && !onlyThrottledWait) {
            const policy = { baseSeconds: SETTINGS.retryBaseSeconds, capSeconds: SETTINGS.retryCapSeconds };
            expect(decision.visibilitySeconds).toBeGreaterThanOrEqual(0);
            expect(decision.visibilitySeconds).toBeLessThanOrEqual(backoffCeilingSeconds(attempts, policy));
          }

          for (const position of decision.recipients.accepted) everAccepted.add(position);
          progress = decision.recipients;
          attempts = decision.attempts;
          status = decision.to;
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('a manual retry (DESIGN §3)', () => {
  it('makes every recipient not yet accepted pending again, keeps the accepted out, and the still suppressed', () => {
    const progresses = fc
      .record({
        total: fc.integer({ min: 1, max: 8 }),
        states: fc.array(fc.constantFrom('accepted', 'rejected', 'suppressed', 'pending'), {
          minLength: 8,
          maxLength: 8,
        }),
        suppressedNow: fc.subarray([0, 1, 2, 3, 4, 5, 6, 7]),
      })
      .map(({ total, states, suppressedNow }) => {
        const of = (state: string) =>
          states.slice(0, total).flatMap((each, position) => (each === state ? [position] : []));
        const progress: RecipientProgress = {
          accepted: of('accepted'),
          rejected: of('rejected'),
          suppressed: of('suppressed'),
        };
        return { total, progress, suppressedNow };
      });
    fc.assert(
      fc.property(progresses, ({ total, progress, suppressedNow }) => {
        const retried = progressAfterManualRetry(progress);
        expect(retried.accepted).toEqual(progress.accepted);
        const notAccepted = pendingPositions(total, { accepted: progress.accepted, rejected: [] });
        expect(pendingPositions(total, retried)).toEqual(notAccepted);
        const screening = screenRecipients(total, retried, suppressedNow);
        const envelope = screening.kind === 'send' ? screening.envelope : [];
        expect(envelope).toEqual(notAccepted.filter((position) => !suppressedNow.includes(position)));
      }),
    );
  });
});
