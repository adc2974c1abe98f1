import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { claimTerms, decideOutcome, freshAttemptLimit } from '../../lambdas/core/sendDecision.js';

/**
 * DESIGN §3 and §5: a message leaves `dead` (or `failed`, `unknown`) only by an operator's hand — a
 * DLQ redrive or a manual retry — and either way "after POSTDATE_MAX_ATTEMPTS attempts the message is
 * `dead`": both exits grant the same fresh budget, while `attempts` keeps counting (§2, history).
 */
const SETTINGS = { maxAttempts: 3, retryBaseSeconds: 30, retryCapSeconds: 3600, leaseSeconds: 120 };
const NOW = new Date('2026-12-01T09:00:00.000Z');
const transient = { delivered: false, failureClass: 'transient' as const, attempted: [0], refused: [] };

describe('the attempt limit an operator grants', () => {
  it('lets the message make POSTDATE_MAX_ATTEMPTS more attempts before it is dead, whatever it had before', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1, max: 1000 }), (attempts, max) => {
        const limit = freshAttemptLimit(attempts, max);
        const settings = { ...SETTINGS, maxAttempts: max };
        let record = {
          attempts,
          attempt_limit: limit,
          on_ambiguous: 'retry' as const,
          recipients: { accepted: [], rejected: [] },
          recipientTotal: 1,
        };
        const outcomes: string[] = [];
        for (let n = 0; n < max; n++) {
          const decision = decideOutcome(transient, record, settings, () => 0.5);
          outcomes.push(decision.to);
          record = { ...record, attempts: decision.attempts };
        }
        expect(outcomes.slice(0, -1).every((to) => to === 'retrying')).toBe(true);
        expect(outcomes.at(-1)).toBe('dead');
        // `attempts` is history: it was never reset.
        expect(record.attempts).toBe(attempts + max);
      }),
    );
  });

  it('is the one a DLQ redrive claims with', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1, max: 1000 }), (attempts, max) => {
        const terms = claimTerms({ attempts }, true, { ...SETTINGS, maxAttempts: max }, NOW);
        expect(terms.attemptLimit).toBe(freshAttemptLimit(attempts, max));
      }),
    );
  });
});
