import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { isMessageStatus, type MessageStatus } from '../core/messageStatus.js';
import { dueShardPk } from './messageRecord.js';
import { INDEX } from './tableLayout.js';

/** One entry of the sparse `due` index: what its INCLUDE projection carries. */
export interface DueEntry {
  readonly id: string;
  readonly rev: number;
  readonly status: MessageStatus;
  readonly due_at: string;
}

/** Where the next page starts (DynamoDB's LastEvaluatedKey, opaque to callers). */
export type DueCursor = Readonly<Record<string, unknown>>;

export interface OverdueQuery {
  /** The shard number n of `due_pk = due#{n}`. */
  readonly shard: number;
  /** ISO time: entries with `due_at` strictly before it, oldest first. */
  readonly before: string;
  readonly limit: number;
  readonly cursor?: DueCursor | undefined;
}

export interface DuePage {
  readonly entries: readonly DueEntry[];
  readonly cursor: DueCursor | undefined;
}

/** The sweeper's only read: one page of one shard of the `due` index. */
export interface DueIndex {
  overdue(query: OverdueQuery): Promise<DuePage>;
}

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
    const entries: DueEntry[] = [];
    for (const item of result.Items ?? []) {
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
    return { entries, cursor: result.LastEvaluatedKey };
  }
}
