/**
 * The records one enqueue writes (DESIGN §4) and the DynamoDB items that write them: the one
 * definition of what a message is, used by the API's store adapter and by the public outbox
 * (lambdas/outbox/outboxItems.ts) alike.
 *
 * The message's id is derived from (tenant, idempotency key), so the records' conditions are the
 * idempotency guard: a record must not exist, or its retention ran out (`newMessageCondition`). A transaction holds at most 100 items; the outbox uses
 * 2 + N (N: the group head's replicas when a group's version rises, else 0; 1 + N with the body inline).
 */

import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { StoredAttachment } from '../core/attachments.js';
import { messageIdFor } from '../core/ids.js';
import {
  bodyReplaceableCondition,
  lifetimeChange,
  retentionRanOutCondition,
} from '../core/messageLifetime.js';
import { type EnqueueRequest, requestFingerprint } from '../core/messageSchema.js';
import { MESSAGE_STATUS } from '../core/messageStatus.js';
import { mailboxPlaces, recipientList } from '../core/recipients.js';
import { RECORD_LAYOUT } from '../core/recordLayout.js';
import type { PinnedTemplate } from '../core/templateRequests.js';
import type { EnqueueRecords } from '../ports/ApiStore.js';
import { placeBody, storedBodyItem } from './bodyContent.js';
import { groupHeadItems, groupHeadStep, replicasToWrite } from './groupHead.js';
import {
  byStatusPk,
  byTenantPk,
  createdSortKey,
  duePk,
  type MessageBodyRecord,
  type MessageStateRecord,
  messagePk,
} from './messageRecord.js';
import { ITEM_SORT_KEY, KEY } from './tableLayout.js';

/** One element of `TransactWriteCommand`'s `TransactItems` (document-client types). */
export type TransactWriteItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * Where each outbox item sits in the returned array (to read a TransactionCanceledException's
 * reasons), for records whose body is an item of its own, as the public outbox helper writes them.
 */
export const OUTBOX_ITEM_INDEX = { state: 0, body: 1, groupHead: 2 } as const;

/** The same for any records: without a body item (its body inside the state record), the head is second. */
export function outboxItemIndex(records: EnqueueRecords): {
  readonly state: number;
  readonly body: number | undefined;
  readonly groupHead: number;
} {
  return records.state.body === undefined
    ? OUTBOX_ITEM_INDEX
    : { state: OUTBOX_ITEM_INDEX.state, body: undefined, groupHead: OUTBOX_ITEM_INDEX.body };
}

const DEFAULT_RETENTION_DAYS = 30;

export interface OutboxRecordsInput {
  readonly tenant: string;
  /** The caller's idempotency key (never stored: the message id is derived from it by a SHA-256). */
  readonly idempotencyKey: string;
  readonly request: EnqueueRequest;
  readonly now: Date;
  /**
   * The group head's current version (from `readGroupHeadVersion`), or null when there is none.
   * Leave it undefined if you did not read it: the message is then written as `scheduled`, the head
   * is rewritten to its version, and the transaction fails on the head item if a higher version
   * already exists. Read, the head is written only when the message's version rises above it.
   */
  readonly groupHeadVersion?: number | null | undefined;
  /**
   * How many replicas hold the group's head (store/groupHead.ts): the count the head read had, or,
   * for the public outbox, the stack's POSTDATE_GROUP_HEAD_REPLICAS. A raise writes at least as many;
   * fewer than the group has fails the transaction on the head (never a stale replica).
   */
  readonly groupHeadReplicas?: number | undefined;
  /** POSTDATE_RETENTION_DAYS, for the TTL of a message that is terminal at once (superseded). */
  readonly retentionDays?: number;
  /**
   * A template message whose request names no version: the version it is pinned to (the latest when
   * it was validated). Ignored for an inline message or when the request names a version.
   */
  readonly templateVersion?: number;
  /**
   * The api puts the copy of a message due within {@link API_COPY_HORIZON_SECONDS} on the send queue
   * itself (POSTDATE_API_IMMEDIATE_COPY), delayed until it is due: such a state record says so
   * (`api_copy`), and the relay holds its own copy back.
   */
  readonly apiCopy?: boolean;
  /**
   * The attachments, stored in the bucket before the records are written (DESIGN §13): the state
   * record keeps what each is and where its bytes are; absent or empty: none.
   */
  readonly attachments?: readonly StoredAttachment[];
  /**
   * The api: a small body goes inside the state record when that costs fewer write units
   * (store/bodyContent.ts `placeBody`), and the message is one item. The public outbox helper leaves
   * it out: an application may upgrade this package before its stack's sender.
   */
  readonly bodyInline?: boolean;
}

