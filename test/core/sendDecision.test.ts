import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deadLetterPayload } from '../../lambdas/core/dispatchPayload.js';
import { isTerminal, MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import type { ErrorClass } from '../../lambdas/core/postdateError.js';
import { pendingPositions, progressAfter } from '../../lambdas/core/recipients.js';
import {
  admitCopy,
  claimTerms,
  decideOutcome,
  dueSince,
  givenBackStatus,
  type OutcomeRecord,
  redrivesDeath,
  retryWithinDeadline,
  sendableAt,
} from '../../lambdas/core/sendDecision.js';
import { attemptBudgetMs, sendTimingProblems } from '../../lambdas/core/sendTiming.js';
import { checkTransition } from '../../lambdas/core/stateMachine.js';

/** The two decisions that carry the promise (DESIGN §2, §5), as specifications. */

const QUIET = { start: '22:00', end: '07:00' };
const SETTINGS = { maxAttempts: 3, retryBaseSeconds: 30, retryCapSeconds: 3600 };
const NOW = new Date('2026-12-01T09:00:00.000Z');
const copy = (overrides: Partial<Parameters<typeof admitCopy>[1]> = {}) => ({
  rev: 1,
  sqsMessageId: 'm-1',
  fromDeadLetters: false,
  ...overrides,
});

describe('admitting a queue copy', () => {
  it('drops a copy of a dead message that did not come out of the DLQ (dead means dead)', () => {
    expect(admitCopy({ status: 'dead', rev: 1 }, copy(), NOW)).toMatchObject({ kind: 'drop' });
    expect(admitCopy({ status: 'dead', rev: 1 }, copy({ fromDeadLetters: true }), NOW)).toEqual({
      kind: 'proceed',
      takeover: false,
      redrive: true,
    });
    expect(admitCopy({ status: 'dead', rev: 1, dead_copy: 'm-1' }, copy(), NOW)).toEqual({
      kind: 'move-to-dead-letters',
    });
  });

  it('redrives a dead message only with a copy of its current death; the copy that died is moved, whatever it carries', () => {
    const dead = { status: 'dead' as const, rev: 1, attempts: 6, death: 6, dead_copy: 'died' };
    expect(admitCopy(dead, copy({ fromDeadLetters: true, death: 6 }), NOW)).toMatchObject({ redrive: true });
    expect(admitCopy(dead, copy({ fromDeadLetters: true, death: 3 }), NOW)).toMatchObject({ kind: 'drop' });
    // A copy parked before deaths were named does not revive a death named since.
    expect(admitCopy(dead, copy({ fromDeadLetters: true }), NOW)).toMatchObject({ kind: 'drop' });
    expect(admitCopy(dead, copy({ sqsMessageId: 'died', fromDeadLetters: true, death: 3 }), NOW)).toEqual({
      kind: 'move-to-dead-letters',
    });
    // A message that died before deaths were named (no `death`, or one a rollback left behind) is
    // redriven by a copy parked then: the operator's redrive still works.
    const unnamed = { status: 'dead' as const, rev: 1, attempts: 3 };
    expect(admitCopy(unnamed, copy({ fromDeadLetters: true }), NOW)).toMatchObject({ redrive: true });
    expect(admitCopy({ ...unnamed, death: 2 }, copy({ fromDeadLetters: true }), NOW)).toMatchObject({
      redrive: true,
    });
  });

  it('redrives no dead message whose retention ran out: DynamoDB deletes its records, the body maybe first (DESIGN §2)', () => {
    const discarded = { status: 'dead' as const, rev: 1, attempts: 6, death: 6 };
    const expiresAt = Math.floor(NOW.getTime() / 1000);
    const redriven = copy({ fromDeadLetters: true, death: 6 });
    // A discarded message's copy still in the DLQ (a retention shorter than its 14 days) redrives it
    // while its retention runs, and not once it has run out.
    expect(admitCopy({ ...discarded, expires_at: expiresAt + 1 }, redriven, NOW)).toMatchObject({
      redrive: true,
    });
    expect(admitCopy({ ...discarded, expires_at: expiresAt - 1 }, redriven, NOW)).toMatchObject({
      kind: 'drop',
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 400 * 86_400 }), (pastSeconds) => {
        const admission = admitCopy({ ...discarded, expires_at: expiresAt - pastSeconds }, redriven, NOW);
        return admission.kind === 'drop';
      }),
    );
  });

  /**
   * DESIGN §5, "only an operator's redrive sends it again", over a message's whole life: it dies,
   * an operator redrives the copy of that death (which gets a fresh set of attempts, spent before it
   * can die again), it dies again, … Every DLQ copy ever made for one death — the sender's move, the
   * sweeper's renewal or remake, any duplicate of them — redrives that death and no other.
   */
  it('lets each DLQ copy redrive the one death it was made for, across any number of deaths and redrives', () => {
    fc.assert(
      fc.property(
        // POSTDATE_MAX_ATTEMPTS in force at each death (an operator may change it in between).
        fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        (maxAttemptsAtEachDeath, firstDeathNamed) => {
          let attempts = 0;
          const deaths: { attempts: number; death?: number }[] = [];
          for (const [i, maxAttempts] of maxAttemptsAtEachDeath.entries()) {
            // The first set of attempts, or a redrive's fresh set: each spent before the death.
            const terms = claimTerms({ attempts }, i > 0, { leaseSeconds: 60, maxAttempts }, NOW);
            attempts = terms.attemptLimit ?? maxAttempts;
            const named = i > 0 || firstDeathNamed;
            deaths.push(named ? { attempts, death: attempts } : { attempts });
          }
          // What the sender moves to the DLQ for each death (and the sweeper renews or remakes).
          const letters = deaths.map((death) => deadLetterPayload({ id: 'm', rev: 1, ...death }));
          deaths.forEach((death, d) => {
            const record = { status: 'dead' as const, rev: 1, ...death };
            letters.forEach((letter, l) => {
              expect(redrivesDeath({ fromDeadLetters: true, death: letter.death }, record)).toBe(l === d);
            });
            // A copy parked before deaths were named redrives only a death written before too.
            expect(redrivesDeath({ fromDeadLetters: true }, record)).toBe(death.death === undefined);
          });
        },
      ),
    );
  });

  it('redrives nothing but a dead message, and only with a marked copy', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...MESSAGE_STATUSES),
        fc.boolean(),
        fc.option(fc.nat(9), { nil: undefined }),
        fc.nat(9),
        fc.option(fc.nat(9), { nil: undefined }),
        (status, fromDeadLetters, copyDeath, attempts, recordDeath) => {
          const record = { status, attempts, ...(recordDeath === undefined ? {} : { death: recordDeath }) };
          const redrives = redrivesDeath({ fromDeadLetters, death: copyDeath }, record);
          if (!redrives) return;
          expect(status).toBe('dead');
          expect(fromDeadLetters).toBe(true);
          if (copyDeath !== undefined) expect(copyDeath).toBe(attempts);
          else expect(recordDeath).not.toBe(attempts);
          const admission = admitCopy(
            { ...record, rev: 1 },
            copy({ fromDeadLetters, death: copyDeath }),
            NOW,
          );
          expect(admission).toEqual({ kind: 'proceed', takeover: false, redrive: true });
        },
      ),
    );
  });

  it('never lets a copy claim a record of another rev, a live lease, or a status the sender may not leave', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...MESSAGE_STATUSES),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: -60_000, max: 60_000 }),
        fc.boolean(),
        (status, recordRev, copyRev, leaseOffset, fromDeadLetters) => {
          const leaseUntil = new Date(NOW.getTime() + leaseOffset).toISOString();
          const admission = admitCopy(
            { status, rev: recordRev, lease_until: leaseUntil },
            copy({ rev: copyRev, fromDeadLetters }),
            NOW,
          );
          if (admission.kind !== 'proceed') return;
          expect(recordRev).toBe(copyRev);
          expect(['scheduled', 'retrying', 'sending', 'dead']).toContain(status);
          if (status === 'sending') expect(leaseOffset).toBeLessThanOrEqual(0);
          if (status === 'dead') expect(fromDeadLetters).toBe(true);
        },
      ),
    );
  });
});

