import type { MessageText, StoredAttachment } from '../core/attachments.js';
import type { QuietHours } from '../core/localTime.js';
import type { GroupRef } from '../core/messageSchema.js';
import { isMessageStatus, type MessageStatus } from '../core/messageStatus.js';
import type { ErrorClass } from '../core/postdateError.js';
import type { PinnedTemplate } from '../core/templateRequests.js';
import { INDEX_SHARDS, ITEM_SORT_KEY, KEY, PARTITION_PREFIX } from './tableLayout.js';

/**
 * The items of the outbox table as the code sees them. Times are ISO-8601 UTC strings with
 * milliseconds (`2026-12-01T09:00:00.000Z`): fixed width, so they compare correctly as strings in
 * DynamoDB conditions and key conditions. See docs/data-model.md.
 */

export interface LastError {
  readonly class: ErrorClass;
  readonly code: string | null;
  readonly enhanced_code: string | null;
  readonly message: string;
}

/**
 * One recipient's own reply in an attempt (DESIGN §3): by its position in the message's recipient
 * list (`to`, `cc`, `bcc`) and its domain, never its address; the reply short and redacted.
 */
export interface RecipientReply {
  readonly position: number;
  readonly domain: string;
  /** `deferred`: a 4xx, still pending; `rejected`: a 5xx, never sent to by this message. */
  readonly outcome: 'deferred' | 'rejected';
  readonly code: string | null;
  readonly enhanced_code: string | null;
  readonly reply: string | null;
}

/** One entry of the capped attempt history (newest last). Reply text is short and redacted. */
export interface AttemptRecord {
  readonly at: string;
  /** `sent`, or the error class, or `expired`/`superseded`/`early` bookkeeping outcomes are NOT attempts. */
  readonly outcome: 'sent' | ErrorClass;
  readonly code: string | null;
  readonly enhanced_code: string | null;
  readonly reply: string | null;
  readonly duration_ms: number;
  /** The domains of the recipients the relay rejected for good (5xx at RCPT TO) in this attempt. */
  readonly rejected_domains?: readonly string[];
  /**
   * The recipients the relay answered on their own (refused at RCPT TO), at most
   * MAX_RECIPIENT_REPLIES in envelope order; every other recipient of the attempt had its reply.
   */
  readonly recipients?: readonly RecipientReply[];
  /** Refused recipients left out of `recipients` by its bound. */
  readonly recipients_omitted?: number;
  /** The relay's own id from its final 250 reply, when it named one (core/providerMessageId.ts). */
  readonly provider_message_id?: string;
  /** The relay the attempt went through (DESIGN §15); absent on attempts recorded before failover. */
  readonly relay?: string;
}

