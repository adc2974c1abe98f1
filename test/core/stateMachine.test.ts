import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTerminal, MESSAGE_STATUSES, type MessageStatus } from '../../lambdas/core/messageStatus.js';
import {
  ACTORS,
  type Actor,
  checkTransition,
  findTransition,
  TRANSITIONS,
  transitionsFrom,
} from '../../lambdas/core/stateMachine.js';

function allowed(from: MessageStatus, to: MessageStatus, actor: Actor): boolean {
  return checkTransition(from, to, actor).allowed;
}

function reasonOf(from: MessageStatus, to: MessageStatus, actor: Actor): string {
  const check = checkTransition(from, to, actor);
  return check.allowed ? '' : check.reason;
}

/** The exits from terminal statuses that DESIGN §2/§5 allow, as (from, to, actor). */
const TERMINAL_EXITS = new Set([
  'failed→scheduled:api',
  'failed→scheduled:operator',
  'dead→scheduled:api',
  'dead→scheduled:operator',
  'unknown→scheduled:api',
  'unknown→scheduled:operator',
  'dead→sending:sender',
]);

describe('the state machine (DESIGN §2, docs/data-model.md)', () => {
  describe('the api', () => {
    it('reschedules a scheduled message', () => {
      expect(checkTransition('scheduled', 'scheduled', 'api')).toEqual({ allowed: true });
    });
    it('cancels a scheduled or retrying message', () => {
      expect(allowed('scheduled', 'cancelled', 'api')).toBe(true);
      expect(allowed('retrying', 'cancelled', 'api')).toBe(true);
    });
    it('cannot cancel a message that is sending', () => {
      expect(reasonOf('sending', 'cancelled', 'api')).toBe(
        'there is no transition from sending to cancelled',
      );
    });
    it('retries failed, dead and unknown messages by hand', () => {
      for (const from of ['failed', 'dead', 'unknown'] as const) {
        expect(allowed(from, 'scheduled', 'api')).toBe(true);
        expect(allowed(from, 'scheduled', 'operator')).toBe(true);
      }
    });
    it('cannot claim a message for sending', () => {
      expect(reasonOf('scheduled', 'sending', 'api')).toBe(
        'scheduled → sending (claim) is made by sender, not by api',
      );
    });
  });

  describe('the sender', () => {
    it('claims scheduled and retrying messages', () => {
      expect(findTransition('scheduled', 'sending')?.event).toBe('claim');
      expect(allowed('scheduled', 'sending', 'sender')).toBe(true);
      expect(allowed('retrying', 'sending', 'sender')).toBe(true);
    });
    it('claims a dead message again when its copy was redriven from the DLQ', () => {
      expect(findTransition('dead', 'sending')?.event).toBe('dlq-redrive-claim');
      expect(allowed('dead', 'sending', 'sender')).toBe(true);
    });
    it('reclaims a sending message whose lease expired (on_ambiguous = retry)', () => {
      expect(findTransition('sending', 'sending')?.event).toBe('lease-expired-reclaim');
      expect(allowed('sending', 'sending', 'sender')).toBe(true);
    });
    it('records every outcome of a send', () => {
      expect(findTransition('sending', 'sent')?.event).toBe('sent');
      expect(findTransition('sending', 'retrying')?.event).toBe('transient-failure');
      expect(findTransition('sending', 'failed')?.event).toBe('permanent-failure');
      expect(findTransition('sending', 'dead')?.event).toBe('attempts-exhausted');
      expect(findTransition('sending', 'unknown')?.event).toBe('ambiguous-hold');
      for (const to of ['sent', 'retrying', 'failed', 'dead', 'unknown'] as const) {
        expect(allowed('sending', to, 'sender')).toBe(true);
      }
    });
    it('expires and supersedes waiting or claimed messages', () => {
      for (const from of ['scheduled', 'retrying', 'sending'] as const) {
        expect(allowed(from, 'expired', 'sender')).toBe(true);
        expect(allowed(from, 'superseded', 'sender')).toBe(true);
      }
    });
    it('ends a claimed message whose every recipient is suppressed as suppressed (DESIGN §12)', () => {
      expect(findTransition('sending', 'suppressed')?.event).toBe('suppress');
      expect(allowed('sending', 'suppressed', 'sender')).toBe(true);
      // Only after the claim, under the lease: the list is read at send time, never at enqueue.
      for (const from of ['scheduled', 'retrying', 'failed', 'dead', 'unknown'] as const) {
        expect(allowed(from, 'suppressed', 'sender')).toBe(false);
      }
      for (const who of ['api', 'operator', 'sweeper'] as const) {
        expect(allowed('sending', 'suppressed', who)).toBe(false);
      }
    });
    it('gives a claim of a scheduled message back into scheduled (no attempt, DESIGN §2); nobody else may', () => {
      expect(findTransition('sending', 'scheduled')?.event).toBe('give-back');
      expect(allowed('sending', 'scheduled', 'sender')).toBe(true);
      for (const who of ['api', 'operator', 'sweeper'] as const) {
        expect(allowed('sending', 'scheduled', who)).toBe(false);
      }
    });
  });

  describe('the sweeper', () => {
    it('never changes a status: it only re-dispatches', () => {
      for (const transition of TRANSITIONS) expect(transition.actors).not.toContain('sweeper');
      expect(reasonOf('scheduled', 'sending', 'sweeper')).toMatch(/^the sweeper never changes a status/);
    });
  });

  describe('terminal statuses', () => {
    it('sent is terminal; only a manual retry leaves failed, dead or unknown', () => {
      expect(reasonOf('sent', 'scheduled', 'operator')).toBe(
        "sent is terminal; only an operator's manual retry leaves failed, dead or unknown",
      );
      for (const from of ['cancelled', 'superseded', 'expired', 'suppressed'] as const) {
        expect(transitionsFrom(from)).toEqual([]);
      }
    });
    it('names the ways out of a terminal status that has some', () => {
      expect(reasonOf('dead', 'sent', 'sender')).toBe(
        'dead is terminal; it can only be left by manual-retry → scheduled, dlq-redrive-claim → sending, not to sent',
      );
    });
    it('lets only api and operator retry, and only the sender claim a redriven copy', () => {
      expect(reasonOf('failed', 'scheduled', 'sender')).toBe(
        'failed → scheduled (manual-retry) is made by api or operator, not by sender',
      );
      expect(allowed('dead', 'sending', 'operator')).toBe(false);
      expect(allowed('failed', 'sending', 'sender')).toBe(false);
      expect(allowed('unknown', 'sending', 'sender')).toBe(false);
    });
  });

  describe('the table', () => {
    it('has at most one row for each (from, to) pair', () => {
      const pairs = TRANSITIONS.flatMap((t) => t.from.map((from) => `${from}→${t.to}`));
      expect(new Set(pairs).size).toBe(pairs.length);
    });
    it('has a distinct event name and a description on every row', () => {
      expect(new Set(TRANSITIONS.map((t) => t.event)).size).toBe(TRANSITIONS.length);
      for (const t of TRANSITIONS) expect(t.description.length).toBeGreaterThan(10);
    });
    it('lists what an actor may do from a status', () => {
      expect(transitionsFrom('scheduled', 'api').map((t) => t.event)).toEqual(['reschedule', 'cancel']);
      expect(transitionsFrom('scheduled', 'sweeper')).toEqual([]);
    });
    it('leaves terminal statuses only by the exits DESIGN allows', () => {
      for (const from of MESSAGE_STATUSES.filter(isTerminal)) {
        for (const to of MESSAGE_STATUSES) {
          for (const actor of ACTORS) {
            expect(allowed(from, to, actor), `${from}→${to}:${actor}`).toBe(
              TERMINAL_EXITS.has(`${from}→${to}:${actor}`),
            );
          }
        }
      }
    });
  });

  describe('properties', () => {
    const status = fc.constantFrom(...MESSAGE_STATUSES);
    const actor = fc.constantFrom(...ACTORS);

    it('no sequence of allowed transitions leaves a terminal status except by a manual retry or a DLQ redrive', () => {
      fc.assert(
        fc.property(status, fc.array(fc.tuple(status, actor), { maxLength: 40 }), (start, steps) => {
          let current = start;
          for (const [to, who] of steps) {
            if (!allowed(current, to, who)) continue;
            if (isTerminal(current) && current !== to) {
              const event = findTransition(current, to)?.event;
              expect(['manual-retry', 'dlq-redrive-claim']).toContain(event);
            }
            current = to;
          }
        }),
      );
    });

    it('every refusal gives a reason in words, and every answer agrees with the table', () => {
      fc.assert(
        fc.property(status, status, actor, (from, to, who) => {
          const check = checkTransition(from, to, who);
          const row = findTransition(from, to);
          expect(check.allowed).toBe(row?.actors.includes(who) ?? false);
          if (!check.allowed) expect(check.reason).toMatch(/\w+ \w+/);
        }),
      );
    });

    it('a suppressed message is never sent nor moved again, whatever anyone tries', () => {
      fc.assert(
        fc.property(fc.array(fc.tuple(status, actor), { maxLength: 30 }), (steps) => {
          for (const [to, who] of steps) expect(allowed('suppressed', to, who)).toBe(false);
        }),
      );
    });

    it('reaches suppressed only from sending, by the sender, through one row', () => {
      fc.assert(
        fc.property(status, actor, (from, who) => {
          if (allowed(from, 'suppressed', who)) {
            expect([from, who]).toEqual(['sending', 'sender']);
          }
        }),
      );
    });

    it('a sent message stays sent whatever anyone tries', () => {
      fc.assert(
        fc.property(fc.array(fc.tuple(status, actor), { maxLength: 30 }), (steps) => {
          for (const [to, who] of steps) expect(allowed('sent', to, who)).toBe(false);
        }),
      );
    });
  });
});
