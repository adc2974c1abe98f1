import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deadLetterPayload } from '../../lambdas/core/dispatchPayload.js';
import { isTerminal, isWaitingForOperator, MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import { admitCopy, redrivesDeath } from '../../lambdas/core/sendDecision.js';
import {
  DEAD_LETTER_RENEW_AGE_MS,
  DEAD_LETTER_SETTLE_MS,
  deadLetterCare,
  deadLetterOwed,
  staleDeadLetter,
  waitsInDeadLetters,
} from '../../lambdas/core/staleDeadLetter.js';
import { testSideOf } from '../../lambdas/core/testSide.js';

/**
 * DESIGN §2: a copy whose `rev` is not the record's current one is stale and is dropped; `dead`
 * waits with its copy in the DLQ "until redrive"; §5 "Dead means dead": only that copy sends it
 * again. The sweeper deletes what this rule calls stale without asking anyone, so it must never call
 * stale a copy a redrive could still send.
 */
const status = fc.constantFrom(...MESSAGE_STATUSES);
const rev = fc.integer({ min: 1, max: 5 });
/** A message's attempts, and the name a death was written with (absent: before decision 0149). */
const attempts = fc.integer({ min: 1, max: 4 });
const death = fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined });
const record = fc.record({
  status,
  rev,
  attempts,
  death,
  lease_until: fc.option(fc.constant(new Date(0).toISOString()), { nil: undefined }),
});
const copy = fc.record({ rev, dlq: fc.boolean(), death });
const NOW = new Date('2026-12-04T10:00:00Z');

describe('staleDeadLetter', () => {
  it('never calls stale a copy whose redrive the sender would not drop', () => {
    fc.assert(
      fc.property(copy, record, (letter, current) => {
        if (staleDeadLetter(letter, current, NOW) === undefined) return;
        const admission = admitCopy(
          current,
          { rev: letter.rev, sqsMessageId: 'moved', fromDeadLetters: letter.dlq, death: letter.death },
          NOW,
        );
        expect(admission.kind).toBe('drop');
      }),
    );
  });

  it("calls a dead message's copy stale exactly when its redrive would not send it: a copy of an earlier death (decision 0149), an unmarked one the queue's backstop parked (decision 0167), or one of a discarded message whose retention ran out (decision 0181)", () => {
    // A discard's TTL: an hour before NOW (ran out), or an hour after.
    const discarded = fc.option(fc.constantFrom(-3600, 3600), { nil: undefined });
    fc.assert(
      fc.property(
        rev,
        attempts,
        death,
        fc.boolean(),
        death,
        discarded,
        (at, tried, named, marked, carried, ttl) => {
          const expires_at = ttl === undefined ? undefined : Math.floor(NOW.getTime() / 1000) + ttl;
          const dead = { status: 'dead' as const, rev: at, attempts: tried, death: named, expires_at };
          const letter = { rev: at, dlq: marked, death: carried };
          // A redrive, console or CLI, puts a new SQS message on the send queue: never the record's `dead_copy`.
          const admission = admitCopy(
            dead,
            { rev: at, sqsMessageId: 'moved', fromDeadLetters: marked, death: carried },
            NOW,
          );
          const stale = staleDeadLetter(letter, dead, NOW);
          expect(stale === undefined).toBe(admission.kind === 'proceed');
          if (stale !== undefined)
            expect(stale).toMatch(
              !redrivesDeath({ fromDeadLetters: marked, death: carried }, dead)
                ? marked
                  ? /earlier death/
                  : /backstop/
                : /retention ran out/,
            );
        },
      ),
    );
  });

  it("never calls stale the current copy of a message that waits for an operator or is live (a dead message's: the marked copy naming its death)", () => {
    fc.assert(
      fc.property(rev, status, attempts, (at, current, tried) => {
        const record = { status: current, rev: at, attempts: tried, death: tried };
        const stale = staleDeadLetter({ rev: at, dlq: true, death: tried }, record, NOW);
        expect(stale === undefined).toBe(isWaitingForOperator(current) || !isTerminal(current));
      }),
    );
  });

  it('calls stale every copy of another rev, whatever its message is doing, and one without a record', () => {
    fc.assert(
      fc.property(rev, record, (at, current) => {
        fc.pre(at !== current.rev);
        expect(staleDeadLetter({ rev: at }, current, NOW)).toMatch(new RegExp(`rev ${current.rev}`));
      }),
    );
    expect(staleDeadLetter({ rev: 1 }, null, NOW)).toMatch(/no record/);
  });
});

/**
 * DESIGN §2: `dead` waits for an operator with no end, "its copy sits in the DLQ … until redrive";
 * §5: a DLQ redrive sends it again. The DLQ keeps a copy 14 days, so the sweeper renews a waiting
 * dead message's copy before then and makes one from the record when it has none (decision 0148).
 */
const DAY = 86_400_000;
const tenant = fc.constantFrom('t_live', testSideOf('t_live'));
const careRecord = fc.record({
  status,
  rev,
  attempts,
  death,
  tenant,
  // A discard's TTL, still running or run out at NOW (decision 0185).
  expires_at: fc.option(fc.constantFrom(1_900_000_000, 1_700_000_000), { nil: undefined }),
  due_at: fc.option(fc.constantFrom(new Date(NOW.getTime() - 20 * DAY).toISOString(), NOW.toISOString()), {
    nil: undefined,
  }),
});
/** A live dead message that waits (no TTL), whose copies the sweeper keeps alive. */
const waitingDead = fc.record({
  status: fc.constant('dead' as const),
  rev,
  attempts,
  death,
  tenant: fc.constant('t_live'),
});
const agedCopy = fc.record({
  rev,
  dlq: fc.boolean(),
  death,
  ageMs: fc.integer({ min: 0, max: 14 * DAY }),
});

