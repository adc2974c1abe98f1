/**
 * The table as the API uses it (DESIGN §3, §4): enqueue writes, reads, the state machine's
 * transitions and the listing, in the API's words. The DynamoDB adapter is store/apiStore.ts.
 */
import type { ShardPosition } from '../core/listPages.js';
import type { QuietHours } from '../core/localTime.js';
import type { MessageStatus } from '../core/messageStatus.js';
import type { RefusedRecord } from '../core/recordLayout.js';
import type { MessageBodyRecord, MessageStateRecord } from '../store/messageRecord.js';
import type { SuppressionList } from './SuppressionList.js';

/** The two records of one enqueued message (store/outboxRecords.ts builds them). */
export interface EnqueueRecords {
  readonly messageId: string;
  readonly state: MessageStateRecord;
  readonly body: MessageBodyRecord;
  /**
   * A grouped message's head as read before the records were made (null: none; undefined: not
   * read): the write raises the head only above it (store/groupHead.ts).
   */
  readonly groupHeadVersion?: number | null | undefined;
  /** How many replicas that head's last raise wrote: a raise writes at least as many. */
  readonly groupHeadReplicas?: number | undefined;
  /** POSTDATE_RETENTION_DAYS: how long a body beside no live state record holds the key (0208). */
  readonly retentionDays: number;
}

/** What the replay rule reads of a body item, and the template version it renders (DESIGN §10). */
export type BodyStamp = Pick<MessageBodyRecord, 'fingerprint' | 'created_at' | 'template'>;

/** The outcome of an enqueue write (the transaction, or one conditional put). */
export type EnqueueWriteResult =
  | { readonly kind: 'written' }
  /** The message's state or body exists: a request with this key came first. Read it back. */
  | { readonly kind: 'exists' }
  /** The group head moved between our read and our write: read it again. */
  | { readonly kind: 'group-moved' }
  /** A concurrent transaction on the same items, or an id collision: try again. */
  | { readonly kind: 'contended' };

export type TransitionResult =
  | { readonly kind: 'updated'; readonly state: MessageStateRecord }
  | { readonly kind: 'not-found' }
  /** The record is not in a status the transition leaves from; `current` is what it is now. */
  | { readonly kind: 'conflict'; readonly current: MessageStateRecord }
  /** Reschedule only: the new send time is not before the message's `not_after`. */
  | { readonly kind: 'past-deadline'; readonly current: MessageStateRecord };

export interface GroupHeadView {
  readonly version: number;
  readonly updated_at: string;
}

export interface ListQuery {
  readonly tenant: string;
  readonly status: MessageStatus | null;
  readonly limit: number;
  /** The clock: a record past its retention at `now` is not listed (decision 0205). */
  readonly now: Date;
  /** One position per shard of the index used (`by_status` with a status, `by_tenant` without). */
  readonly positions: readonly ShardPosition[];
}

export interface ListPage {
  readonly items: readonly MessageStateRecord[];
  readonly positions: readonly ShardPosition[];
}

/** The table as the API uses it. */
export interface ApiStore {
  /**
   * The fingerprint, creation time and template pin of a message's body, strongly consistent; null
   * when absent or past its retention at `now`.
   */
  readBodyStamp(id: string, now: Date): Promise<BodyStamp | null>;
  /**
   * A group head's version and how many replicas hold it (null: none), from one replica at random.
   * `consistent: false` reads it eventually consistently (half the read units): enough for an
   * enqueue's first try, since heads only grow.
   */
  readGroupHead(
    tenant: string,
    groupKey: string,
    options?: { consistent?: boolean },
  ): Promise<{ readonly version: number; readonly replicas: number } | null>;
  /**
   * Writes a message's records in one transaction (a grouped message: its head moves with it; an
   * orphan body under the key is replaced, decision 0208).
   */
  writeEnqueue(records: EnqueueRecords): Promise<EnqueueWriteResult>;
  /**
   * Deletes a body this request just wrote, if it is still the one it wrote (same fingerprint and
   * creation time): the key turned out to belong to a message whose own body had expired.
   */
  deleteOwnBody(id: string, stamp: Pick<MessageBodyRecord, 'fingerprint' | 'created_at'>): Promise<void>;
  /**
   * One conditional put of a record that must not exist yet, or whose retention ran out at the
   * record's `created_at` (an ungrouped message, item by item).
   */
  putNew(record: MessageStateRecord | MessageBodyRecord): Promise<EnqueueWriteResult>;
  /**
   * The state record, or null when it does not exist, belongs to another tenant or is past its
   * retention at `now` (being deleted: gone, decision 0205).
   */
  getMessage(tenant: string, id: string, now: Date): Promise<MessageStateRecord | null>;
  /**
   * The state record as GET shows it: a newer writer's as its refusal (core/recordLayout.ts), never
   * as absent; null as for getMessage.
   */
  showMessage(tenant: string, id: string, now: Date): Promise<MessageStateRecord | RefusedRecord | null>;
  /** Cancels; the state record and the body expire at `expiresAt` (core/messageLifetime.ts). */
  cancel(input: { tenant: string; id: string; now: Date; expiresAt: number }): Promise<TransitionResult>;
  /**
   * Moves `send_at` (and `rev + 1`); a scheduled message has no TTL, however far it moves. A
   * `timeZone` or `quietHours` given replace the stored ones (docs/design.md §16).
   */
  reschedule(input: {
    tenant: string;
    id: string;
    now: Date;
    sendAt: string;
    timeZone?: string;
    quietHours?: QuietHours;
  }): Promise<TransitionResult>;
  /**
   * Retries now: every recipient not yet accepted is pending again, the message may make
   * `maxAttempts` (POSTDATE_MAX_ATTEMPTS) more attempts, as after a DLQ redrive, and a discarded
   * message's TTLs (state and body) come off.
   */
  retry(input: { tenant: string; id: string; now: Date; maxAttempts: number }): Promise<TransitionResult>;
  /**
   * An operator's decision to leave a `failed`, `dead` or `unknown` message as it is (the CLI; no
   * route): its status stays, it stops waiting — out of the waiting gauge, its TTL and its body's
   * set to `expiresAt` — and a later retry or redrive still works.
   */
  discard(input: { tenant: string; id: string; now: Date; expiresAt: number }): Promise<TransitionResult>;
  /**
   * The body's retention made the state record's (DESIGN §2): a record that has ended carries a TTL,
   * and its body item gets the same one. Idempotent: it finishes a cancel or discard whose state
   * write landed and whose body write failed (decision 0145).
   */
  finishBodyLifetime(state: MessageStateRecord): Promise<void>;
  /** Raises the head to `version` if it is higher (a max); answers the head as it is afterwards. */
  raiseGroup(input: { tenant: string; groupKey: string; version: number; now: Date }): Promise<GroupHeadView>;
  listMessages(query: ListQuery): Promise<ListPage>;
  /** The tenants' suppression lists (DESIGN §12). */
  readonly suppressions: SuppressionList;
}
