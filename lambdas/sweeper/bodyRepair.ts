import { WAITING_FOR_OPERATOR } from '../core/messageStatus.js';
import type { SweepDeps } from './sweep.js';

/**
 * How far back a run looks for messages that began waiting: a sweep runs every few minutes, so each
 * new `failed`, `dead` or `unknown` message is checked about a dozen times before it leaves the window.
 */
export const BODY_REPAIR_WINDOW_MS = 3600 * 1000;

/**
 * A message that becomes `failed`, `dead` or `unknown` loses its TTL in two writes: the state record,
 * then the body (lambdas/store/senderTransitions.ts). A sender killed between them leaves a body that
 * still expires, and an operator's retry weeks later would find it gone. Each run looks at the
 * messages that began waiting within the window and removes such a left-over TTL — only while the
 * message still waits (a retry or a discard moves it on, and its body's TTL is theirs to set).
 */
export async function holdRecentBodies(
  deps: SweepDeps,
  shards: number,
): Promise<{ bodiesHeld: number; bodyRepairErrors: { status: string; error: string }[] }> {
  const since = new Date(deps.now().getTime() - BODY_REPAIR_WINDOW_MS).toISOString();
  let bodiesHeld = 0;
  const bodyRepairErrors: { status: string; error: string }[] = [];
  for (const status of WAITING_FOR_OPERATOR) {
    try {
      for (let shard = 0; shard < shards; shard++) {
        const ids = await deps.dueIndex.recentlyWaiting(status, shard, since);
        bodiesHeld += await deps.records.holdBodies(status, ids);
      }
    } catch (error) {
      const name = error instanceof Error ? error.name : 'non-error';
      bodyRepairErrors.push({ status, error: name });
      deps.log?.warn('sweeper could not check the bodies of waiting messages', { status, error: name });
    }
  }
  if (bodiesHeld > 0) deps.log?.warn('sweeper held bodies a crash had left expiring', { bodiesHeld });
  return { bodiesHeld, bodyRepairErrors };
}