/** The small, mutable state record: `pk = MSG#{id}`, `sk = STATE`. The relay's stream reads only these. */
export interface MessageStateRecord {
  readonly pk: string;
  readonly sk: typeof ITEM_SORT_KEY.messageState;
  readonly id: string;
  readonly tenant: string;
  readonly status: MessageStatus;
  readonly rev: number;
  /**
   * The layout its writer followed (core/recordLayout.ts RECORD_LAYOUT, decision 0166): a stack
   * refuses a record of a newer one. Absent on records written before layouts (layout 1).
   */
  readonly layout?: number;
  readonly send_at: string;
  readonly not_after: string | null;
  readonly created_at: string;
  readonly updated_at: string;
  /** SMTP attempts made so far. */
  readonly attempts: number;
  readonly last_error: LastError | null;
  readonly history: readonly AttemptRecord[];
  readonly group: GroupRef | null;
  readonly on_ambiguous: 'retry' | 'hold';
  readonly tags: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, string>>;
  /** A template message's template and pinned version (DESIGN §10); absent on an inline message. */
  readonly template?: PinnedTemplate;
  /** The attachments (DESIGN §13): what each is and its key in the bucket; absent when none. */
  readonly attachments?: readonly StoredAttachment[];
  /**
   * The IANA zone the message's local time and quiet hours are read in (docs/design.md §16 Local
   * time and quiet hours); absent when none was given. `send_at` stays the instant, fixed at enqueue.
   */
  readonly time_zone?: string;
  /** Quiet hours in `time_zone`: a copy that comes due inside them is held until their end. */
  readonly quiet_hours?: QuietHours;
  /**
   * The request's fingerprint, as on the body: a replay is told from a reused key by it for as long
   * as the state record lives, even after the body expired. Absent on records written before it.
   */
  readonly fingerprint?: string;
  /**
   * Written by the api on a message due now whose copy it puts on the send queue itself
   * (POSTDATE_API_IMMEDIATE_COPY): the relay then holds its own copy of the INSERT back a few
   * seconds, as the backup it is (relay/relayRecords.ts).
   */
  readonly api_copy?: true;
  readonly lease_owner?: string;
  readonly lease_until?: string;
  /** While `sending`: the relay the lease sends through, for a takeover's attempt (DESIGN §15). */
  readonly lease_relay?: string;
  readonly sent_at?: string;
  /** The relay's id from the last accepted attempt, absent when it named none (DESIGN §5; decision 0124). */
  readonly provider_message_id?: string;
  /** The relay of that attempt, or before any was accepted of the last attempt (DESIGN §15; decision 0124). */
  readonly relay?: string;
  /** The attempt count at which the message becomes `dead`; POSTDATE_MAX_ATTEMPTS when absent (a redrive raises it). */
  readonly attempt_limit?: number;
  /** On a `dead` record: the SQS message id of the copy the sender moves to the DLQ. */
  readonly dead_copy?: string;
  /**
   * On a `dead` record, written with the death since decision 0149: its name, the attempts it died
   * with, which its DLQ copy carries (`"death"`); only that copy redrives it (core/sendDecision.ts).
   */
  readonly death?: number;
  /** Recipients in the body's list (to, cc, bcc), when the enqueue recorded it. */
  readonly rcpt_total?: number;
  /**
   * Each position's mailbox as the position that first names it (core/recipients.ts
   * `mailboxPlaces`), recorded at enqueue when a mailbox is named twice: the send rate counts it once
   * (decision 0248). Absent: each position its own mailbox.
   */
  readonly rcpt_places?: readonly number[];
  /** Positions in that list the relay accepted, and rejected for good (core/recipients.ts). */
  readonly rcpt_accepted?: readonly number[];
  readonly rcpt_rejected?: readonly number[];
  /** Positions left out because they were on the tenant's suppression list at send time (DESIGN §12). */
  readonly rcpt_suppressed?: readonly number[];
  /**
   * Index keys (docs/data-model.md). `due_pk`/`due_at` are absent on final records; a record that
   * waits for an operator sits in a waiting partition (`wait#{status}#{shard}`, since when), a `dead`
   * one in `owed#dead#{shard}` until its DLQ copy's put is recorded.
   */
  readonly lst_pk: string;
  readonly lst_sk: string;
  readonly tnt_pk: string;
  readonly tnt_sk: string;
  readonly due_pk?: string;
  readonly due_at?: string;
  /**
   * TTL, epoch seconds, set when the message ends for good (a final status, or an operator's
   * discard), and on its body with it (core/messageLifetime.ts). Absent while it lives or waits.
   */
  readonly expires_at?: number;
  /**
   * A small message's body, inside its state record instead of an item of its own (written once, at
   * enqueue, by the api when that costs fewer write units: store/bodyContent.ts `placeBody`; docs/data-model.md).
   * It lives and expires with the record. Absent when the body is the `BODY` item.
   */
  readonly body?: InlineBody;
  /** The sweeper's re-dispatches of the current stall, and the `due_at` it set (core/sweepDecision.ts). */
  readonly sweep_count?: number;
  readonly sweep_due_at?: string;
  /** When an operator decided to leave a failed, dead or unknown message as it is (it stopped waiting). */
  readonly discarded_at?: string;
  /** When the sweeper last re-dispatched this message. */
  readonly swept_at?: string;
}

/**
 * The body item, written once at enqueue and read by the sender: `pk = MSG#{id}`, `sk = BODY`. Its
 * only later write is its TTL, set when the message ends for good (core/messageLifetime.ts). It is
 * written before the state record and carries the request's fingerprint, so a replayed request is
 * told apart from a reused key (docs/decisions/, "The id is the idempotency guard").
 */
export interface MessageBodyRecord extends MessageText {
  readonly pk: string;
  readonly sk: typeof ITEM_SORT_KEY.messageBody;
  /** SHA-256 of the canonical request minus its clock-derived send time (outboxItems.requestFingerprint). */
  readonly fingerprint: string;
  readonly created_at: string;
  /** '' on a template message: its subject, text and html are rendered at send time. */
  readonly subject: string;
  /** A template message's template and pinned version (DESIGN §10). */
  readonly template?: PinnedTemplate;
  /** A template message's data, as the JSON text it was given in (kept exactly; no DynamoDB number limits). */
  readonly data_json?: string;
  readonly expires_at?: number;
}

