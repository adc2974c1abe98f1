import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  attemptsExhausted,
  bodyFault,
  claimTerms,
  decideOutcome,
  interruptedAttemptBecomes,
  leaseWaitSeconds,
  retryAtOf,
} from '../../lambdas/core/sendDecision.js';
import {
  attemptBudgetMs,
  hasTimeForAttempt,
  OUTCOME_WRITE_RESERVE_MS,
  replyEndsBy,
} from '../../lambdas/core/sendTiming.js';

/** The smaller decisions around a send (DESIGN §2, §5), as specifications. */

const NOW = new Date('2026-12-01T09:00:00.000Z');
const TIMING = { smtpTimeoutSeconds: 20, smtpReplyTimeoutSeconds: 120 };

describe('waiting for a lease', () => {
  it('brings the copy back just after the lease ends, never sooner than a second from now', () => {
    fc.assert(
      fc.property(fc.integer({ min: -600_000, max: 600_000 }), (offset) => {
        const seconds = leaseWaitSeconds(new Date(NOW.getTime() + offset).toISOString(), NOW);
        expect(seconds).toBeGreaterThanOrEqual(1);
        expect(NOW.getTime() + seconds * 1000).toBeGreaterThan(NOW.getTime() + offset);
        if (offset > 0) expect(seconds).toBe(Math.ceil(offset / 1000) + 1);
      }),
    );
    expect(leaseWaitSeconds(undefined, NOW)).toBe(1);
    expect(leaseWaitSeconds('not a time', NOW)).toBe(1);
  });
});

describe('an attempt interrupted by a dead sender (a lease found expired)', () => {
  const SETTINGS = { maxAttempts: 8, retryBaseSeconds: 30, retryCapSeconds: 3600 };
  const interrupted = (attempts: number, onAmbiguous: 'retry' | 'hold', attemptLimit?: number) => ({
    attempts,
    on_ambiguous: onAmbiguous,
    ...(attemptLimit === undefined ? {} : { attempt_limit: attemptLimit }),
  });

  it('is ambiguous: unknown under hold, retrying under retry while attempts are left', () => {
    expect(interruptedAttemptBecomes(interrupted(0, 'hold'), SETTINGS)).toBe('unknown');
    expect(interruptedAttemptBecomes(interrupted(7, 'hold'), SETTINGS)).toBe('unknown');
    expect(interruptedAttemptBecomes(interrupted(0, 'retry'), SETTINGS)).toBe('retrying');
    expect(interruptedAttemptBecomes(interrupted(6, 'retry'), SETTINGS)).toBe('retrying');
  });

  it('makes the message dead, with no send, when it was the last allowed attempt (DESIGN §5)', () => {
    // POSTDATE_MAX_ATTEMPTS 8: the interrupted attempt is the 8th.
    expect(interruptedAttemptBecomes(interrupted(7, 'retry'), SETTINGS)).toBe('dead');
    // A redriven message's own limit counts, not the setting.
    expect(interruptedAttemptBecomes(interrupted(7, 'retry', 15), SETTINGS)).toBe('retrying');
    expect(interruptedAttemptBecomes(interrupted(14, 'retry', 15), SETTINGS)).toBe('dead');
  });

  it('ends the message as a live ambiguous failure of the same attempt would (one rule for both)', () => {
    fc.assert(
      fc.property(
        fc.nat(30),
        fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }),
        fc.integer({ min: 1, max: 30 }),
        fc.constantFrom('retry' as const, 'hold' as const),
        fc.integer({ min: 1, max: 4 }),
        (attempts, attemptLimit, maxAttempts, onAmbiguous, recipientTotal) => {
          const record = interrupted(attempts, onAmbiguous, attemptLimit);
          const settings = { ...SETTINGS, maxAttempts };
          const outcome = decideOutcome(
            {
              delivered: false,
              failureClass: 'ambiguous',
              origin: 'transaction',
              attempted: [...Array(recipientTotal).keys()],
              refused: [],
            },
            { ...record, recipients: { accepted: [], rejected: [] }, recipientTotal },
            settings,
            () => 0.5,
          );
          const becomes = interruptedAttemptBecomes(record, settings);
          expect(outcome.to).toBe(becomes);
          expect(becomes === 'dead').toBe(
            onAmbiguous === 'retry' && attemptsExhausted(attempts + 1, record, maxAttempts),
          );
        },
      ),
    );
  });

  it("counts the limit as reached at exactly the limit, the message's own (a redrive's) before the setting", () => {
    fc.assert(
      fc.property(
        fc.nat(50),
        fc.option(fc.integer({ min: 1, max: 50 }), { nil: undefined }),
        fc.integer({ min: 1, max: 50 }),
        (attempts, attemptLimit, maxAttempts) => {
          expect(attemptsExhausted(attempts, { attempt_limit: attemptLimit }, maxAttempts)).toBe(
            attempts >= (attemptLimit ?? maxAttempts),
          );
        },
      ),
    );
  });
});

