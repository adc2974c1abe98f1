import { MESSAGE_STATUS } from '../core/messageStatus.js';
import { scheduleName } from '../ports/Scheduler.js';
import { type ImageRead, isStateRecord, type RelayRecord, type StateImage } from './relayRecord.js';

/** What one stream record asks of the relay. Pure: no clock, no I/O. */
export type RelayPlan =
  | { readonly kind: 'ignore'; readonly reason: string }
  /** A state image it cannot read (written by hand, or by a writer's bug): its id when it has one. */
  | { readonly kind: 'invalid'; readonly reason: string; readonly id?: string }
  /** A newer writer's record (core/recordLayout.ts): not dispatched, counted and logged. */
  | { readonly kind: 'refused'; readonly id: string; readonly reason: string }
  | {
      readonly kind: 'act';
      readonly id: string;
      /** Dispatch this revision (its time decides queue or schedule), or nothing. */
      readonly dispatch: StateImage | null;
      /** Schedules of earlier revisions to delete, in order (absent ones are fine). */
      readonly deleteSchedules: readonly string[];
    };

/** A record that asks for work. */
export type ActPlan = Extract<RelayPlan, { kind: 'act' }>;

/**
 * The relay's rules (docs/relay.md), on one record:
 * - INSERT of a `scheduled` record → dispatch rev;
 * - MODIFY whose `rev` changed while the new image is `scheduled` (reschedule, manual retry) →
 *   dispatch the new rev, and delete the old rev's schedule if the old image was `scheduled`
 *   (only a `scheduled` record can have a live schedule);
 * - MODIFY from `scheduled` to `cancelled` → delete the old rev's schedule;
 * - anything else (claims, outcomes, removals by TTL, other item kinds) → ignored;
 * - a record of a newer writer (a newer layout, a status this stack does not know) → refused.
 */
export function planRelay(record: RelayRecord): RelayPlan {
  if (!isStateRecord(record)) return { kind: 'ignore', reason: 'not a message state record' };
  if (record.eventName !== 'INSERT' && record.eventName !== 'MODIFY')
    return { kind: 'ignore', reason: `event ${record.eventName ?? 'none'}` };
  // A record a newer writer made, in either image, is refused whatever else it asks.
  for (const image of [record.newImage, record.oldImage]) {
    if (!image.ok && image.refused !== undefined)
      return { kind: 'refused', id: image.refused.id, reason: image.reason };
  }
  if (record.eventName === 'INSERT') {
    if (!record.newImage.ok) return invalid('new', record.newImage);
    const inserted = record.newImage.image;
    if (inserted.status !== MESSAGE_STATUS.scheduled) {
      return { kind: 'ignore', reason: `inserted as ${inserted.status}` };
    }
    return { kind: 'act', id: inserted.id, dispatch: inserted, deleteSchedules: [] };
  }
  if (!record.newImage.ok) return invalid('new', record.newImage);
  if (!record.oldImage.ok) return invalid('old', record.oldImage);
  const before = record.oldImage.image;
  const after = record.newImage.image;
  const hadSchedule = before.status === MESSAGE_STATUS.scheduled;
  if (after.status === MESSAGE_STATUS.scheduled && after.rev !== before.rev) {
    return {
      kind: 'act',
      id: after.id,
      dispatch: after,
      deleteSchedules: hadSchedule ? [scheduleName(before)] : [],
    };
  }
  if (after.status === MESSAGE_STATUS.cancelled && hadSchedule) {
    const names = [scheduleName(before)];
    if (after.rev !== before.rev) names.push(scheduleName(after));
    return { kind: 'act', id: after.id, dispatch: null, deleteSchedules: names };
  }
  return { kind: 'ignore', reason: `${before.status} → ${after.status}: nothing to dispatch or delete` };
}

function invalid(
  which: 'new' | 'old',
  image: Extract<ImageRead, { ok: false }>,
): Extract<RelayPlan, { kind: 'invalid' }> {
  return {
    kind: 'invalid',
    reason: `${which} image: ${image.reason}`,
    ...(image.id === undefined ? {} : { id: image.id }),
  };
}
