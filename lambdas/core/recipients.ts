/**
 * Recipients one by one (DESIGN §5): a recipient the relay accepted is never sent the message again;
 * one deferred with a 4xx at RCPT stays pending and is retried; one rejected with a 5xx is recorded
 * and not retried. The state record keeps which recipients are settled as positions in the body's
 * recipient list (`to`, then `cc`, then `bcc`), so it stays small and holds no address.
 */

import type { ThrottleKind } from './classifySmtpError.js';
import { suppressionKey } from './suppressions.js';

export interface RecipientProgress {
  /** Positions the relay accepted (250 after DATA with them in the envelope). */
  readonly accepted: readonly number[];
  /** Positions the relay refused for good (5xx). */
  readonly rejected: readonly number[];
  /**
   * Positions left out because the address was on the tenant's suppression list when an attempt
   * was about to be made (DESIGN §12). Settled like a rejection: never sent to by this message.
   * Absent means none (records written before suppressions).
   */
  readonly suppressed?: readonly number[];
}

/**
 * A history entry lists at most this many recipients with their own replies (DESIGN §3), and counts
 * the rest: the state record stays small however many recipients a relay refuses.
 */
export const MAX_RECIPIENT_REPLIES = 5;

/** A recipient's own reply is cut to this many characters (its codes are kept beside it). */
export const MAX_RECIPIENT_REPLY_LENGTH = 80;

/** A recipient's refusal in one attempt, by its position in the message's recipient list. */
export interface RecipientRefusal {
  readonly position: number;
  /** 5xx: never retried; 4xx: still pending. */
  readonly permanent: boolean;
  /** The relay throttled us at this RCPT TO (a 4xx, pending): the fleet's pressure, not the recipient's. */
  readonly throttle?: ThrottleKind | undefined;
}

/** Every recipient in envelope order: `to`, `cc`, `bcc`. */
export function recipientList(body: {
  readonly to: readonly string[];
  readonly cc?: readonly string[] | null;
  readonly bcc?: readonly string[] | null;
}): string[] {
  return [...body.to, ...(body.cc ?? []), ...(body.bcc ?? [])];
}

/**
 * Each position's mailbox, as the position where the list first names it, by the one rule for "the
 * same mailbox" (core/suppressions.ts `suppressionKey`: its spellings are one; decision 0237), and
 * what does not parse compared lower-cased, as the mailer compares: `to: [ada@x, bob@x]` with
 * `bcc: [ADA@X]` is `[0, 1, 0]`. Undefined when no mailbox is named twice (each position its own).
 */
export function mailboxPlaces(recipients: readonly string[]): number[] | undefined {
  const first = new Map<string, number>();
  const places = recipients.map((recipient, position) => {
    const key = suppressionKey(recipient) ?? recipient.toLowerCase();
    const seen = first.get(key);
    if (seen !== undefined) return seen;
    first.set(key, position);
    return position;
  });
  return places.every((place, position) => place === position) ? undefined : places;
}

/**
 * How many mailboxes these positions name, each once (its spellings get one RCPT TO: decision
 * 0234): the send rate's recipients (DESIGN §5 "Rate", decision 0248). `places` as
 * {@link mailboxPlaces} gives them; absent, each position is its own mailbox.
 */
export function mailboxCount(positions: readonly number[], places?: readonly number[]): number {
  return places === undefined
    ? positions.length
    : new Set(positions.map((position) => places[position] ?? position)).size;
}

/** Positions still to be sent to, in order. */
export function pendingPositions(total: number, progress: RecipientProgress): number[] {
  const settled = new Set([...progress.accepted, ...progress.rejected, ...(progress.suppressed ?? [])]);
  return Array.from({ length: total }, (_, position) => position).filter(
    (position) => !settled.has(position),
  );
}

/**
 * The progress after one attempt to `attempted` (the positions in its envelope): the ones the final
 * 250 covered are accepted, permanent refusals are rejected, and everything else stays pending.
 * `allRefused` says the relay refused the whole message for good (a 5xx to MAIL FROM, DATA or the
 * final dot, or content it will never take): every attempted recipient it did not answer for itself
 * at RCPT TO is rejected with it, one it deferred there stays pending (DESIGN §5).
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
  return withSuppressed({ accepted: sorted(accepted), rejected: sorted(rejected) }, progress.suppressed);
}

/**
 * What the suppression list makes of a claimed message before its attempt (DESIGN §12). `suppressed`
 * are the pending positions whose address is on the list now. They are settled as suppressed and
 * left out of the envelope; when that leaves nobody pending the message is settled without an SMTP
 * transaction: `suppressed` when nobody was ever accepted or rejected, else `sent` (someone accepted)
 * or `failed` (only rejections), as an attempt would have left it. With nothing newly suppressed the
 * message goes on to its attempt exactly as before.
 */
export type Screening =
  | { readonly kind: 'send'; readonly progress: RecipientProgress; readonly envelope: readonly number[] }
  | {
      readonly kind: 'settle';
      readonly to: 'suppressed' | 'sent' | 'failed';
      readonly progress: RecipientProgress;
    };

export function screenRecipients(
  total: number,
  progress: RecipientProgress,
  suppressedNow: readonly number[],
): Screening {
  const pending = pendingPositions(total, progress);
  const newly = new Set(suppressedNow.filter((position) => pending.includes(position)));
  if (newly.size === 0) return { kind: 'send', progress, envelope: pending };
  const screened = withSuppressed(progress, [...(progress.suppressed ?? []), ...newly]);
  const envelope = pending.filter((position) => !newly.has(position));
  if (envelope.length > 0) return { kind: 'send', progress: screened, envelope };
  const to = screened.accepted.length > 0 ? 'sent' : screened.rejected.length > 0 ? 'failed' : 'suppressed';
  return { kind: 'settle', to, progress: screened };
}

/** Counts for the message view (DESIGN §3). */
export function recipientCounts(
  total: number,
  progress: RecipientProgress,
): { accepted: number; pending: number; rejected: number; suppressed: number } {
  const accepted = progress.accepted.length;
  const rejected = progress.rejected.length;
  const suppressed = progress.suppressed?.length ?? 0;
  return {
    accepted,
    pending: Math.max(0, total - accepted - rejected - suppressed),
    rejected,
    suppressed,
  };
}

function sorted(positions: ReadonlySet<number>): number[] {
  return [...positions].sort((a, b) => a - b);
}

/** The progress with `suppressed` set (sorted, distinct), or without the field when there are none. */
function withSuppressed(
  progress: Pick<RecipientProgress, 'accepted' | 'rejected'>,
  suppressed: readonly number[] | undefined,
): RecipientProgress {
  const { accepted, rejected } = progress;
  return suppressed === undefined || suppressed.length === 0
    ? { accepted, rejected }
    : { accepted, rejected, suppressed: sorted(new Set(suppressed)) };
}

/**
 * An operator's manual retry of a failed, dead or unknown message (DESIGN §3): every recipient not
 * yet accepted is pending again — the rejected and the suppressed alike (the sender screens the
 * suppression list again before the attempt, so one still on it stays out). The accepted stay
 * settled: a recipient the relay accepted is never sent the message again.
 */
export function progressAfterManualRetry(progress: RecipientProgress): RecipientProgress {
  return { accepted: progress.accepted, rejected: [], suppressed: [] };
}
