/**
 * The transactional outbox (DESIGN §4): the DynamoDB writes that enqueue one message, as
 * `TransactWriteItem`s. An application that keeps its own data in the outbox table's account can put
 * them in the SAME `TransactWriteCommand` as its business change; the relay then picks the message up
 * from the table's stream exactly as if it came through `POST /v1/messages`. The API's enqueue builds
 * its records with this very function, so there is one definition of what a message is.
 *
 * ```ts
 * const parsed = parseEnqueueRequest(body, { now, allowedFrom, defaultFrom, maxHorizonDays });
 * if (!parsed.ok) throw new Error(parsed.problem.detail);
 * const groupHeadVersion = await readGroupHeadVersion(doc, table, tenant, parsed.value.group?.key);
 * await doc.send(new TransactWriteCommand({ TransactItems: [
 *   { Put: { TableName: 'orders', Item: order, ConditionExpression: 'attribute_not_exists(pk)' } },
 *   ...buildOutboxTransactItems({ tableName: table, tenant, idempotencyKey: `order-${order.id}`,
 *     request: parsed.value, now, groupHeadVersion }),
 * ] }));
 * ```
 *
 * The message's id is derived from (tenant, idempotency key), so its records' `attribute_not_exists`
 * conditions are the idempotency guard: the transaction fails (TransactionCanceledException) if the
 * key was already used, which is what makes a retried business transaction safe. A transaction
 * holds at most 100 items; the outbox uses 2 or 3 of them.
 */
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { fingerprint } from '../core/fingerprint.js';
import { IDEMPOTENCY_KEY_PATTERN, TENANT_PATTERN } from '../core/identifiers.js';
import { messageIdFor } from '../core/ids.js';
import {
  type EnqueueContext,
  type EnqueueRequest,
  fingerprintSource,
  parseEnqueueRequest,
} from '../core/messageSchema.js';
import { MESSAGE_STATUS } from '../core/messageStatus.js';
import type { ProblemDetails } from '../core/problem.js';
import { recipientList } from '../core/recipients.js';
import {
  bodyExpiresAtAfter,
  byStatusPk,
  byTenantPk,
  createdSortKey,
  duePk,
  expiresAtAfter,
  groupHeadPk,
  type MessageBodyRecord,
  type MessageStateRecord,
  messagePk,
} from '../store/messageRecord.js';
import { ITEM_SORT_KEY, KEY } from '../store/tableLayout.js';