describe('deadLetterCare', () => {
  it('deletes nothing a redrive would send, unless another copy of that message is kept', () => {
    fc.assert(
      fc.property(agedCopy, fc.option(careRecord, { nil: null }), (letter, current) => {
        if (deadLetterCare(letter, current, false, NOW).kind !== 'delete') return;
        const admission = admitCopy(
          current ?? undefined,
          { rev: letter.rev, sqsMessageId: 'moved', fromDeadLetters: letter.dlq, death: letter.death },
          NOW,
        );
        expect(admission.kind).toBe('drop');
      }),
    );
  });

  it("renews only a copy a redrive would send, and exactly a waiting dead message's copy from the renewal age on, by one that redrives the same death", () => {
    fc.assert(
      fc.property(
        agedCopy,
        fc.oneof(careRecord, waitingDead),
        fc.boolean(),
        (letter, current, keptAlready) => {
          const care = deadLetterCare(letter, current, keptAlready, NOW);
          const redriven = {
            rev: letter.rev,
            sqsMessageId: 'x',
            fromDeadLetters: letter.dlq,
            death: letter.death,
          };
          const sends = admitCopy(current, redriven, NOW).kind === 'proceed';
          const renewable =
            sends && letter.rev === current.rev && waitsInDeadLetters(current) && !keptAlready;
          expect(care.kind === 'renew').toBe(renewable && letter.ageMs >= DEAD_LETTER_RENEW_AGE_MS);
          if (care.kind !== 'renew') return;
          // The fresh copy is made from the record (sweeper/staleDeadLetters.ts).
          const fresh = deadLetterPayload({ ...current, id: 'm' });
          const admission = admitCopy(
            current,
            { rev: fresh.rev, sqsMessageId: 'y', fromDeadLetters: fresh.dlq === true, death: fresh.death },
            NOW,
          );
          expect(admission).toMatchObject({ kind: 'proceed', redrive: true });
        },
      ),
    );
  });

  it("renews a waiting dead message's only copy exactly from the renewal age, and deletes none of it", () => {
    fc.assert(
      fc.property(waitingDead, fc.integer({ min: 0, max: 14 * DAY }), (current, ageMs) => {
        const letter = { ...deadLetterPayload({ ...current, id: 'm' }), dlq: true, ageMs };
        const care = deadLetterCare(letter, current, false, NOW);
        expect(care.kind).toBe(ageMs >= DEAD_LETTER_RENEW_AGE_MS ? 'renew' : 'keep');
      }),
    );
  });

  it('leaves a waiting dead message exactly one of the marked copies of its death, none of an earlier one nor an unmarked one, whatever order a walk meets them in', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ dlq: fc.boolean(), death, ageMs: fc.integer({ min: 0, max: 14 * DAY }) }), {
          minLength: 1,
          maxLength: 6,
        }),
        careRecord,
        (letters, current) => {
          const dead = { ...current, status: 'dead' as const, expires_at: undefined, tenant: 't_live' };
          const ofThisDeath = (letter: { dlq: boolean; death: number | undefined }) =>
            redrivesDeath({ fromDeadLetters: letter.dlq, death: letter.death }, dead);
          let kept = false;
          let survivors = 0;
          for (const letter of letters) {
            const care = deadLetterCare({ ...letter, rev: dead.rev }, dead, kept, NOW);
            if (letter.dlq && care.kind !== 'delete') {
              expect(ofThisDeath(letter)).toBe(true);
              kept = true;
              survivors++;
            }
            // An unmarked copy (the queue's backstop) is not what a redrive sends: it goes (decision 0167).
            if (!letter.dlq) expect(care.kind).toBe('delete');
          }
          expect(survivors).toBe(letters.some(ofThisDeath) ? 1 : 0);
        },
      ),
    );
  });
});

describe('deadLetterOwed', () => {
  it('makes a copy only for a waiting dead message a whole walk found none of, once the sender had time to move its own', () => {
    fc.assert(
      fc.property(careRecord, fc.boolean(), fc.boolean(), (current, complete, copyKept) => {
        const owed = deadLetterOwed(current, { complete, copyKept }, NOW);
        const since = Date.parse(current.due_at ?? '');
        const settled = Number.isFinite(since) && NOW.getTime() - since >= DEAD_LETTER_SETTLE_MS;
        expect(owed).toBe(complete && !copyKept && waitsInDeadLetters(current) && settled);
      }),
    );
    expect(waitsInDeadLetters({ status: 'dead', rev: 1, tenant: 't_live' })).toBe(true);
    expect(waitsInDeadLetters({ status: 'dead', rev: 1, tenant: testSideOf('t_live') })).toBe(false);
    expect(waitsInDeadLetters({ status: 'dead', rev: 1, tenant: 't_live', expires_at: 1 })).toBe(false);
    expect(waitsInDeadLetters({ status: 'failed', rev: 1, tenant: 't_live' })).toBe(false);
  });
});