const record = (overrides: Partial<OutcomeRecord> = {}): OutcomeRecord => ({
  attempts: 0,
  on_ambiguous: 'retry',
  recipients: { accepted: [], rejected: [] },
  recipientTotal: 1,
  ...overrides,
});
const failure = (failureClass: ErrorClass, counted = true) => ({
  delivered: false,
  failureClass,
  origin: counted ? ('transaction' as const) : ('local' as const),
  attempted: [0],
  refused: [],
});

describe('when a copy may be sent', () => {
  const sendAt = '2026-12-01T10:00:00.000Z';
  const later = '2026-12-01T10:05:00.000Z';

  it('is send_at for every status but retrying', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...MESSAGE_STATUSES.filter((status) => status !== 'retrying')),
        (status) => {
          expect(sendableAt({ status, send_at: sendAt, due_at: later }).toISOString()).toBe(sendAt);
        },
      ),
    );
  });

  it('is the retry time its failed attempt chose for a retrying message, never before send_at', () => {
    expect(sendableAt({ status: 'retrying', send_at: sendAt, due_at: later }).toISOString()).toBe(later);
    expect(sendableAt({ status: 'retrying', send_at: later, due_at: sendAt }).toISOString()).toBe(later);
    expect(sendableAt({ status: 'retrying', send_at: sendAt }).toISOString()).toBe(sendAt);
  });

  it('ignores a due_at the sweeper set: its copy is the re-dispatch of an overdue retry', () => {
    expect(
      sendableAt({ status: 'retrying', send_at: sendAt, due_at: later, sweep_due_at: later }).toISOString(),
    ).toBe(sendAt);
  });
});

