/**
 * The message state machine of DESIGN §2, as data. Every allowed move is one row of TRANSITIONS:
 * the statuses it leaves, the status it enters, the actors that may make it and the event's name.
 * docs/data-model.md ("Transitions and their writers") describes the conditional writes that
 * implement each row; this table says who may do what, and nothing else is allowed.
 *
 * Enqueue (nothing → `scheduled` or `superseded`) has no `from` status and is not a row here.
 */
import { isTerminal, type MessageStatus, MESSAGE_STATUS as S } from './messageStatus.js';

export type Actor = 'api' | 'sender' | 'sweeper' | 'operator';

export const ACTORS: readonly Actor[] = ['api', 'sender', 'sweeper', 'operator'];

export type TransitionEvent =
  | 'reschedule'
  | 'cancel'
  | 'manual-retry'
  | 'claim'
  | 'dlq-redrive-claim'
  | 'lease-expired-reclaim'
  | 'lease-expired-hold'
  | 'give-back'
  | 'sent'
  | 'transient-failure'
  | 'permanent-failure'
  | 'attempts-exhausted'
  | 'ambiguous-hold'
  | 'expire'
  | 'supersede'
  | 'suppress';

export interface Transition {
  readonly event: TransitionEvent;
  readonly from: readonly MessageStatus[];
  readonly to: MessageStatus;
  readonly actors: readonly Actor[];
  /** One sentence for docs and error messages. */
  readonly description: string;
}

/**
 * The allowed transitions. A (from, to) pair appears in at most one row, so a transition is
 * identified by its two statuses.
 *
 * The sweeper has no row on purpose: it never writes a status, it only re-dispatches a stuck
 * message's current `rev`, and the sender then makes the move (docs/data-model.md).
 */
export const TRANSITIONS: readonly Transition[] = [
  {
    event: 'reschedule',
    from: [S.scheduled],
    to: S.scheduled,
    actors: ['api'],
    description: 'a new send_at for a message that is still waiting; rev + 1',
  },
  {
    event: 'cancel',
    from: [S.scheduled, S.retrying],
    to: S.cancelled,
    actors: ['api', 'operator'],
    description: 'cancelled before a send began',
  },
  {
    event: 'manual-retry',
    from: [S.failed, S.dead, S.unknown],
    to: S.scheduled,
    actors: ['api', 'operator'],
    description: "an operator's manual retry; rev + 1, send_at = now",
  },
  {
    event: 'claim',
    from: [S.scheduled, S.retrying],
    to: S.sending,
    actors: ['sender'],
    description: 'a sender takes the lease for the current rev',
  },
  {
    event: 'dlq-redrive-claim',
    from: [S.dead],
    to: S.sending,
    actors: ['sender'],
    description: 'a copy redriven from the DLQ by an operator claims its dead message again',
  },
  {
    event: 'lease-expired-reclaim',
    from: [S.sending],
    to: S.sending,
    actors: ['sender'],
    description:
      'the previous sender died mid-send (lease expired) and on_ambiguous is retry: another sender claims it',
  },
  {
    event: 'give-back',
    from: [S.sending],
    to: S.scheduled,
    actors: ['sender'],
    description:
      'a claim of a scheduled message given back before MAIL FROM (a read failed, or too little time was left): no attempt, scheduled again',
  },
  {
    event: 'sent',
    from: [S.sending],
    to: S.sent,
    actors: ['sender'],
    description: 'the relay accepted the message (250 after DATA)',
  },
  {
    event: 'transient-failure',
    from: [S.sending],
    to: S.retrying,
    actors: ['sender'],
    description:
      'a transient or config-class failure, or an ambiguous one under on_ambiguous = retry; the copy returns after backoff (a claim of a retrying or redriven message given back unsent waits again the same way, no attempt)',
  },
  {
    event: 'permanent-failure',
    from: [S.sending],
    to: S.failed,
    actors: ['sender'],
    description: 'the relay refused the message for good (5xx), or its content is invalid',
  },
  {
    event: 'attempts-exhausted',
    from: [S.sending],
    to: S.dead,
    actors: ['sender'],
    description: 'the last allowed attempt failed transiently; the copy goes to the DLQ',
  },
  {
    event: 'ambiguous-hold',
    from: [S.sending],
    to: S.unknown,
    actors: ['sender'],
    description:
      'the outcome is ambiguous (the connection broke after the body was sent, or the lease expired mid-send) and on_ambiguous is hold',
  },
  {
    event: 'expire',
    from: [S.scheduled, S.retrying, S.sending],
    to: S.expired,
    actors: ['sender'],
    description: 'not_after passed before the message could be sent',
  },
  {
    event: 'supersede',
    from: [S.scheduled, S.retrying, S.sending],
    to: S.superseded,
    actors: ['sender'],
    description: "the group's head version is higher than the message's: it is not sent",
  },
  {
    event: 'suppress',
    from: [S.sending],
    to: S.suppressed,
    actors: ['sender'],
    description:
      "every recipient is on the tenant's suppression list at send time (DESIGN §12): no SMTP transaction",
  },
];

export type TransitionCheck = { allowed: true } | { allowed: false; reason: string };

/** The row for a (from, to) pair, if any. */
export function findTransition(from: MessageStatus, to: MessageStatus): Transition | undefined {
  return TRANSITIONS.find((transition) => transition.to === to && transition.from.includes(from));
}

/** Every transition an actor may make from a status. */
export function transitionsFrom(from: MessageStatus, actor?: Actor): readonly Transition[] {
  return TRANSITIONS.filter(
    (transition) =>
      transition.from.includes(from) && (actor === undefined || transition.actors.includes(actor)),
  );
}

/** Whether `actor` may move a message from `from` to `to`, or why not in words. */
export function checkTransition(from: MessageStatus, to: MessageStatus, actor: Actor): TransitionCheck {
  const transition = findTransition(from, to);
  if (transition === undefined) {
    if (isTerminal(from)) return { allowed: false, reason: terminalReason(from, to) };
    return { allowed: false, reason: `there is no transition from ${from} to ${to}` };
  }
  if (!transition.actors.includes(actor)) {
    const who = actor === 'sweeper' ? 'the sweeper never changes a status (it only re-dispatches); ' : '';
    return {
      allowed: false,
      reason: `${who}${from} → ${to} (${transition.event}) is made by ${transition.actors.join(' or ')}, not by ${actor}`,
    };
  }
  return { allowed: true };
}

function terminalReason(from: MessageStatus, to: MessageStatus): string {
  const exits = transitionsFrom(from);
  if (exits.length === 0) {
    return `${from} is terminal; only an operator's manual retry leaves failed, dead or unknown`;
  }
  const ways = exits.map((transition) => `${transition.event} → ${transition.to}`).join(', ');
  return `${from} is terminal; it can only be left by ${ways}, not to ${to}`;
}
