import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { newMessageId } from '../../lambdas/core/ids.js';
import { isTerminal, type MessageStatus } from '../../lambdas/core/messageStatus.js';
import { buildOutboxWrite, type TransactWriteItem } from '../../lambdas/outbox/index.js';
import {
  byStatusPk,
  byTenantPk,
  createdSortKey,
  duePk,
  type MessageStateRecord,
  messagePk,
} from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY } from '../../lambdas/store/tableLayout.js';
import { documentClient } from '../support/awsLocal.js';

/**
 * A valid message state record, built the way docs/data-model.md lays it out (index keys included),
 * so the relay and the sweeper can be tested without the API's enqueue code.
 */
export function stateRecord(options: {
  sendAt: Date;
  createdAt: Date;
  status?: MessageStatus;
  rev?: number;
  id?: string;
  tenant?: string;
  leaseUntil?: Date;
  /** `due_at` for a `retrying` record (the end of its backoff). */
  retryAt?: Date;
}): MessageStateRecord {
  const id = options.id ?? newMessageId(options.createdAt.getTime(), Math.random);
  const tenant = options.tenant ?? 'acme';
  const status = options.status ?? 'scheduled';
  const createdAt = options.createdAt.toISOString();
  const dueAt =
    status === 'sending'
      ? options.leaseUntil?.toISOString()
      : status === 'retrying'
        ? options.retryAt?.toISOString()
        : options.sendAt.toISOString();
  return {
    pk: messagePk(id),
    sk: ITEM_SORT_KEY.messageState,
    id,
    tenant,
    status,
    rev: options.rev ?? 1,
    send_at: options.sendAt.toISOString(),
    not_after: null,
    created_at: createdAt,
    updated_at: createdAt,
    attempts: 0,
    last_error: null,
    history: [],
    group: null,
    on_ambiguous: 'retry',
    tags: {},
    metadata: {},
    ...(options.leaseUntil
      ? { lease_owner: 'sender-test', lease_until: options.leaseUntil.toISOString() }
      : {}),
    lst_pk: byStatusPk(tenant, status, id),
    lst_sk: createdSortKey(createdAt, id),
    tnt_pk: byTenantPk(tenant, id),
    tnt_sk: createdSortKey(createdAt, id),
    ...(isTerminal(status) || dueAt === undefined ? {} : { due_pk: duePk(id), due_at: dueAt }),
  };
}

/**
 * The outbox helper's items for a message due now, its state record then changed the way an
 * application writing by hand, or a newer helper, would change it.
 */
export function helperItems(
  tableName: string,
  now: Date,
  key: string,
  change: (item: Record<string, unknown>) => Record<string, unknown> = (item) => item,
): { id: string; items: TransactWriteItem[] } {
  const write = buildOutboxWrite({
    tableName,
    tenant: 'acme',
    idempotencyKey: key,
    now,
    body: { to: ['ada@example.org'], from: 'ops@example.com', subject: 'Hi', text: 'Hello.' },
    validation: { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 },
  });
  const [state, ...rest] = write.items;
  const item = change({ ...(state?.Put?.Item ?? {}) });
  return {
    id: write.messageId,
    items: [{ Put: { ...state?.Put, TableName: tableName, Item: item } }, ...rest],
  };
}

/** The writes the API and the sender make, reduced to what the relay and the sweeper see. */
export class OutboxWriter {
  private readonly documents = documentClient();

  constructor(private readonly tableName: string) {}

  async put(record: MessageStateRecord): Promise<MessageStateRecord> {
    await this.documents.send(new PutCommand({ TableName: this.tableName, Item: record }));
    return record;
  }

  /** An item of another kind in the same partition (the body), which the stream filter keeps out. */
  async putBody(id: string): Promise<void> {
    await this.documents.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { pk: messagePk(id), sk: ITEM_SORT_KEY.messageBody, subject: 'Hello', text: 'Hi' },
      }),
    );
  }

  /** PATCH /v1/messages/{id}: rev + 1, new send_at and due_at. */
  async reschedule(id: string, sendAt: Date): Promise<void> {
    await this.documents.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: messagePk(id), sk: ITEM_SORT_KEY.messageState },
        UpdateExpression: 'SET rev = rev + :one, send_at = :at, due_at = :at',
        ConditionExpression: '#status = :scheduled',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':one': 1, ':at': sendAt.toISOString(), ':scheduled': 'scheduled' },
      }),
    );
  }

  /** DELETE /v1/messages/{id}, or any move to a terminal status: due keys removed. */
  async finish(id: string, status: MessageStatus): Promise<void> {
    await this.documents.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: messagePk(id), sk: ITEM_SORT_KEY.messageState },
        UpdateExpression: 'SET #status = :status REMOVE due_pk, due_at',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': status },
      }),
    );
  }

  /** A sender's claim: `sending` with a lease; the rev does not change (the relay ignores it). */
  async claim(id: string, leaseUntil: Date): Promise<void> {
    await this.documents.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: messagePk(id), sk: ITEM_SORT_KEY.messageState },
        UpdateExpression: 'SET #status = :sending, lease_until = :until, due_at = :until',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':sending': 'sending', ':until': leaseUntil.toISOString() },
      }),
    );
  }

  /** POST /v1/messages/{id}/retry on a failed message: back to `scheduled`, rev + 1, due now. */
  async retry(id: string, now: Date): Promise<void> {
    await this.documents.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: messagePk(id), sk: ITEM_SORT_KEY.messageState },
        UpdateExpression:
          'SET #status = :scheduled, rev = rev + :one, send_at = :now, due_pk = :duePk, due_at = :now',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':scheduled': 'scheduled',
          ':one': 1,
          ':now': now.toISOString(),
          ':duePk': duePk(id),
        },
      }),
    );
  }
}
