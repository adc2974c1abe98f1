import { BatchWriteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOutboxWrite } from '../../lambdas/outbox/outboxItems.js';
import {
  byStatusShardPk,
  byTenantShardPk,
  dueShardPk,
  type MessageStateRecord,
} from '../../lambdas/store/messageRecord.js';
import { INDEX, INDEX_SHARDS } from '../../lambdas/store/tableLayout.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/**
 * docs/capacity.md counts on the index partition keys spreading one tenant's messages of one status
 * over the shards (no hot partition, DESIGN §4). This builds MESSAGES state records of one tenant,
 * all `scheduled`, with the real outbox helper, and counts each shard of `by_status`, `due` and
 * `by_tenant` by the index partition key each record carries. That DynamoDB files a record under that
 * key is shown on DynamoDB Local with the first WRITTEN of them: every shard's count on the index, read
 * with the readers' own key functions, is the count of the records written (decision 0275: writing all
 * 2,000 proved the same and cost 15 s).
 *
 * The bound and its false-failure chance. A shard's count is Binomial(n = 2,000, 1/shards) when the
 * shard of an id behaves like a uniform draw (ids are SHA-256-derived from tenant and key). Exact
 * binomial tails, times the number of shards (union bound):
 * - by_status, 32 shards, mean 62.5: P(a shard empty) = (31/32)^2000 ≈ 2.6e-28, P(≥ 126 = > 2×
 *   mean) ≈ 4.0e-13; any of 32 shards: ≈ 1.3e-11;
 * - due, 64 shards, mean 31.25: P(empty) ≈ 2.1e-14, P(≥ 79 = > 2.5× mean) ≈ 3.4e-13; any of 64:
 *   ≈ 2.3e-11 (a 2× bound would be 2e-5 here, too close for comfort);
 * - by_tenant, 16 shards, mean 125: P(> 2× mean) is far below either.
 * The keys are fixed (`order-1` … `order-2000`, sequential as real keys often are), so the test is
 * also deterministic: the chance above is that of this one key set being unlucky, taken once. With
 * a constant shard function every record lands in one shard and the test fails on the empty ones.
 */
const MESSAGES = 2_000;
/** Records written to DynamoDB Local: enough that most shards of every index hold some. */
const WRITTEN = 200;
const TENANT = 'acme';
const STATUS = 'scheduled';

describe('index writes of one tenant and one status spread over the shards', () => {
  const documents = documentClient();
  let tableName: string;
  let states: readonly MessageStateRecord[];

  beforeAll(async () => {
    ({ tableName } = await freshTable('shards'));
    const now = new Date('2026-11-29T12:00:00Z');
    states = Array.from({ length: MESSAGES }, (_, i) => {
      const write = buildOutboxWrite({
        tableName,
        tenant: TENANT,
        idempotencyKey: `order-${i + 1}`,
        now,
        body: {
          to: ['ada@example.com'],
          subject: 'Order approved',
          text: 'Your order was approved.',
          send_at: '2026-12-01T09:00:00Z',
        },
        validation: { allowedFrom: ['*'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 },
      });
      expect(write.state.status).toBe(STATUS);
      return write.state;
    });
    const written = states.slice(0, WRITTEN);
    for (let start = 0; start < written.length; start += 25 * 4) {
      await Promise.all(
        Array.from({ length: 4 }, (_, k) => written.slice(start + k * 25, start + (k + 1) * 25))
          .filter((chunk) => chunk.length > 0)
          .map((chunk) => batchPut(tableName, chunk)),
      );
    }
  }, 120_000);

  async function batchPut(table: string, items: readonly object[]): Promise<void> {
    let pending = items.map((item) => ({ PutRequest: { Item: { ...item } } }));
    while (pending.length > 0) {
      const { UnprocessedItems } = await documents.send(
        new BatchWriteCommand({ RequestItems: { [table]: pending } }),
      );
      pending = (UnprocessedItems?.[table] ?? []).flatMap((request) =>
        request.PutRequest?.Item ? [{ PutRequest: { Item: request.PutRequest.Item } }] : [],
      );
    }
  }

  /**
   * How many of the records each shard's partition key names: of all MESSAGES, and of those written,
   * which must be what the index on DynamoDB Local holds under that shard (Select COUNT, every page).
   */
  async function shardCounts(
    index: { indexName: string; partitionKey: string },
    shards: number,
    partitionOf: (shard: number) => string,
  ): Promise<number[]> {
    const count = (records: readonly MessageStateRecord[], shard: number) =>
      records.filter(
        (record) => (record as unknown as Record<string, unknown>)[index.partitionKey] === partitionOf(shard),
      ).length;
    const written = states.slice(0, WRITTEN);
    const onTheIndex = await indexCounts(index, shards, partitionOf);
    expect(onTheIndex).toEqual(Array.from({ length: shards }, (_, shard) => count(written, shard)));
    expect(onTheIndex.reduce((sum, n) => sum + n, 0)).toBe(WRITTEN);
    return Array.from({ length: shards }, (_, shard) => count(states, shard));
  }

  /** How many index entries each shard's partition holds (Select COUNT, every page). */
  async function indexCounts(
    index: { indexName: string; partitionKey: string },
    shards: number,
    partitionOf: (shard: number) => string,
  ): Promise<number[]> {
    return Promise.all(
      Array.from({ length: shards }, async (_, shard) => {
        let count = 0;
        let startKey: Record<string, unknown> | undefined;
        do {
          const page = await documents.send(
            new QueryCommand({
              TableName: tableName,
              IndexName: index.indexName,
              KeyConditionExpression: '#pk = :pk',
              ExpressionAttributeNames: { '#pk': index.partitionKey },
              ExpressionAttributeValues: { ':pk': partitionOf(shard) },
              Select: 'COUNT',
              ...(startKey ? { ExclusiveStartKey: startKey } : {}),
            }),
          );
          count += page.Count ?? 0;
          startKey = page.LastEvaluatedKey;
        } while (startKey);
        return count;
      }),
    );
  }

  function expectSpread(counts: readonly number[], maxTimesMean: number): void {
    const mean = MESSAGES / counts.length;
    // Every entry is in some shard: nothing was lost or written under another key.
    expect(counts.reduce((sum, count) => sum + count, 0)).toBe(MESSAGES);
    const empty = counts.flatMap((count, shard) => (count === 0 ? [shard] : []));
    expect(empty, `empty shards (counts: ${counts.join(' ')})`).toEqual([]);
    const crowded = counts.flatMap((count, shard) => (count > maxTimesMean * mean ? [shard] : []));
    expect(crowded, `shards above ${maxTimesMean}× the mean ${mean} (counts: ${counts.join(' ')})`).toEqual(
      [],
    );
  }

  it(`by_status: ${INDEX_SHARDS.byStatus} shards each hold some, none more than 2× the mean`, async () => {
    const counts = await shardCounts(INDEX.byStatus, INDEX_SHARDS.byStatus, (shard) =>
      byStatusShardPk(TENANT, STATUS, shard),
    );
    expectSpread(counts, 2);
  });

  it(`due: ${INDEX_SHARDS.due} shards each hold some, none more than 2.5× the mean`, async () => {
    const counts = await shardCounts(INDEX.due, INDEX_SHARDS.due, dueShardPk);
    expectSpread(counts, 2.5);
  });

  it(`by_tenant: ${INDEX_SHARDS.byTenant} shards each hold some, none more than 2× the mean`, async () => {
    const counts = await shardCounts(INDEX.byTenant, INDEX_SHARDS.byTenant, (shard) =>
      byTenantShardPk(TENANT, shard),
    );
    expectSpread(counts, 2);
  });
});
