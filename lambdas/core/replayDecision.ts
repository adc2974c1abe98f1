/**
 * The idempotent-replay rule (DESIGN §3, §4), in one place: what a request whose message id already
 * has records becomes. The id is derived from (tenant, Idempotency-Key), so a record of it is this
 * key's earlier request, or one still being written; the fingerprint tells a replay (200, the stored
 * message) from a reused key (422). The api reads the records and acts on the answer
 * (api/routes/enqueue.ts); nothing here reads or writes.
 */
import { bodyOrphaned } from './messageLifetime.js';
import { isTerminal, type MessageStatus } from './messageStatus.js';

/** The message's records as read after a conditional write found them (or before, for a rejected request). */
export interface StoredAttempt {
  /**
   * The state record, when it exists; `body` is the body it carries inside (store/bodyContent.ts
   * `placeBody`), when it does: a `BODY` item beside such a record is never read.
   */
  readonly state?: {
    readonly status: MessageStatus;
    readonly fingerprint?: string | undefined;
    readonly body?: object | undefined;
  } | null;
  /**
   * The body's stamp, read only when the state record cannot decide: it does not exist, or was
   * written before state records carried the fingerprint.
   */
  readonly body?: { readonly fingerprint: string; readonly created_at: string } | null;
}

export interface ReplayInput extends StoredAttempt {
  /** This request's fingerprint; undefined when it is no valid message (it can replay nothing). */
  readonly ours: string | undefined;
  /** This request put its own body before it found the state record (an ungrouped enqueue). */
  readonly wroteBody: boolean;
  /** A grouped message is written in one transaction: a body alone is never a dead enqueue of it. */
  readonly grouped: boolean;
  readonly now: Date;
  readonly retentionDays: number;
}

export type ReplayDecision =
  /** The stored message is this request's: answer it (200), write nothing. */
  | { readonly kind: 'replay'; readonly undoOwnBody: boolean }
  /** The key was used for another request (422); the original is never touched. */
  | { readonly kind: 'key-reused'; readonly undoOwnBody: boolean }
  /** An enqueue of this same request died between its two puts: write its state record now. */
  | { readonly kind: 'complete' }
  /** Another request's first write is in flight (or a record expired under us): read again. */
  | { readonly kind: 'in-flight' }
  /**
   * No live message holds the key: an orphan body (core/messageLifetime.ts `bodyOrphaned`) beside a
   * state record past its retention or none. Write the new message over it in one transaction, whose
   * state condition guards both (decision 0208).
   */
  | { readonly kind: 'replace' };

/** Whether the body's stamp must be read to decide (the state record is missing or carries no fingerprint). */
export function needsBodyStamp(attempt: Pick<ReplayInput, 'state' | 'wroteBody'>): boolean {
  return attempt.state == null || (attempt.state.fingerprint === undefined && !attempt.wroteBody);
}

/**
 * Decides a request against the records its id already has. The state record's fingerprint decides
 * while it lives (the body may have expired before it). A body this request put beside an ended
 * message (whose own body expired), beside a record that carries its body inside (placed otherwise
 * at another time: a record marked `api_copy` is larger) or under another request's key is undone:
 * a replay writes nothing, and a reuse never gives the original new content. A live message's body
 * carries no TTL, so a body this request could put beside a record without one inside is the one it
 * reads (a racing identical request completed the message with it) and stays.
 */
export function decideReplay(input: ReplayInput): ReplayDecision {
  const { ours, state, body, wroteBody } = input;
  if (state != null) {
    const readsOurBody =
      !isTerminal(state.status) &&
      state.body === undefined &&
      ours !== undefined &&
      (state.fingerprint ?? ours) === ours;
    const undoOwnBody = wroteBody && !readsOurBody;
    // A state record written before it carried the fingerprint: the body's decides, if it is not ours.
    const stored = state.fingerprint ?? (wroteBody ? undefined : body?.fingerprint);
    return ours !== undefined && stored === ours
      ? { kind: 'replay', undoOwnBody }
      : { kind: 'key-reused', undoOwnBody };
  }
  if (body == null) return { kind: 'in-flight' };
  if (bodyOrphaned(body.created_at, input.now, input.retentionDays)) return { kind: 'replace' };
  if (ours === undefined || body.fingerprint !== ours) return { kind: 'key-reused', undoOwnBody: false };
  // Within messageLifetime.ts `resumeWindowMs`: an enqueue that died between its two puts.
  return input.grouped ? { kind: 'key-reused', undoOwnBody: false } : { kind: 'complete' };
}
