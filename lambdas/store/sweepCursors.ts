import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DueCursor } from '../ports/DueIndex.js';
import type { SweepCursors } from '../ports/SweepCursors.js';
import { dueShardPk } from './messageRecord.js';
import { INDEX, KEY } from './tableLayout.js';

/**
 * The sweeper's cursors item (docs/data-model.md): `pk = SWEEPER#due`, `sk = CURSORS`, one per
 * table, written by the sweeper function alone. `cursors` maps a shard's number to the `due` index
 * key its last run stopped at (DynamoDB's LastEvaluatedKey: the record's `pk`, `sk`, `due_pk` and
 * `due_at`, about 100 bytes); it holds only the shards a run could not read to the end, so it is
 * usually empty and at most 64 × 100 bytes (7 write units). Read once per cold start, put only when it moved: at
 * most one write of a few units a run (a run every 5 minutes), no index, no stream consumer.
 */
export const SWEEP_CURSORS_KEY = { [KEY.partition]: 'SWEEPER#due', [KEY.sort]: 'CURSORS' } as const;

export class DynamoSweepCursors implements SweepCursors {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async read(): Promise<ReadonlyMap<number, DueCursor>> {
    const { Item } = await this.documents.send(
      new GetCommand({ TableName: this.tableName, Key: SWEEP_CURSORS_KEY, ConsistentRead: true }),
    );
    return cursorsOf(Item?.cursors);
  }

  async write(cursors: ReadonlyMap<number, DueCursor>, now: Date): Promise<void> {
    await this.documents.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          ...SWEEP_CURSORS_KEY,
          cursors: Object.fromEntries([...cursors].map(([shard, cursor]) => [String(shard), cursor])),
          written_at: now.toISOString(),
        },
      }),
    );
  }
}

/**
 * The stored cursors a query can start from: a shard's number and a key of that shard's partition
 * whose every attribute is a string. Anything else (another writer's, a changed layout) is dropped,
 * and its shard read from its start: a start key DynamoDB refuses would fail the shard every run.
 */
function cursorsOf(stored: unknown): Map<number, DueCursor> {
  const cursors = new Map<number, DueCursor>();
  if (typeof stored !== 'object' || stored === null) return cursors;
  for (const [key, cursor] of Object.entries(stored)) {
    const shard = Number(key);
    if (!Number.isSafeInteger(shard) || shard < 0 || String(shard) !== key) continue;
    if (typeof cursor !== 'object' || cursor === null) continue;
    const values = Object.values(cursor);
    if (values.length === 0 || values.some((value) => typeof value !== 'string')) continue;
    if ((cursor as Record<string, unknown>)[INDEX.due.partitionKey] !== dueShardPk(shard)) continue;
    cursors.set(shard, cursor as DueCursor);
  }
  return cursors;
}