/** The template and version a message's records pin, or null for an inline message. */
export function pinnedTemplateOf(
  request: EnqueueRequest,
  templateVersion: number | undefined,
): PinnedTemplate | null {
  const template = request.template;
  if (template == null) return null;
  const version = template.version ?? templateVersion;
  if (version === undefined)
    throw new TypeError('a template message needs its version: the request names none and none was resolved');
  return { name: template.name, version };
}

/**
 * The api's own copy goes to messages due within this (docs/decisions/0111-api-copy-for-short-delays.md):
 * a copy the relay puts on the queue waits behind whatever the stream holds before it, so a message
 * due in 3 s enqueued during a burst left seconds late; one due in a minute or more is on the queue
 * long before its time either way.
 */
export const API_COPY_HORIZON_SECONDS = 60;

/** The records that enqueue one message. Pure: the clock is `now`. */
export function outboxRecords(input: OutboxRecordsInput): EnqueueRecords {
  const { request, tenant, now } = input;
  const id = messageIdFor(tenant, input.idempotencyKey);
  const createdAt = now.toISOString();
  const head = input.groupHeadVersion ?? null;
  const superseded = request.group !== null && head !== null && head > request.group.version;
  const status = superseded ? MESSAGE_STATUS.superseded : MESSAGE_STATUS.scheduled;
  // A live message has no TTL on either record, however long it waits; one superseded at enqueue
  // has ended already, and both records get the retention from now (core/messageLifetime.ts).
  const lifetime = lifetimeChange({
    currentExpiresAt: undefined,
    to: status,
    tenant,
    now,
    retentionDays: input.retentionDays ?? DEFAULT_RETENTION_DAYS,
  });
  const ttl = lifetime.state.kind === 'set' ? { expires_at: lifetime.state.expiresAt } : {};
  const bodyTtl = lifetime.body.kind === 'set' ? { expires_at: lifetime.body.expiresAt } : {};

  const requestPrint = requestFingerprint(request);
  const template = pinnedTemplateOf(request, input.templateVersion);
  const pinned = template === null ? {} : { template };
  const recipients = recipientList(request);
  const places = mailboxPlaces(recipients);
  const state: MessageStateRecord = {
    pk: messagePk(id),
    sk: ITEM_SORT_KEY.messageState,
    id,
    tenant,
    status,
    rev: 1,
    // Every state record says the layout it was written in: a stack older than its writer (an
    // application's newer outbox helper) refuses it instead of sending it by older rules.
    layout: RECORD_LAYOUT,
    send_at: request.send_at,
    not_after: request.not_after,
    created_at: createdAt,
    updated_at: createdAt,
    attempts: 0,
    last_error: null,
    history: [],
    rcpt_total: recipients.length,
    ...(places === undefined ? {} : { rcpt_places: places }),
    group: request.group,
    on_ambiguous: request.on_ambiguous,
    tags: request.tags,
    metadata: request.metadata,
    ...pinned,
    ...(input.attachments && input.attachments.length > 0 ? { attachments: [...input.attachments] } : {}),
    ...(request.time_zone === undefined ? {} : { time_zone: request.time_zone }),
    ...(request.quiet_hours === undefined ? {} : { quiet_hours: request.quiet_hours }),
    ...(input.apiCopy === true &&
    status === MESSAGE_STATUS.scheduled &&
    Date.parse(request.send_at) <= now.getTime() + API_COPY_HORIZON_SECONDS * 1000
      ? { api_copy: true as const }
      : {}),
    fingerprint: requestPrint,
    lst_pk: byStatusPk(tenant, status, id),
    lst_sk: createdSortKey(createdAt, id),
    tnt_pk: byTenantPk(tenant, id),
    tnt_sk: createdSortKey(createdAt, id),
    ...(superseded ? {} : { due_pk: duePk(id), due_at: request.send_at }),
    ...ttl,
  };
  const body: MessageBodyRecord = {
    pk: messagePk(id),
    sk: ITEM_SORT_KEY.messageBody,
    fingerprint: requestPrint,
    created_at: createdAt,
    from: request.from,
    to: request.to,
    cc: request.cc,
    bcc: request.bcc,
    reply_to: request.reply_to,
    subject: request.subject,
    text: request.text,
    html: request.html,
    headers: request.headers,
    ...(template === null ? {} : { template, data_json: JSON.stringify(request.data ?? {}) }),
    ...bodyTtl,
  };
  const placed = input.bodyInline === true ? placeBody(state, body).state : state;
  return {
    messageId: id,
    state: placed,
    body,
    retentionDays: input.retentionDays ?? DEFAULT_RETENTION_DAYS,
    groupHeadVersion: input.groupHeadVersion,
    ...(input.groupHeadReplicas === undefined ? {} : { groupHeadReplicas: input.groupHeadReplicas }),
  };
}

