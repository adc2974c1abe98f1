import { randomUUID } from 'node:crypto';
/**
 * The API's view of the outbox table: the DynamoDB adapter of the ApiStore port (ports/ApiStore.ts). Every vendor error that
 * means something to the API (a lost condition, a cancelled transaction) becomes a typed outcome
 * here; anything else passes through.
 */

import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mergeShardReads } from '../core/listPages.js';
import type { QuietHours } from '../core/localTime.js';
import { lifetimeChange, retentionRanOut, type TtlWrite } from '../core/messageLifetime.js';
import { MESSAGE_STATUS, type MessageStatus, WAITING_FOR_OPERATOR } from '../core/messageStatus.js';
import { progressAfterManualRetry } from '../core/recipients.js';
import type { RefusedRecord } from '../core/recordLayout.js';
import { freshAttemptLimit } from '../core/sendDecision.js';
import { TRANSITIONS, type TransitionEvent } from '../core/stateMachine.js';
import type {
  ApiStore,
  EnqueueRecords,
  EnqueueWriteResult,
  GroupHeadView,
  ListPage,
  ListQuery,
  TransitionResult,
} from '../ports/ApiStore.js';
import { storedBodyItem } from './bodyContent.js';
import { finishBodyLifetime, takingBodyBack } from './bodyLifetime.js';
import { type GroupHead, type GroupHeadReplicas, raiseGroupHead, readGroupHead } from './groupHead.js';
import {
  byStatusPk,
  byStatusShardPk,
  byTenantShardPk,
  duePk,
  idOfCreatedSortKey,
  isMessageStateRecord,
  type MessageBodyRecord,
  type MessageStateRecord,
  messagePk,
} from './messageRecord.js';
import { newMessageCondition, outboxItemIndex, outboxTransactItems } from './outboxRecords.js';
import { readState, readStateRecord, readStateRecords } from './stateReads.js';
import { DynamoSuppressionList } from './suppressionList.js';
import { INDEX, INDEX_SHARDS, ITEM_SORT_KEY, KEY } from './tableLayout.js';

const KEEP_BODY: TtlWrite = { kind: 'keep' };

/** The statuses a transition of the state machine leaves from (the API's conditions come from it). */
export function fromStatuses(event: TransitionEvent): readonly MessageStatus[] {
  return TRANSITIONS.find((transition) => transition.event === event)?.from ?? [];
}

export function shardCount(status: MessageStatus | null): number {
  return status === null ? INDEX_SHARDS.byTenant : INDEX_SHARDS.byStatus;
}

export class DynamoApiStore implements ApiStore {
  readonly suppressions: DynamoSuppressionList;

  constructor(
    private readonly documents: DynamoDBDocumentClient,
    readonly tableName: string,
    private readonly groupHeads: GroupHeadReplicas = {},
  ) {
    this.suppressions = new DynamoSuppressionList(documents, tableName);
  }

