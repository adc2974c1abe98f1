/**
 * Where a message goes when it is dispatched, and what a sender does with a copy that arrives
 * (DESIGN §5a). Pure: the clock is an argument.
 */

import { SQS_MAX_DELAY_SECONDS, sqsDelaySeconds } from './queueLimits.js';

export type DispatchDecision = { path: 'queue'; delaySeconds: number } | { path: 'schedule'; fireAt: Date };

export interface DispatchInput {
  readonly sendAt: Date;
  readonly now: Date;
  readonly directDelayMaxSeconds: number;
  readonly scheduleLeadSeconds: number;
}

/**
 * Due within `directDelayMaxSeconds` (boundary included) → the send queue with
 * `delaySeconds = floor(remaining)` clamped to [0, 900]; a `send_at` in the past gives 0.
 * Later → a one-time schedule at `send_at − lead`, truncated to the whole second (Scheduler's
 * `at()` has second resolution), so it fires early and the rest becomes an exact SQS delay.
 *
 * A fire time before now cannot happen while lead ≤ directDelayMax (config keeps both ≤ 900), but
 * is handled anyway: if the message is then due within 900 s it goes to the queue directly,
 * otherwise the schedule fires at the next whole second.
 *
 * @throws RangeError when a date is invalid (callers validate their inputs first).
 */
export function decideDispatch(input: DispatchInput): DispatchDecision {
  const sendAtMs = validTime(input.sendAt, 'sendAt');
  const nowMs = validTime(input.now, 'now');
  const remainingMs = sendAtMs - nowMs;
  if (remainingMs <= Math.max(0, input.directDelayMaxSeconds) * 1000) {
    return { path: 'queue', delaySeconds: sqsDelaySeconds(remainingMs / 1000) };
  }
  const leadMs = Math.max(0, input.scheduleLeadSeconds) * 1000;
  const fireAtMs = truncateToSecond(sendAtMs - leadMs);
  if (fireAtMs >= nowMs) return { path: 'schedule', fireAt: new Date(fireAtMs) };
  if (remainingMs <= SQS_MAX_DELAY_SECONDS * 1000) {
    return { path: 'queue', delaySeconds: sqsDelaySeconds(remainingMs / 1000) };
  }
  return { path: 'schedule', fireAt: new Date(Math.ceil(nowMs / 1000) * 1000) };
}

export type ArrivalDecision =
  | { action: 'send' }
  | { action: 'wait'; milliseconds: number }
  | { action: 'redelay'; delaySeconds: number };

export interface ArrivalInput {
  readonly sendAt: Date;
  readonly now: Date;
  readonly maxWaitMs: number;
}

/**
 * What to do with a copy that arrives: `send` when due; `wait` in-process when it is early by at
 * most `maxWaitMs` (the sub-second remainder SQS cannot express); otherwise `redelay` with
 * `delaySeconds = floor(remaining)` clamped to [1, 900]. An early copy is never a failed attempt.
 *
 * @throws RangeError when a date is invalid.
 */
export function decideArrival(input: ArrivalInput): ArrivalDecision {
  const remainingMs = validTime(input.sendAt, 'sendAt') - validTime(input.now, 'now');
  if (remainingMs <= 0) return { action: 'send' };
  if (remainingMs <= Math.max(0, input.maxWaitMs)) return { action: 'wait', milliseconds: remainingMs };
  return { action: 'redelay', delaySeconds: Math.max(1, sqsDelaySeconds(remainingMs / 1000)) };
}

/** EventBridge Scheduler's one-time expression in UTC: `at(yyyy-mm-ddThh:mm:ss)`. */
export function formatAtExpression(date: Date): string {
  validTime(date, 'date');
  return `at(${date.toISOString().slice(0, 19)})`;
}

function truncateToSecond(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}

function validTime(date: Date, name: string): number {
  const ms = date instanceof Date ? date.getTime() : Number.NaN;
  if (Number.isNaN(ms)) throw new RangeError(`${name} is not a valid date`);
  return ms;
}