/**
 * The `TransactWriteItem`s that write `records` into `tableName`: both records if no live message
 * holds the key (the state record alone when it carries the body), and for a grouped message its
 * head, raised to the message's version when that rises above the head, else left alone
 * (store/groupHead.ts `groupHeadStep`; the public outbox adds its check of a head above the message).
 */
export function outboxTransactItems(
  tableName: string,
  records: EnqueueRecords,
  options: {
    readonly compressBody?: boolean;
    /** POSTDATE_GROUP_HEAD_REPLICAS: a raise writes at least this many replicas (default 1). */
    readonly groupHeadReplicas?: number;
  } = {},
): TransactWriteItem[] {
  const { state } = records;
  // The api (deployed with its sender) compresses the body; the public outbox helper writes it
  // plain by default, since an application may upgrade this package before its stack's sender.
  const body = options.compressBody === true ? storedBodyItem(records.body) : records.body;
  const now = new Date(state.created_at);
  const items: TransactWriteItem[] = [
    { Put: { TableName: tableName, Item: { ...state }, ...newMessageCondition(now) } },
  ];
  // The state's condition decides whether a live message holds the key; beside it, a body item may
  // also be an orphan's (its TTL write lost), which this message replaces (decision 0208).
  if (state.body === undefined) {
    items.push({
      Put: { TableName: tableName, Item: { ...body }, ...newBodyCondition(now, records.retentionDays) },
    });
  }
  const group = state.group;
  if (group !== null) {
    // The head moves only when this version rises above it (store/groupHead.ts).
    items.push(
      ...groupHeadItems(tableName, {
        tenant: state.tenant,
        group,
        step: groupHeadStep(records.groupHeadVersion, group.version),
        writtenAt: state.created_at,
        replicas: replicasToWrite(options.groupHeadReplicas ?? 1, records.groupHeadReplicas),
      }),
    );
  }
  return items;
}

/**
 * The condition of a put that writes one of a new message's records at `now` (its `created_at`): no
 * item under its key, or one whose retention ran out (core/messageLifetime.ts `retentionRanOut`,
 * decision 0205). DynamoDB deletes an expired item days after its TTL and reads return it until
 * then; the key is free from the TTL on, whenever the deleter runs. The put replaces the whole item
 * (no TTL, the new message's body), and DynamoDB's deleter leaves an item whose TTL is no longer past.
 */
export function newMessageCondition(now: Date): {
  readonly ConditionExpression: string;
  readonly ExpressionAttributeNames: Record<string, string>;
  readonly ExpressionAttributeValues: Record<string, number>;
} {
  const ranOut = retentionRanOutCondition(now);
  return {
    ConditionExpression: `attribute_not_exists(${KEY.partition}) OR ${ranOut.expression}`,
    ExpressionAttributeNames: { ...ranOut.names },
    ExpressionAttributeValues: { ...ranOut.values },
  };
}

/**
 * The condition of a new message's body put, beside its state put under {@link newMessageCondition}
 * in one transaction: as that, or the body is an orphan's (core/messageLifetime.ts `bodyOrphaned`:
 * its TTL write lost, its message gone), which only the state's condition may judge (decision 0208).
 */
function newBodyCondition(
  now: Date,
  retentionDays: number,
): {
  readonly ConditionExpression: string;
  readonly ExpressionAttributeNames: Record<string, string>;
  readonly ExpressionAttributeValues: Record<string, number | string>;
} {
  const replaceable = bodyReplaceableCondition(now, retentionDays);
  return {
    ConditionExpression: `attribute_not_exists(${KEY.partition}) OR ${replaceable.expression}`,
    ExpressionAttributeNames: { ...replaceable.names },
    ExpressionAttributeValues: { ...replaceable.values },
  };
}