/**
 * How late a copy handed back unsent already is (decision 0231): since it came due — never since an
 * earlier moment than it really did, so that a backoff, quiet hours or a sweeper's re-dispatch are
 * never counted as mail held back.
 */
describe('since when a copy is due', () => {
  const sendAt = '2026-12-01T10:00:00.000Z';
  const later = '2026-12-01T10:05:00.000Z';
  const stamped = '2026-12-01T11:00:00.000Z';
  const sweptAt = '2026-12-01T10:30:00.000Z';

  it('is send_at for a scheduled message, and the retry time for a retrying one', () => {
    expect(dueSince({ status: 'scheduled', send_at: sendAt, due_at: sendAt })?.toISOString()).toBe(sendAt);
    expect(dueSince({ status: 'retrying', send_at: sendAt, due_at: later })?.toISOString()).toBe(later);
  });

  it('is not known for a dead message an operator redrove: its copy is due since the redrive', () => {
    expect(dueSince({ status: 'dead', send_at: sendAt, due_at: later })).toBeUndefined();
  });

  it('is the end of the quiet hours that held it (the hold moved due_at there, DESIGN §16)', () => {
    const held = { status: 'scheduled' as const, send_at: sendAt, due_at: later, quiet_hours: QUIET };
    expect(dueSince(held)?.toISOString()).toBe(later);
  });

  it('behind a sweeper stamp: send_at for a scheduled message that quiet hours cannot have held', () => {
    const record = { status: 'scheduled' as const, send_at: sendAt, due_at: stamped, sweep_due_at: stamped };
    expect(dueSince({ ...record, swept_at: sweptAt })?.toISOString()).toBe(sendAt);
  });

  it('behind a sweeper stamp that hides the retry time or a hold: no earlier than the stamp was made', () => {
    const stamp = { due_at: stamped, sweep_due_at: stamped, swept_at: sweptAt };
    expect(dueSince({ status: 'retrying', send_at: sendAt, ...stamp })?.toISOString()).toBe(sweptAt);
    expect(
      dueSince({ status: 'scheduled', send_at: sendAt, quiet_hours: QUIET, ...stamp })?.toISOString(),
    ).toBe(sweptAt);
  });
});

describe('the status a claim given back returns to (DESIGN §2: no attempt)', () => {
  it('a scheduled message is scheduled again; a retrying or redriven dead one waits as retrying', () => {
    expect(givenBackStatus('scheduled')).toBe('scheduled');
    expect(givenBackStatus('retrying')).toBe('retrying');
    expect(givenBackStatus('dead')).toBe('retrying');
  });

  it('is always a status the sender may move a claim into, and never one whose copy is gone', () => {
    for (const from of MESSAGE_STATUSES) {
      const to = givenBackStatus(from);
      expect(checkTransition('sending', to, 'sender').allowed).toBe(true);
      expect(isTerminal(to)).toBe(false);
    }
  });
});

