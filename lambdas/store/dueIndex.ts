import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { isMessageStatus, type MessageStatus } from '../core/messageStatus.js';
import type { DueEntry, DueIndex, DuePage, OverdueQuery } from '../ports/DueIndex.js';
import { dueShardPk, uncopiedDeadShardPk, waitingShardPk } from './messageRecord.js';
import { INDEX } from './tableLayout.js';

/**
 * The `due` index on DynamoDB: `due_pk = due#{shard}` and `due_at < before`, ascending. Index reads
 * are eventually consistent; a just-finished message may still show up, which is harmless because
 * a re-dispatched copy of it is dropped by the sender.
 */
export class DynamoDueIndex implements DueIndex {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async overdue(query: OverdueQuery): Promise<DuePage> {
    const index = INDEX.due;
    // A cursor at or past the window's end (left by a run that read further: one told
    // `queueEmptiedAt`, a shorter grace, another clock) has nothing of this window after it; DynamoDB
    // would refuse it as a start key, and the shard would fail every run until the window passed it.
    const at = query.cursor?.[index.sortKey];
    if (typeof at === 'string' && at >= query.before) return { entries: [], cursor: undefined };
    const result = await this.documents.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: index.indexName,
        KeyConditionExpression: '#pk = :pk AND #at < :before',
        ExpressionAttributeNames: { '#pk': index.partitionKey, '#at': index.sortKey },
        ExpressionAttributeValues: { ':pk': dueShardPk(query.shard), ':before': query.before },
        Limit: query.limit,
        ExclusiveStartKey: query.cursor === undefined ? undefined : { ...query.cursor },
      }),
    );
    return { entries: dueEntries(result.Items), cursor: result.LastEvaluatedKey };
  }

  async waiting(status: MessageStatus, shard: number): Promise<DueEntry[]> {
    return this.entries(waitingShardPk(status, shard));
  }

  uncopiedDead(shard: number): Promise<DueEntry[]> {
    return this.entries(uncopiedDeadShardPk(shard));
  }

  async countWaiting(status: MessageStatus, shard: number): Promise<number> {
    let count = 0;
    for await (const page of this.pages(waitingShardPk(status, shard), { Select: 'COUNT' }))
      count += page.Count ?? 0;
    return count;
  }

  private async entries(partition: string): Promise<DueEntry[]> {
    const entries: DueEntry[] = [];
    for await (const page of this.pages(partition, {})) entries.push(...dueEntries(page.Items));
    return entries;
  }

  /** Every page of one partition of the index that is read whole (`wait#…`, `owed#dead#…`). */
  private async *pages(partition: string, select: { Select?: 'COUNT' }) {
    const index = INDEX.due;
    let cursor: Record<string, unknown> | undefined;
    do {
      const page = await this.documents.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: index.indexName,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': index.partitionKey },
          ExpressionAttributeValues: { ':pk': partition },
          ...select,
          ExclusiveStartKey: cursor,
        }),
      );
      yield page;
      cursor = page.LastEvaluatedKey;
    } while (cursor !== undefined);
  }
}

function dueEntries(items: readonly Record<string, unknown>[] | undefined): DueEntry[] {
  const entries: DueEntry[] = [];
  for (const item of items ?? []) {
    const { id, rev, status, due_at } = item;
    if (
      typeof id === 'string' &&
      typeof rev === 'number' &&
      isMessageStatus(status) &&
      typeof due_at === 'string'
    ) {
      entries.push({ id, rev, status, due_at });
    }
  }
  return entries;
}
