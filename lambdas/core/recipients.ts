/**
 * Recipients one by one (DESIGN §5): a recipient the relay accepted is never sent the message again;
 * one deferred with a 4xx at RCPT stays pending and is retried; one rejected with a 5xx is recorded
 * and not retried. The state record keeps which recipients are settled as positions in the body's
 * recipient list (`to`, then `cc`, then `bcc`), so it stays small and holds no address.
 */

export interface RecipientProgress {
  /** Positions the relay accepted (250 after DATA with them in the envelope). */
  readonly accepted: readonly number[];
  /** Positions the relay refused for good (5xx). */
  readonly rejected: readonly number[];
}

export const NO_PROGRESS: RecipientProgress = { accepted: [], rejected: [] };

/** A recipient's refusal in one attempt, by its position in the message's recipient list. */
export interface RecipientRefusal {
  readonly position: number;
  /** 5xx: never retried; 4xx: still pending. */
  readonly permanent: boolean;
}

/** Every recipient in envelope order: `to`, `cc`, `bcc`. */
export function recipientList(body: {
  readonly to: readonly string[];
  readonly cc?: readonly string[] | null;
  readonly bcc?: readonly string[] | null;
}): string[] {
  return [...body.to, ...(body.cc ?? []), ...(body.bcc ?? [])];
}

/** Positions still to be sent to, in order. */
export function pendingPositions(total: number, progress: RecipientProgress): number[] {
  const settled = new Set([...progress.accepted, ...progress.rejected]);
  return Array.from({ length: total }, (_, position) => position).filter(
    (position) => !settled.has(position),
  );
}

/**
 * The progress after one attempt to `attempted` (the positions in its envelope): the ones the final
 * 250 covered are accepted, permanent refusals are rejected, and everything else stays pending.
 * `allRefused` says the relay refused the whole message for every attempted recipient for good
 * (a 5xx after DATA, or content it will never take).
 */
export function progressAfter(
  progress: RecipientProgress,
  attempt: {
    readonly attempted: readonly number[];
    readonly delivered: boolean;
    readonly refused: readonly RecipientRefusal[];
    readonly allRefused: boolean;
  },
): RecipientProgress {
  const refused = new Map(attempt.refused.map((refusal) => [refusal.position, refusal.permanent]));
  const accepted = new Set(progress.accepted);
  const rejected = new Set(progress.rejected);
  for (const position of attempt.attempted) {
    const permanent = refused.get(position);
    if (permanent === true || (permanent === undefined && attempt.allRefused)) rejected.add(position);
    else if (permanent === undefined && attempt.delivered) accepted.add(position);
  }
  return { accepted: sorted(accepted), rejected: sorted(rejected) };
}

/** Counts for the message view (DESIGN §3). Suppressions arrive with §12. */
export function recipientCounts(
  total: number,
  progress: RecipientProgress,
): { accepted: number; pending: number; rejected: number; suppressed: number } {
  const accepted = progress.accepted.length;
  const rejected = progress.rejected.length;
  return { accepted, pending: Math.max(0, total - accepted - rejected), rejected, suppressed: 0 };
}

function sorted(positions: ReadonlySet<number>): number[] {
  return [...positions].sort((a, b) => a - b);
}
