import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import { RECORD_LAYOUT, recordRefusal, refusedRecord } from '../../lambdas/core/recordLayout.js';
import { admitCopy } from '../../lambdas/core/sendDecision.js';

/**
 * Which state records this stack handles (decision 0166): its own layout and older ones (a record
 * without a layout is older), with a status it knows; a newer writer's record is refused, by every
 * part that asks (the relay, the sender's admission).
 */
const knownStatus = fc.constantFrom(...MESSAGE_STATUSES);
const ownOrOlder = fc.option(fc.integer({ min: 1, max: RECORD_LAYOUT }), { nil: undefined });
const newer = fc.integer({ min: RECORD_LAYOUT + 1, max: 1_000_000 });
const copy = { rev: 1, sqsMessageId: 'm-1', fromDeadLetters: false };
const NOW = new Date('2026-12-03T12:00:00.000Z');

describe('the records this stack handles', () => {
  it('are those of its own layout or an older one, with a status it knows', () => {
    fc.assert(
      fc.property(ownOrOlder, knownStatus, (layout, status) => {
        expect(recordRefusal({ layout, status })).toBeUndefined();
      }),
    );
  });

  it('never include a newer layout, whatever its status, and the sender never claims one', () => {
    fc.assert(
      fc.property(newer, knownStatus, fc.integer({ min: 1, max: 5 }), (layout, status, rev) => {
        expect(recordRefusal({ layout, status })).toMatchObject({ kind: 'newer-layout' });
        // As the sender's reader hands it on (store/stateReads.ts): the rule asked of the raw item.
        const read = refusedRecord({ id: 'm-1', layout, status, rev });
        expect(admitCopy(read, { ...copy, rev }, NOW).kind).toBe('refuse');
      }),
    );
  });

  it('never include a layout no writer of this code wrote (not a whole number from 1)', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ max: 0 }), fc.double({ noInteger: true }), fc.string(), fc.constant(null)),
        knownStatus,
        (layout, status) => {
          expect(recordRefusal({ layout, status })).toMatchObject({ kind: 'newer-layout' });
        },
      ),
    );
  });

  it('never include a status this stack does not know', () => {
    fc.assert(
      fc.property(
        ownOrOlder,
        fc.string().filter((status) => !(MESSAGE_STATUSES as readonly string[]).includes(status)),
        (layout, status) => {
          expect(recordRefusal({ layout, status })).toMatchObject({ kind: 'unknown-status' });
        },
      ),
    );
  });

  it('name the layout or the status in the reason', () => {
    expect(recordRefusal({ layout: RECORD_LAYOUT + 1, status: 'scheduled' })?.reason).toBe(
      `layout ${RECORD_LAYOUT + 1} is newer than this stack's ${RECORD_LAYOUT}`,
    );
    expect(recordRefusal({ status: 'held' })?.reason).toBe('status "held" is not one this stack knows');
  });
});
