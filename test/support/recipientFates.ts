import type { RecipientProgress } from '../../lambdas/core/recipients.js';

/** Where a recipient stands in a message's progress, as DESIGN §3 counts it. */
export type Fate = 'pending' | 'accepted' | 'rejected' | 'suppressed';

/** The fate of the recipient at `position`: the one reading the promise tests judge progress by. */
export function fateOf(progress: RecipientProgress, position: number): Fate {
  if (progress.accepted.includes(position)) return 'accepted';
  if (progress.rejected.includes(position)) return 'rejected';
  if ((progress.suppressed ?? []).includes(position)) return 'suppressed';
  return 'pending';
}
