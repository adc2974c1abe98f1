import type { DispatchPayload } from '../core/dispatchPayload.js';

/** One one-time schedule: at `fireAt` (whole seconds, UTC) the payload is put on the send queue. */
export interface OneTimeSchedule {
  readonly name: string;
  readonly fireAt: Date;
  readonly payload: Pick<DispatchPayload, 'id' | 'rev'>;
}

/**
 * One-time schedules that deliver a dispatch payload to the send queue, as the relay sees them.
 * Both methods are idempotent: a replay answers `exists` / `absent` instead of failing. Any other
 * failure is thrown (the adapter translates only the outcomes the relay expects).
 */
export interface Scheduler {
  /** Creates the schedule; `exists` when one of that name is already there (a replayed record). */
  createOnce(schedule: OneTimeSchedule): Promise<'created' | 'exists'>;
  /** Deletes the schedule; `absent` when there is none (already fired, never made, or deleted). */
  deleteIfExists(name: string): Promise<'deleted' | 'absent'>;
}

/**
 * The schedule of one dispatch revision: `pd-{id}-{rev}`. Derived from id and rev only, so that a
 * replayed stream record names the same schedule (a harmless conflict) and a reschedule or cancel
 * can delete the previous revision's schedule without having stored its name anywhere.
 */
export function scheduleName(payload: Pick<DispatchPayload, 'id' | 'rev'>): string {
  return `pd-${payload.id}-${payload.rev}`;
}
