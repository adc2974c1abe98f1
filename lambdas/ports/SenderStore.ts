/**
 * The table as the sender uses it (DESIGN §5, docs/data-model.md "Transitions and their writers"):
 * consistent reads and the conditional writes on the state record. A write that loses its condition
 * changes nothing and comes back as `conflict`, never as an exception. The DynamoDB adapter is
 * store/senderTransitions.ts.
 */
import type { DeadLetterPayload } from '../core/dispatchPayload.js';
import type { RecipientProgress } from '../core/recipients.js';
import type { RefusedRecord } from '../core/recordLayout.js';
import type {
  AttemptRecord,
  LastError,
  MessageBodyRecord,
  MessageStateRecord,
} from '../store/messageRecord.js';
import type { SuppressionList } from './SuppressionList.js';

/** A conditional write of the sender: applied (the record as written), or its condition lost. */
export type SenderWriteResult =
  | { readonly outcome: 'applied'; readonly record: MessageStateRecord }
  | { readonly outcome: 'conflict' };

/** A claim: the record moves to `sending`, leased to `owner` until `leaseUntil`. */
export interface ClaimInput {
  /** The record as read; the claim succeeds only if it is still exactly in that state. */
  readonly observed: MessageStateRecord;
  readonly owner: string;
  readonly now: Date;
  readonly leaseUntil: Date;
  /**
   * The relay the lease sends through (DESIGN §15), kept on the record while it is `sending`: a
   * takeover names it in the attempt the sender that died left behind. The sender always gives it.
   */
  readonly relay?: string;
  /** For a claim of a `dead` record by a copy redriven from the DLQ: its new attempt limit. */
  readonly attemptLimit?: number;
}

/** The outcome of our own send, written while we hold the lease. */
export interface OutcomeInput {
  readonly claimed: MessageStateRecord;
  readonly owner: string;
  readonly to: 'sent' | 'retrying' | 'failed' | 'dead' | 'unknown';
  readonly now: Date;
  /** What the outcome writes down: the history entry, when it joins the history. */
  readonly attempt: AttemptRecord;
  /**
   * The outcome is an attempt or ends the message (core/sendDecision.ts `joinsHistory`): `attempt`
   * joins the capped history and may name the message's relay. Otherwise (an outage, a throttle, a
   * local failure that leaves it retrying) only `last_error` records it.
   */
  readonly joinsHistory: boolean;
  readonly lastError: LastError | null;
  /** `retrying` only: when the copy comes back (the `due_at` the sweeper watches). */
  readonly retryAt?: Date;
  readonly retentionDays: number;
  /** SMTP attempts including this one when the relay saw it (DESIGN §2). */
  readonly attempts: number;
  readonly recipients: RecipientProgress;
  /** `dead` only: the SQS message id of the copy that goes to the DLQ. */
  readonly deadCopy?: string;
}

/** Our claim given back unused (a read failed before MAIL FROM): no attempt, no history entry. */
export interface ReleaseInput {
  readonly claimed: MessageStateRecord;
  readonly owner: string;
  readonly now: Date;
  /** The status it waits in again (core/sendDecision.ts `givenBackStatus`). */
  readonly to: 'scheduled' | 'retrying';
  /** When the copy comes back. */
  readonly retryAt: Date;
}

/**
 * A move without a send of ours: to a terminal status (deadline passed, group superseded), or an
 * expired lease settled (core/sendDecision.ts `interruptedAttemptBecomes`): held as `unknown`, `dead`
 * when the interrupted attempt was the last allowed one, else `retrying`, due again at once.
 */
export interface SettleUnsentInput {
  readonly observed: MessageStateRecord;
  readonly to: 'expired' | 'superseded' | 'unknown' | 'dead' | 'retrying';
  readonly now: Date;
  /** The ambiguous attempt of a sender that died holding the lease, when there was one. */
  readonly interruptedAttempt?: AttemptRecord;
  readonly lastError?: LastError;
  readonly retentionDays: number;
  /** Set when the record is `sending` under our own lease (a check after our claim). */
  readonly owner?: string;
  /** `dead` only: the SQS message id of the copy that goes to the DLQ. */
  readonly deadCopy?: string;
}

/**
 * A claimed message whose remaining recipients are all on the suppression list (DESIGN §12): it ends
 * without an SMTP transaction (no attempt, no history entry), written under our lease.
 */
export interface SettleScreenedInput {
  readonly claimed: MessageStateRecord;
  readonly owner: string;
  readonly to: 'suppressed' | 'sent' | 'failed';
  readonly now: Date;
  readonly recipients: RecipientProgress;
  readonly retentionDays: number;
  /**
   * The message shows an error once it ends so (core/sendDecision.ts `showsLastError`): the one the
   * attempts before left stays; when false, `last_error` becomes null.
   */
  readonly showsLastError: boolean;
}

/**
 * A copy due inside quiet hours goes back unsent (docs/design.md §16 Local time and quiet hours): the
 * record's `due_at` becomes the window's end, so the sweeper does not take the held message for a
 * lost one. No status, rev, attempt or history changes.
 */
export interface HoldInput {
  readonly observed: MessageStateRecord;
  readonly now: Date;
  readonly until: Date;
}

export interface SenderStore {
  /**
   * The state record, read consistently; a newer writer's as its refusal (core/recordLayout.ts);
   * undefined when there is none or it is unreadable.
   */
  readState(id: string): Promise<MessageStateRecord | RefusedRecord | undefined>;
  /**
   * The message's body: the one its state record carries (a small message), else its body item read
   * consistently; undefined when there is none or it is unreadable.
   */
  readBody(state: MessageStateRecord): Promise<MessageBodyRecord | undefined>;
  /** The group head's version, read consistently; undefined when the group has no head. */
  readGroupVersion(tenant: string, groupKey: string): Promise<number | undefined>;
  claim(input: ClaimInput): Promise<SenderWriteResult>;
  recordOutcome(input: OutcomeInput): Promise<SenderWriteResult>;
  release(input: ReleaseInput): Promise<SenderWriteResult>;
  settleUnsent(input: SettleUnsentInput): Promise<SenderWriteResult>;
  hold(input: HoldInput): Promise<SenderWriteResult>;
  settleScreened(input: SettleScreenedInput): Promise<SenderWriteResult>;
  /**
   * The body's retention made the state record's (DESIGN §2): a record whose status has ended it
   * for good carries a TTL, and its body item gets the same one; any other record leaves the body
   * alone. Idempotent: it finishes a final write whose state part landed and whose body part
   * failed. A write that moves a record to a final status does this itself after the state write.
   */
  finishBodyLifetime(state: MessageStateRecord): Promise<void>;
  /**
   * The DLQ holds the copy of this death (the sender just put it there): the record leaves the
   * partition of dead messages whose copy is owed (store/deadLetterEntry.ts, decision 0159).
   * `moved-on`: it was recorded already, or the message is no longer at this death.
   */
  recordDeadLetter(letter: DeadLetterPayload): Promise<'recorded' | 'moved-on'>;
  /** The tenants' suppression lists: read before each attempt, added to by hard bounces at RCPT. */
  readonly suppressions: SuppressionList;
}