describe('the claim', () => {
  it('leases for POSTDATE_LEASE_SECONDS and gives a redriven message a fresh set of attempts', () => {
    fc.assert(
      fc.property(
        fc.nat(50),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 3600 }),
        fc.boolean(),
        (attempts, maxAttempts, leaseSeconds, redrive) => {
          const terms = claimTerms({ attempts }, redrive, { leaseSeconds, maxAttempts }, NOW);
          expect(terms.leaseUntil.getTime() - NOW.getTime()).toBe(leaseSeconds * 1000);
          expect(terms.attemptLimit).toBe(redrive ? attempts + maxAttempts : undefined);
        },
      ),
    );
  });

  it('is made only with time left for one whole attempt and its outcome write', () => {
    const budget = attemptBudgetMs(TIMING);
    expect(hasTimeForAttempt(budget, TIMING)).toBe(true);
    expect(hasTimeForAttempt(budget - 1, TIMING)).toBe(false);
  });

  it('leaves the outcome-write reserve after the longest wait for the reply', () => {
    expect(replyEndsBy(1_000_000, 200_000)).toBe(1_200_000 - OUTCOME_WRITE_RESERVE_MS);
  });
});

describe('the body of a claimed message', () => {
  const ANYONE = ['*'];
  const body = (fingerprint: string, from = 'Ops <ops@example.com>') => ({ fingerprint, from });

  it('is sent only when it is there and is this request’s', () => {
    expect(bodyFault('f1', undefined, ANYONE)).toBe('missing');
    expect(bodyFault('f1', body('f2'), ANYONE)).toBe('foreign');
    expect(bodyFault('f1', body('f1'), ANYONE)).toBeUndefined();
    // A state record written before fingerprints were kept trusts its body.
    expect(bodyFault(undefined, body('f2'), ANYONE)).toBeUndefined();
  });

  // DESIGN §3, §8: POSTDATE_ALLOWED_FROM binds every message the stack sends (decision 0165).
  const label = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/);
  const address = fc.record({ local: label, domain: fc.tuple(label, label).map(([a, b]) => `${a}.${b}`) });
  const asWritten = fc.constantFrom(
    (a: string) => a,
    (a: string) => a.toUpperCase(),
    (a: string) => `Ops Team <${a}>`,
    (a: string) => `"Ops, Team" <${a}>`,
  );

  it('is sent from any address of a domain the stack allows, however the from is written', () => {
    fc.assert(
      fc.property(address, asWritten, ({ local, domain }, write) => {
        const from = write(`${local}@${domain}`);
        expect(bodyFault('f', body('f', from), [`*@${domain}`])).toBeUndefined();
        expect(bodyFault('f', body('f', from), [`${local}@${domain}`])).toBeUndefined();
        expect(bodyFault('f', body('f', from), ANYONE)).toBeUndefined();
      }),
    );
  });

  it('is never sent from an address the stack does not allow, or from one that does not parse', () => {
    fc.assert(
      fc.property(address, label, asWritten, ({ local, domain }, other, write) => {
        const from = write(`${local}@${domain}`);
        fc.pre(other !== domain);
        expect(bodyFault('f', body('f', from), [`*@${other}`, `${local}@x${domain}`])).toBe(
          'sender-not-allowed',
        );
        expect(bodyFault('f', body('f', `${local}@`), ANYONE)).toBe('sender-not-allowed');
      }),
    );
  });

  it('names a missing or foreign body before its sender', () => {
    expect(bodyFault('f1', undefined, [])).toBe('missing');
    expect(bodyFault('f1', body('f2', 'ceo@other.test'), ['*@example.com'])).toBe('foreign');
  });
});

describe('when a retrying message is due', () => {
  it('is the end of its backoff, and only a retrying message has one', () => {
    const settings = { maxAttempts: 5, retryBaseSeconds: 30, retryCapSeconds: 3600 };
    const record = {
      attempts: 0,
      on_ambiguous: 'retry' as const,
      recipients: { accepted: [], rejected: [] },
      recipientTotal: 1,
    };
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.boolean(),
        (draw, delivered) => {
          const decision = decideOutcome(
            { delivered, failureClass: 'transient', origin: 'transaction', attempted: [0], refused: [] },
            record,
            settings,
            () => draw,
          );
          const due = retryAtOf(decision, NOW);
          if (decision.to !== 'retrying') {
            expect(due).toBeUndefined();
            return;
          }
          expect(due?.getTime()).toBe(NOW.getTime() + (decision.visibilitySeconds ?? 0) * 1000);
        },
      ),
    );
  });
});