describe('what an outcome makes of the message', () => {
  it('counts an attempt only when the relay may have seen the message (DESIGN §2)', () => {
    expect(decideOutcome(failure('transient', false), record(), SETTINGS, () => 0).attempts).toBe(0);
    expect(decideOutcome(failure('transient'), record(), SETTINGS, () => 0).attempts).toBe(1);
  });

  it('makes a message dead after its last allowed SMTP attempt, however many receives it took', () => {
    expect(decideOutcome(failure('transient'), record({ attempts: 2 }), SETTINGS, () => 0).to).toBe('dead');
    expect(decideOutcome(failure('transient', false), record({ attempts: 2 }), SETTINGS, () => 0).to).toBe(
      'retrying',
    );
    expect(
      decideOutcome(failure('transient'), record({ attempts: 4, attempt_limit: 6 }), SETTINGS, () => 0).to,
    ).toBe('retrying');
  });

  it('holds an ambiguous outcome as unknown under hold, and retries it under retry', () => {
    expect(decideOutcome(failure('ambiguous'), record({ on_ambiguous: 'hold' }), SETTINGS, () => 0).to).toBe(
      'unknown',
    );
    expect(decideOutcome(failure('ambiguous'), record(), SETTINGS, () => 0).to).toBe('retrying');
  });

  it('never puts an accepted recipient back in an envelope, and ends sent only with none pending', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.array(
          fc.record({ delivered: fc.boolean(), refusals: fc.array(fc.tuple(fc.nat(5), fc.boolean())) }),
          {
            maxLength: 6,
          },
        ),
        (total, attempts) => {
          let progress = { accepted: [] as number[], rejected: [] as number[] };
          for (const attempt of attempts) {
            const attempted = pendingPositions(total, progress);
            for (const accepted of progress.accepted) expect(attempted).not.toContain(accepted);
            const refused = attempt.refusals
              .filter(([position]) => attempted.includes(position))
              .map(([position, permanent]) => ({ position, permanent }));
            const decision = decideOutcome(
              {
                delivered: attempt.delivered,
                ...(attempt.delivered ? {} : { failureClass: 'transient' as const }),
                origin: 'transaction',
                attempted,
                refused,
              },
              record({ recipients: progress, recipientTotal: total }),
              { ...SETTINGS, maxAttempts: 100 },
              () => 0.5,
            );
            const pending = pendingPositions(total, decision.recipients);
            if (decision.to === 'sent') {
              expect(pending).toEqual([]);
              expect(decision.recipients.accepted.length).toBeGreaterThan(0);
            }
            if (decision.to === 'failed') expect(decision.recipients.accepted).toEqual([]);
            if (decision.to === 'retrying') expect(pending.length).toBeGreaterThan(0);
            for (const accepted of progress.accepted)
              expect(decision.recipients.accepted).toContain(accepted);
            progress = {
              accepted: [...decision.recipients.accepted],
              rejected: [...decision.recipients.rejected],
            };
            if (decision.to !== 'retrying') break;
          }
        },
      ),
    );
  });

  it('rejects every attempted recipient on a permanent refusal of the whole message', () => {
    expect(
      progressAfter(
        { accepted: [0], rejected: [] },
        { attempted: [1, 2], delivered: false, refused: [], allRefused: true },
      ),
    ).toEqual({ accepted: [0], rejected: [1, 2] });
  });
});

describe('the time rule (lease > sender timeout > one whole attempt)', () => {
  it('holds for the defaults and names what breaks it', () => {
    const defaults = {
      leaseSeconds: 300,
      senderTimeoutSeconds: 240,
      smtpTimeoutSeconds: 20,
      smtpReplyTimeoutSeconds: 120,
    };
    expect(sendTimingProblems(defaults)).toEqual([]);
    // 2 × 20 s before the dot, 120 s for the reply, 28 s for one whole SDK call (the outcome write).
    expect(attemptBudgetMs(defaults)).toBe(40_000 + 120_000 + 28_000);
    expect(sendTimingProblems({ ...defaults, senderTimeoutSeconds: 170 })).toHaveLength(1);
    expect(sendTimingProblems({ ...defaults, leaseSeconds: 240 })).toHaveLength(1);
  });
});

// DESIGN §5 "Deadlines": past not_after the message is expired, so a retry's wait never outlasts the
// deadline by more than the second that makes the returning copy find it past (decision 0317).
describe('retryWithinDeadline', () => {
  const NOW = new Date('2026-12-07T05:00:00.000Z');
  const retrying = (visibilitySeconds: number) =>
    ({
      to: 'retrying',
      visibilitySeconds,
      attempts: 1,
      recipients: { accepted: [], rejected: [] },
      joinsHistory: true,
      showsLastError: true,
    }) as const;

  it('ends a wait that would outlast the deadline just past it, and never lengthens one', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 43_200 }),
        // Whole seconds too: a copy back exactly at the deadline would still be sent.
        fc.oneof(
          fc.integer({ min: -3_600_000, max: 50_000_000 }),
          fc.integer({ min: -3600, max: 50_000 }).map((seconds) => seconds * 1000),
        ),
        (wait, deadlineFromNowMs) => {
          const notAfter = new Date(NOW.getTime() + deadlineFromNowMs).toISOString();
          const bounded = retryWithinDeadline(retrying(wait), notAfter, NOW);
          const seconds = bounded.visibilitySeconds ?? Number.NaN;
          expect(seconds).toBeGreaterThanOrEqual(1);
          expect(seconds).toBeLessThanOrEqual(wait);
          const backAt = NOW.getTime() + seconds * 1000;
          // Back after the deadline only when the whole wait would have been: then within 2 s of it.
          if (NOW.getTime() + wait * 1000 > Date.parse(notAfter) + 1000) {
            expect(backAt).toBeGreaterThan(Date.parse(notAfter));
            expect(backAt - Math.max(Date.parse(notAfter), NOW.getTime())).toBeLessThanOrEqual(2000);
          } else {
            expect(seconds).toBe(wait);
          }
        },
      ),
    );
  });

  it('leaves a message without a deadline, and every outcome but retrying, as decided', () => {
    expect(retryWithinDeadline(retrying(600), null, NOW)).toEqual(retrying(600));
    const sent = { ...retrying(600), to: 'sent' as const, visibilitySeconds: undefined };
    expect(retryWithinDeadline(sent, NOW.toISOString(), NOW)).toEqual(sent);
  });
});