  async readBodyStamp(id: string, now: Date) {
    const { Item } = await this.documents.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageBody },
        ProjectionExpression: 'fingerprint, created_at, #template, #expires',
        ExpressionAttributeNames: { '#template': 'template', '#expires': 'expires_at' },
        ConsistentRead: true,
      }),
    );
    if (!Item || typeof Item.fingerprint !== 'string' || typeof Item.created_at !== 'string') return null;
    // A body past its retention is being deleted: the next message under its key replaces it.
    if (retentionRanOut(Item.expires_at as number | undefined, now)) return null;
    const template = Item.template as MessageBodyRecord['template'];
    return {
      fingerprint: Item.fingerprint,
      created_at: Item.created_at,
      ...(template === undefined ? {} : { template }),
    };
  }

  async deleteOwnBody(id: string, stamp: Pick<MessageBodyRecord, 'fingerprint' | 'created_at'>) {
    try {
      await this.documents.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageBody },
          ConditionExpression: '#fp = :fp AND #created = :created',
          ExpressionAttributeNames: { '#fp': 'fingerprint', '#created': 'created_at' },
          ExpressionAttributeValues: { ':fp': stamp.fingerprint, ':created': stamp.created_at },
        }),
      );
    } catch (error) {
      // Not ours any more (or gone): nothing to undo.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async putNew(record: MessageStateRecord | MessageBodyRecord): Promise<EnqueueWriteResult> {
    try {
      await this.documents.send(
        new PutCommand({
          TableName: this.tableName,
          // A body's text and html are stored compressed when that saves units (bodyContent.ts).
          Item: record.sk === ITEM_SORT_KEY.messageBody ? { ...storedBodyItem(record) } : { ...record },
          // Nothing under its key, or a record past its retention (decision 0205).
          ...newMessageCondition(new Date(record.created_at)),
        }),
      );
      return { kind: 'written' };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return { kind: 'exists' };
      // A transaction (an outbox user's, or a reschedule's) holds the item: nothing was written.
      if (error instanceof TransactionConflictException) return { kind: 'contended' };
      throw error;
    }
  }

  readGroupHead(
    tenant: string,
    groupKey: string,
    options?: { consistent?: boolean },
  ): Promise<GroupHead | null> {
    const { groupHeadReplicas: replicas, random } = this.groupHeads;
    return readGroupHead(this.documents, this.tableName, tenant, groupKey, { ...options, replicas, random });
  }

  async writeEnqueue(records: EnqueueRecords): Promise<EnqueueWriteResult> {
    try {
      const items = outboxTransactItems(this.tableName, records, {
        compressBody: true,
        groupHeadReplicas: this.groupHeads.groupHeadReplicas ?? 1,
      });
      await this.documents.send(new TransactWriteCommand({ TransactItems: items }));
      return { kind: 'written' };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      const failed = (index: number | undefined) =>
        index !== undefined && reasons[index]?.Code === 'ConditionalCheckFailed';
      const at = outboxItemIndex(records);
      if (failed(at.state) || failed(at.body)) return { kind: 'exists' };
      // The head's items follow the message's, one per replica (store/groupHead.ts).
      if (reasons.some((_, index) => index >= at.groupHead && failed(index))) return { kind: 'group-moved' };
      // TransactionConflict (another transaction holds one of the items), throttling inside the
      // transaction: nothing was written, trying again is safe.
      return { kind: 'contended' };
    }
  }

  async getMessage(tenant: string, id: string, now: Date): Promise<MessageStateRecord | null> {
    const state = await readStateRecord(this.documents, this.tableName, id);
    return state !== undefined && isShown(state, tenant, now) ? state : null;
  }

  async showMessage(
    tenant: string,
    id: string,
    now: Date,
  ): Promise<MessageStateRecord | RefusedRecord | null> {
    const read = await readState(this.documents, this.tableName, id);
    return read !== undefined && isShown(read, tenant, now) ? read : null;
  }

  async cancel(input: {
    tenant: string;
    id: string;
    now: Date;
    expiresAt: number;
  }): Promise<TransitionResult> {
    const allowed = fromStatuses('cancel');
    const to = MESSAGE_STATUS.cancelled;
    const result = await this.transition(input.tenant, input.id, input.now, allowed, {
      UpdateExpression:
        'SET #status = :to, #updated = :now, #lst_pk = :lst_pk, #expires = :expires REMOVE #due_pk, #due_at',
      names: {
        '#updated': 'updated_at',
        '#lst_pk': 'lst_pk',
        '#expires': 'expires_at',
        '#due_pk': 'due_pk',
        '#due_at': 'due_at',
      },
      values: {
        ':to': to,
        ':now': input.now.toISOString(),
        ':lst_pk': byStatusPk(input.tenant, to, input.id),
        ':expires': input.expiresAt,
      },
    });
    // The body expires with its state record (core/messageLifetime.ts): after the cancel, so only a
    // cancelled message's body gets a TTL; a failure in between leaves a body that outlives it, until
    // the caller's retry, which finds the message cancelled, finishes it (decision 0145). A body
    // inside the record got it with the cancel.
    if (result.kind === 'updated') await this.finishBodyLifetime(result.state);
    else if (result.kind === 'conflict' && result.current.status === to)
      await this.finishBodyLifetime(result.current);
    return result;
  }

  async reschedule(input: {
    tenant: string;
    id: string;
    now: Date;
    sendAt: string;
    timeZone?: string;
    quietHours?: QuietHours;
  }): Promise<TransitionResult> {
    // A new zone or quiet hours replace the stored ones (docs/design.md §16 Local time and quiet hours).
    const local = {
      ...(input.timeZone === undefined ? {} : { time_zone: input.timeZone }),
      ...(input.quietHours === undefined ? {} : { quiet_hours: input.quietHours }),
    };
    const localSets = Object.keys(local).map((name) => `, #${name} = :${name}`);
    // A scheduled message has no TTL on either record, however far it moves: only the state changes.
    const result = await this.transition(input.tenant, input.id, input.now, fromStatuses('reschedule'), {
      UpdateExpression: `SET #send_at = :send_at, #due_at = :send_at, #updated = :now${localSets.join('')} ADD #rev :one`,
      extraCondition:
        '(attribute_not_exists(#not_after) OR attribute_type(#not_after, :null) OR #not_after > :send_at)',
      names: {
        '#send_at': 'send_at',
        '#due_at': 'due_at',
        '#updated': 'updated_at',
        '#rev': 'rev',
        '#not_after': 'not_after',
        ...Object.fromEntries(Object.keys(local).map((name) => [`#${name}`, name])),
      },
      values: {
        ':send_at': input.sendAt,
        ':now': input.now.toISOString(),
        ':one': 1,
        ':null': 'NULL',
        ...Object.fromEntries(Object.entries(local).map(([name, value]) => [`:${name}`, value])),
      },
      wouldPass: (current) =>
        current.status === MESSAGE_STATUS.scheduled &&
        (current.not_after === null || current.not_after > input.sendAt),
    });
    if (result.kind === 'conflict' && result.current.status === MESSAGE_STATUS.scheduled) {
      return { kind: 'past-deadline', current: result.current };
    }
    return result;
  }

  async retry(input: {
    tenant: string;
    id: string;
    now: Date;
    maxAttempts: number;
  }): Promise<TransitionResult> {
    const allowed = fromStatuses('manual-retry');
    // The write depends on what was read (the recipients, the attempts): if the record changed in
    // between and may still be retried (a DLQ redrive attempted it), read it again and decide again.
    for (let attempt = 0; ; attempt++) {
      const before = await this.getMessage(input.tenant, input.id, input.now);
      const result = await this.retryOnce(input, before, allowed);
      if (result.kind !== 'conflict' || attempt >= 1 || !allowed.includes(result.current.status))
        return result;
    }
  }

  private async retryOnce(
    input: { tenant: string; id: string; now: Date; maxAttempts: number },
    before: MessageStateRecord | null,
    allowed: readonly MessageStatus[],
  ): Promise<TransitionResult> {
    const to = MESSAGE_STATUS.scheduled;
    // None, another tenant's, or one past its retention (being deleted, perhaps its body first): gone.
    if (before === null) return { kind: 'not-found' };
    // A message an operator had discarded has TTLs; the retry takes it back, so they come off — the
    // body's before and after the state's (store/bodyLifetime.ts `takingBodyBack`), so that neither a
    // crash nor a discard's late body write leaves a live message whose body can expire. The
    // strongly consistent read of the small state record (1 unit) tells whether the body, billed by
    // its size, needs a write at all.
    const retried = progressAfterManualRetry({
      accepted: before.rcpt_accepted ?? [],
      rejected: before.rcpt_rejected ?? [],
    });
    const body = allowed.includes(before.status)
      ? lifetimeChange({
          currentExpiresAt: before.expires_at,
          to,
          tenant: before.tenant,
          now: input.now,
          retentionDays: 0, // unused: a retry never starts the retention
          bodyInState: before.body !== undefined,
        }).body
      : KEEP_BODY;
    const write = () => this.retryWrite(input, before, allowed, retried);
    return takingBodyBack(
      this.documents,
      this.tableName,
      input.id,
      body,
      write,
      (result) => result.kind === 'updated',
    );
  }

  /** The retry's one conditional write of the state record, decided on `before`. */
  private retryWrite(
    input: { tenant: string; id: string; now: Date; maxAttempts: number },
    before: MessageStateRecord,
    allowed: readonly MessageStatus[],
    retried: ReturnType<typeof progressAfterManualRetry>,
  ): Promise<TransitionResult> {
    const to = MESSAGE_STATUS.scheduled;
    // A fresh budget of attempts, the one a DLQ redrive gives (core/sendDecision.ts); `attempts`
    // itself stays as it is, the count of SMTP transactions (DESIGN §2).
    const attempts = before.attempts;
    const now = input.now.toISOString();
    return this.transition(input.tenant, input.id, input.now, allowed, {
      // Every recipient not yet accepted is pending again (DESIGN §3, core/recipients.ts): the
      // accepted stay as they are, the rejected and the suppressed are written as the rule leaves them.
      UpdateExpression:
        'SET #status = :to, #send_at = :now, #updated = :now, #lst_pk = :lst_pk, #due_pk = :due_pk, #due_at = :now, #rejected = :rejected, #suppressed = :suppressed, #limit = :limit ADD #rev :one REMOVE #expires',
      // Only the record the write was decided on: the same attempts (a redrive moves them) and the
      // same TTL (a discard moves only that, and the body's TTL was decided from it).
      extraCondition: `#attempts = :attempts AND ${before.expires_at === undefined ? 'attribute_not_exists(#expires)' : '#expires = :readExpires'}`,
      wouldPass: () => false,
      names: {
        '#send_at': 'send_at',
        '#updated': 'updated_at',
        '#lst_pk': 'lst_pk',
        '#due_pk': 'due_pk',
        '#due_at': 'due_at',
        '#rev': 'rev',
        '#expires': 'expires_at',
        '#rejected': 'rcpt_rejected',
        '#suppressed': 'rcpt_suppressed',
        '#limit': 'attempt_limit',
        '#attempts': 'attempts',
      },
      values: {
        ':to': to,
        ':now': now,
        ':lst_pk': byStatusPk(input.tenant, to, input.id),
        ':due_pk': duePk(input.id),
        ':one': 1,
        ':rejected': [...retried.rejected],
        ':suppressed': [...(retried.suppressed ?? [])],
        ':limit': freshAttemptLimit(attempts, input.maxAttempts),
        ':attempts': attempts,
        ...(before.expires_at === undefined ? {} : { ':readExpires': before.expires_at }),
      },
    });
  }

  async discard(input: {
    tenant: string;
    id: string;
    now: Date;
    expiresAt: number;
  }): Promise<TransitionResult> {
    const result = await this.transition(input.tenant, input.id, input.now, WAITING_FOR_OPERATOR, {
      UpdateExpression: 'SET #expires = :expires, #discarded = :now, #updated = :now REMOVE #due_pk, #due_at',
      // Only one that still waits (no TTL while it does): a second discard changes nothing and says so.
      extraCondition: 'attribute_not_exists(#expires)',
      wouldPass: () => false,
      names: {
        '#expires': 'expires_at',
        '#discarded': 'discarded_at',
        '#updated': 'updated_at',
        '#due_pk': 'due_pk',
        '#due_at': 'due_at',
      },
      values: { ':expires': input.expiresAt, ':now': input.now.toISOString() },
    });
    // The message has ended for good: its body expires with the state record, as for a cancel — and
    // as there, a discard that finds the message discarded already finishes a body write that failed.
    if (result.kind === 'updated') await this.finishBodyLifetime(result.state);
    else if (result.kind === 'conflict' && WAITING_FOR_OPERATOR.includes(result.current.status))
      await this.finishBodyLifetime(result.current);
    return result;
  }

  finishBodyLifetime(state: MessageStateRecord): Promise<void> {
    return finishBodyLifetime(this.documents, this.tableName, state);
  }

  raiseGroup(input: {
    tenant: string;
    groupKey: string;
    version: number;
    now: Date;
  }): Promise<GroupHeadView> {
    // Every replica in one transaction, never fewer than the group has (store/groupHead.ts).
    return raiseGroupHead(this.documents, this.tableName, {
      ...input,
      replicas: this.groupHeads.groupHeadReplicas ?? 1,
    });
  }

  async listMessages(query: ListQuery): Promise<ListPage> {
    const index = query.status === null ? INDEX.byTenant : INDEX.byStatus;
    const shards = shardCount(query.status);
    const status = query.status;
    const partitionOf = (shard: number) =>
      status === null ? byTenantShardPk(query.tenant, shard) : byStatusShardPk(query.tenant, status, shard);
    // Fan out: each shard returns its newest `limit` entries after its position, then merge.
    const pages = await Promise.all(
      Array.from({ length: shards }, async (_, shard) => {
        const position = query.positions[shard] ?? { kind: 'start' };
        if (position.kind === 'done') return { keys: [] as string[], more: false };
        const partition = partitionOf(shard);
        const result = await this.documents.send(
          new QueryCommand({
            TableName: this.tableName,
            IndexName: index.indexName,
            KeyConditionExpression: '#pk = :pk',
            ExpressionAttributeNames: { '#pk': index.partitionKey },
            ExpressionAttributeValues: { ':pk': partition },
            ScanIndexForward: false,
            Limit: query.limit,
            ExclusiveStartKey:
              position.kind === 'after' ? indexStartKey(index, partition, position.sortKey) : undefined,
          }),
        );
        const keys = (result.Items ?? [])
          .map((item) => item[index.sortKey])
          .filter((key): key is string => typeof key === 'string');
        return { keys, more: result.LastEvaluatedKey !== undefined };
      }),
    );
    const { entries: merged, positions } = mergeShardReads(pages, query.positions, query.limit);
    const ids = merged.map((entry) => idOfCreatedSortKey(entry.sortKey));
    const states = await readStateRecords(this.documents, this.tableName, ids);
    // The index is eventually consistent: drop a record whose status has moved on since, and one
    // past its retention (a page may come short; the positions go on past it all the same).
    const items = ids
      .map((id) => states.get(id))
      .filter(
        (state): state is MessageStateRecord =>
          state !== undefined &&
          isShown(state, query.tenant, query.now) &&
          (query.status === null || state.status === query.status),
      );
    return { items, positions };
  }

  private async transition(
    tenant: string,
    id: string,
    now: Date,
    allowed: readonly MessageStatus[],
    update: {
      UpdateExpression: string;
      extraCondition?: string;
      /** Whether a record read back after a lost condition would pass it now (then try again). */
      wouldPass?: (current: MessageStateRecord) => boolean;
      names: Record<string, string>;
      values: Record<string, unknown>;
    },
  ): Promise<TransitionResult> {
    const statusValues = Object.fromEntries(allowed.map((status, i) => [`:from${i}`, status]));
    // This request's mark on the record: a try that landed with its answer lost (the SDK's retry then
    // loses the condition to it) is recognised as this request's own write, not a conflict.
    const op = randomUUID();
    // Every transition sets something; the mark joins its SET clause (an expression without one would
    // silently go unmarked, and its lost answer would read as a conflict again).
    if (!update.UpdateExpression.startsWith('SET '))
      throw new Error(`a transition's update must start with SET: ${update.UpdateExpression}`);
    const marked = `SET #op = :op, ${update.UpdateExpression.slice('SET '.length)}`;
    const condition = [
      `attribute_exists(${KEY.partition})`,
      '#tenant = :tenant',
      `#status IN (${Object.keys(statusValues).join(', ')})`,
      ...(update.extraCondition ? [update.extraCondition] : []),
    ].join(' AND ');
    const wouldPass = update.wouldPass ?? ((current: MessageStateRecord) => allowed.includes(current.status));
    for (let attempt = 0; ; attempt++) {
      try {
        const { Attributes } = await this.documents.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState },
            UpdateExpression: marked,
            ConditionExpression: condition,
            ExpressionAttributeNames: {
              '#tenant': 'tenant',
              '#status': 'status',
              '#op': 'op_id',
              ...update.names,
            },
            ExpressionAttributeValues: { ':tenant': tenant, ':op': op, ...statusValues, ...update.values },
            ReturnValues: 'ALL_NEW',
          }),
        );
        if (!isMessageStateRecord(Attributes)) throw new Error('the updated state record is unreadable');
        return { kind: 'updated', state: Attributes };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        // Lost the condition: read what is there now (strongly consistent) to say why. If the record
        // moved back into an allowed status in between (sending → retrying), try once more.
        // One past its retention is gone (decision 0205): a 404, as for an id never seen.
        const current = await this.getMessage(tenant, id, now);
        if (current === null) return { kind: 'not-found' };
        if ((current as { op_id?: string }).op_id === op) return { kind: 'updated', state: current };
        if (attempt >= 2 || !wouldPass(current)) return { kind: 'conflict', current };
      }
    }
  }
}

/**
 * Whether a state record read is one the tenant's reads show: its own, and not past its retention —
 * DynamoDB returns an expired item until its deleter runs, days later, and no read may depend on
 * when that is (core/messageLifetime.ts `retentionRanOut`, decision 0205).
 */
function isShown(
  state: { readonly tenant?: string | undefined; readonly expires_at?: number | undefined },
  tenant: string,
  now: Date,
): boolean {
  return state.tenant === tenant && !retentionRanOut(state.expires_at, now);
}

/** A GSI's ExclusiveStartKey needs the index keys and the table keys. */
function indexStartKey(
  index: { partitionKey: string; sortKey: string },
  partition: string,
  sortKey: string,
): Record<string, string> {
  return {
    [index.partitionKey]: partition,
    [index.sortKey]: sortKey,
    [KEY.partition]: messagePk(idOfCreatedSortKey(sortKey)),
    [KEY.sort]: ITEM_SORT_KEY.messageState,
  };
}