/** One element of `TransactWriteCommand`'s `TransactItems` (document-client types). */
export type TransactWriteItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** Where each outbox item sits in the returned array (to read a TransactionCanceledException's reasons). */
export const OUTBOX_ITEM_INDEX = { state: 0, body: 1, groupHead: 2 } as const;

export { IDEMPOTENCY_KEY_PATTERN, TENANT_PATTERN } from '../core/identifiers.js';

const DEFAULT_RETENTION_DAYS = 30;

/** Thrown for a caller's mistake (bad tenant, bad key, invalid raw body); `problem` says what. */
export class OutboxInputError extends Error {
  override readonly name = 'OutboxInputError';
  constructor(
    message: string,
    readonly problem?: ProblemDetails,
  ) {
    super(message);
  }
}

interface OutboxCommonInput {
  readonly tableName: string;
  readonly tenant: string;
  /** The caller's idempotency key (never stored: the message id is derived from it by a SHA-256). */
  readonly idempotencyKey: string;
  readonly now: Date;
  /**
   * The group head's current version (from `readGroupHeadVersion`), or null when there is none.
   * Leave it undefined if you did not read it: the message is then written as `scheduled` and the
   * transaction fails on the head item if a higher version already exists.
   */
  readonly groupHeadVersion?: number | null | undefined;
  /** POSTDATE_RETENTION_DAYS, for the TTL of a message that is terminal at once (superseded). */
  readonly retentionDays?: number;
}

export type OutboxInput =
  | (OutboxCommonInput & { readonly request: EnqueueRequest })
  | (OutboxCommonInput & {
      /** A raw enqueue body (as for POST /v1/messages), validated here with the same rules. */
      readonly body: unknown;
      readonly validation: Omit<EnqueueContext, 'now'>;
    });

/** Everything the outbox writes, and the items that write it. */
export interface OutboxWrite {
  readonly messageId: string;
  readonly state: MessageStateRecord;
  readonly body: MessageBodyRecord;
  readonly items: TransactWriteItem[];
}

/** The `TransactWriteItem`s that enqueue one message (state, body, and the group head for a grouped one). */
export function buildOutboxTransactItems(input: OutboxInput): TransactWriteItem[] {
  return buildOutboxWrite(input).items;
}

/** The fingerprint stored on the body and the state record: SHA-256 of the canonical request minus its clock-derived send time. */
export function requestFingerprint(request: EnqueueRequest): string {
  return fingerprint(fingerprintSource(request));
}

/** Like buildOutboxTransactItems, and also returns the records it writes (the API answers with the state). */
export function buildOutboxWrite(input: OutboxInput): OutboxWrite {
  if (!TENANT_PATTERN.test(input.tenant)) {
    throw new OutboxInputError('tenant must be 1–64 of a-z, 0-9, _ and -, starting with a letter or digit');
  }
  if (!IDEMPOTENCY_KEY_PATTERN.test(input.idempotencyKey)) {
    throw new OutboxInputError('idempotencyKey must be 1–255 printable ASCII characters');
  }
  const request = requestOf(input);
  const { tableName, tenant, now } = input;
  const id = messageIdFor(tenant, input.idempotencyKey);
  const createdAt = now.toISOString();
  const head = input.groupHeadVersion ?? null;
  const superseded = request.group !== null && head !== null && head > request.group.version;
  const status = superseded ? MESSAGE_STATUS.superseded : MESSAGE_STATUS.scheduled;
  const retentionDays = input.retentionDays ?? DEFAULT_RETENTION_DAYS;
  const expiresAt = superseded ? expiresAtAfter(now, retentionDays) : undefined;
  const ttl = expiresAt === undefined ? {} : { expires_at: expiresAt };
  // The body is written once and never updated (an update would bill its whole size again), so it
  // gets its expiry now: the retention after the send time, plus the DLQ's retention so that a
  // redriven copy still finds its body. See docs/decisions.md.
  const bodyExpiresAt = expiresAt ?? bodyExpiresAtAfter(new Date(request.send_at), retentionDays);

  const requestPrint = requestFingerprint(request);
  const state: MessageStateRecord = {
    pk: messagePk(id),
    sk: ITEM_SORT_KEY.messageState,
    id,
    tenant,
    status,
    rev: 1,
    send_at: request.send_at,
    not_after: request.not_after,
    created_at: createdAt,
    updated_at: createdAt,
    attempts: 0,
    last_error: null,
    history: [],
    rcpt_total: recipientList(request).length,
    group: request.group,
    on_ambiguous: request.on_ambiguous,
    tags: request.tags,
    metadata: request.metadata,
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
    expires_at: bodyExpiresAt,
  };

  const isNew = `attribute_not_exists(${KEY.partition})`;
  const items: TransactWriteItem[] = [
    { Put: { TableName: tableName, Item: { ...state }, ConditionExpression: isNew } },
    { Put: { TableName: tableName, Item: { ...body }, ConditionExpression: isNew } },
  ];
  if (request.group !== null) {
    const headKey = {
      [KEY.partition]: groupHeadPk(tenant, request.group.key),
      [KEY.sort]: ITEM_SORT_KEY.groupHead,
    };
    items.push(
      superseded
        ? // Heads only grow, but a caller could pass a wrong head: check it, so a message is never
          // superseded by a version that does not exist.
          {
            ConditionCheck: {
              TableName: tableName,
              Key: headKey,
              ConditionExpression: '#version > :version',
              ExpressionAttributeNames: { '#version': 'version' },
              ExpressionAttributeValues: { ':version': request.group.version },
            },
          }
        : // Raise the head to this version (a max): fails if a higher version exists meanwhile.
          {
            Update: {
              TableName: tableName,
              Key: headKey,
              UpdateExpression: 'SET #version = :version, #updated = :now',
              ConditionExpression: `attribute_not_exists(${KEY.partition}) OR #version <= :version`,
              ExpressionAttributeNames: { '#version': 'version', '#updated': 'updated_at' },
              ExpressionAttributeValues: { ':version': request.group.version, ':now': createdAt },
            },
          },
    );
  }
  return { messageId: id, state, body, items };
}

function requestOf(input: OutboxInput): EnqueueRequest {
  if ('request' in input) return input.request;
  const parsed = parseEnqueueRequest(input.body, { ...input.validation, now: input.now });
  if (!parsed.ok)
    throw new OutboxInputError(`invalid enqueue body: ${parsed.problem.detail}`, parsed.problem);
  return parsed.value;
}