/**
 * A body inside its state record: the body item's envelope and content (plain, or the subject, text
 * and html compressed as in the body item: store/bodyContent.ts), without what the state record
 * holds already (keys, fingerprint, creation time, the template's pin) or a TTL of its own.
 */
export type InlineBody = Omit<
  MessageBodyRecord,
  'pk' | 'sk' | 'fingerprint' | 'created_at' | 'template' | 'expires_at' | 'subject' | 'text' | 'html'
> & {
  readonly subject?: string;
  readonly text?: string | null;
  readonly html?: string | null;
  readonly content_encoding?: 'br';
  readonly content?: Uint8Array;
};

export const messagePk = (id: string): string => `${PARTITION_PREFIX.message}${id}`;
export const groupHeadPk = (tenant: string, groupKey: string): string =>
  `${PARTITION_PREFIX.groupHead}${tenant}#${groupKey}`;

/** A stable shard in [0, shards) from a hash of the id (ids are hashes or end in random bits). */
export function shardOf(id: string, shards: number): number {
  let hash = 0;
  for (let i = 0; i < id.length; i++) hash = (hash * 31 + id.charCodeAt(i)) >>> 0;
  return hash % shards;
}

/** Index partition keys of one shard (the readers fan out over the shards with these). */
export const byStatusShardPk = (tenant: string, status: MessageStatus, shard: number): string =>
  `${tenant}#${status}#${shard}`;
export const byTenantShardPk = (tenant: string, shard: number): string => `${tenant}#${shard}`;
export const dueShardPk = (shard: number): string => `due#${shard}`;
/**
 * The `due` index's waiting partitions: messages that wait for an operator (failed, dead, unknown),
 * `due_at` = since when. The sweeper's overdue reads never look here; its gauge counts them.
 */
export const waitingShardPk = (status: MessageStatus, shard: number): string => `wait#${status}#${shard}`;
/**
 * The `due` index's partitions of live `dead` messages whose DLQ copy is not known to be there: from
 * the death until its copy's put is recorded (store/deadLetterEntry.ts), `due_at` = since when. The
 * sweeper's gauge counts them with the waiting ones, and it makes the copy of one left here
 * (decision 0159).
 */
export const uncopiedDeadShardPk = (shard: number): string => `owed#dead#${shard}`;

/** Index partition keys of one message (the writers set these). */
export const byStatusPk = (tenant: string, status: MessageStatus, id: string): string =>
  byStatusShardPk(tenant, status, shardOf(id, INDEX_SHARDS.byStatus));
export const byTenantPk = (tenant: string, id: string): string =>
  byTenantShardPk(tenant, shardOf(id, INDEX_SHARDS.byTenant));
export const duePk = (id: string): string => dueShardPk(shardOf(id, INDEX_SHARDS.due));
export const waitingPk = (status: MessageStatus, id: string): string =>
  waitingShardPk(status, shardOf(id, INDEX_SHARDS.waiting));
export const uncopiedDeadPk = (id: string): string => uncopiedDeadShardPk(shardOf(id, INDEX_SHARDS.waiting));
export const createdSortKey = (createdAt: string, id: string): string => `${createdAt}#${id}`;
/** `{created_at}#{id}` → id (ids never contain `#`). */
export const idOfCreatedSortKey = (sortKey: string): string => sortKey.slice(sortKey.lastIndexOf('#') + 1);
/** `{created_at}#{id}` → created_at. */
export const createdAtOfSortKey = (sortKey: string): string => sortKey.slice(0, sortKey.lastIndexOf('#'));

/** A TTL value (`expires_at`, epoch seconds): the rule that uses it is core/messageLifetime.ts. */
export { expiresAtAfter } from '../core/messageLifetime.js';

/** Whether an item read from the table is a state record with the fields every reader relies on. */
export function isMessageStateRecord(value: unknown): value is MessageStateRecord {
  const item = asItem(value);
  return (
    item !== undefined &&
    item[KEY.sort] === ITEM_SORT_KEY.messageState &&
    typeof item.id === 'string' &&
    typeof item.tenant === 'string' &&
    typeof item.rev === 'number' &&
    isMessageStatus(item.status) &&
    typeof item.send_at === 'string'
  );
}

/** Whether an item read from the table is a body record the sender can send. */
export function isMessageBodyRecord(value: unknown): value is MessageBodyRecord {
  const item = asItem(value);
  return (
    item !== undefined &&
    item[KEY.sort] === ITEM_SORT_KEY.messageBody &&
    typeof item.from === 'string' &&
    Array.isArray(item.to) &&
    typeof item.subject === 'string'
  );
}

function asItem(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}
