import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTerminal, isWaitingForOperator, MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import { admitCopy } from '../../lambdas/core/sendDecision.js';
import { staleDeadLetter } from '../../lambdas/core/staleDeadLetter.js';

/**
 * DESIGN §2: a copy whose `rev` is not the record's current one is stale and is dropped; `dead`
 * waits with its copy in the DLQ "until redrive"; §5 "Dead means dead": only that copy sends it
 * again. The sweeper deletes what this rule calls stale without asking anyone, so it must never call
 * stale a copy a redrive could still send.
 */
const status = fc.constantFrom(...MESSAGE_STATUSES);
const rev = fc.integer({ min: 1, max: 5 });
const record = fc.record({
  status,
  rev,
  lease_until: fc.option(fc.constant(new Date(0).toISOString()), { nil: undefined }),
});
const copy = fc.record({ rev, dlq: fc.boolean() });
const NOW = new Date('2026-12-04T10:00:00Z');

describe('staleDeadLetter', () => {
  it('never calls stale a copy whose redrive the sender would not drop', () => {
    fc.assert(
      fc.property(copy, record, (letter, current) => {
        if (staleDeadLetter(letter, current) === undefined) return;
        const admission = admitCopy(
          current,
          { rev: letter.rev, sqsMessageId: 'moved', fromDeadLetters: letter.dlq },
          NOW,
        );
        expect(admission.kind).toBe('drop');
      }),
    );
  });

  it('never calls stale the current copy of a message that waits for an operator or is live', () => {
    fc.assert(
      fc.property(rev, status, (at, current) => {
        const stale = staleDeadLetter({ rev: at }, { status: current, rev: at });
        expect(stale === undefined).toBe(isWaitingForOperator(current) || !isTerminal(current));
      }),
    );
  });

  it('calls stale every copy of another rev, whatever its message is doing, and one without a record', () => {
    fc.assert(
      fc.property(rev, record, (at, current) => {
        fc.pre(at !== current.rev);
        expect(staleDeadLetter({ rev: at }, current)).toMatch(new RegExp(`rev ${current.rev}`));
      }),
    );
    expect(staleDeadLetter({ rev: 1 }, null)).toMatch(/no record/);
  });
});
