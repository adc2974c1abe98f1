import { type QuietHours, quietHoursDecision } from './localTime.js';
import type { MessageStatus } from './messageStatus.js';
import { checkTransition } from './stateMachine.js';

/**
 * What must not go out now (DESIGN §4, §5; docs/design.md §16 Local time and quiet hours): a message
 * past its `not_after` deadline is `expired` and settled without a send — where the state machine
 * lets the sender make that move; where it does not (a DLQ-redriven copy of a `dead` message past its
 * deadline, say) nothing is written and the copy is dropped. One whose group head has moved above its
 * version is `superseded` (isSupersededBy): the sender reads the head once, under its claim just
 * before it sends (sender/sendClaimed.ts; docs/decisions/0097-group-head-written-when-it-rises.md).
 * A message that comes due inside its quiet hours — the first time, after a retry's backoff, an
 * outage, a pause or a redrive: every copy the sender would send passes here — is held until their
 * end, or expires when its `not_after` comes first. Pure.
 */

/** What the decision reads of the state record. */
export interface UnsentRecord {
  readonly status: MessageStatus;
  readonly not_after?: string | null;
  readonly group?: GroupVersion | null;
  /** The zone quiet hours are read in, and the window (docs/design.md §16). */
  readonly time_zone?: string | null;
  readonly quiet_hours?: QuietHours | null;
}

/** A message's place in its group: the version it was enqueued at. */
export interface GroupVersion {
  readonly key: string;
  readonly version: number;
}

export type UnsentStatus = 'expired' | 'superseded';

export type UnsentDecision =
  | { readonly kind: 'send' }
  /** Due inside quiet hours: back unsent, no attempt, no status change, until the window's end. */
  | { readonly kind: 'hold'; readonly until: Date }
  /** Settle the message as `to` instead of sending it. */
  | { readonly kind: 'settle'; readonly to: UnsentStatus }
  /** It must not go out, and the sender may not settle it from its status either: drop the copy. */
  | { readonly kind: 'drop'; readonly to: UnsentStatus; readonly reason: string; readonly forbidden: string }
  /**
   * It can never go as stored (its quiet hours cannot be read: a zone this runtime does not know):
   * `failed`, permanent, no attempt — made under the sender's claim, as `failed` is reached only
   * from `sending`, where it fails content that cannot be sent (sender/sendClaimed.ts).
   */
  | { readonly kind: 'fail'; readonly reason: string };

/** Whether a deadline (ISO time, or none) has passed; an unreadable one never has. */
export function isPastDeadline(deadline: string | null | undefined, now: Date): boolean {
  if (deadline === null || deadline === undefined) return false;
  const at = Date.parse(deadline);
  return Number.isFinite(at) && at < now.getTime();
}

/**
 * The one group check, on the head the sender reads under its claim just before it sends: the
 * group's head is above the message's version, so a newer version exists ("approved" is never sent
 * after "paused").
 */
export function isSupersededBy(group: GroupVersion | null | undefined, head: number | undefined): boolean {
  return group !== null && group !== undefined && head !== undefined && head > group.version;
}

/**
 * The deadline first, then quiet hours: held until their end, or expired when `not_after` is before
 * that end. A message due now comes due now: `now` is when this copy would go.
 * Quiet hours in a zone this runtime does not know (a hand-written record, an outbox on newer tz
 * data: the API admits only zones it knows) fail the message, its deadline not yet past.
 */
export function decideUnsent(record: UnsentRecord, now: Date): UnsentDecision {
  let to: 'expired' | undefined = isPastDeadline(record.not_after, now) ? 'expired' : undefined;
  if (to === undefined) {
    const quiet = quietHoursDecision({
      due: now,
      quietHours: record.quiet_hours,
      timeZone: record.time_zone,
      notAfter: record.not_after == null ? null : new Date(record.not_after),
    });
    if (quiet.kind === 'hold') return quiet;
    if (quiet.kind === 'unreadable') return { kind: 'fail', reason: quiet.reason };
    if (quiet.kind === 'expire') to = 'expired';
  }
  if (to === undefined) return { kind: 'send' };
  const check = checkTransition(record.status, to, 'sender');
  if (check.allowed) return { kind: 'settle', to };
  return {
    kind: 'drop',
    to,
    reason: 'past not_after',
    forbidden: check.reason,
  };
}
