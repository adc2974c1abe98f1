/**
 * The DynamoDB adapter of the SuppressionList port (ports/SuppressionList.ts). Each entry is one item
 * of the outbox table (docs/data-model.md, "Suppressions"):
 *
 *   pk = SUPP#{tenant}#{shard}   sk = {normalised address}
 *   tenant, address, reason, message_id (or null), created_at
 *
 * `shard` is a hash of the address over SUPPRESSION_SHARDS, so the reads every send makes spread over
 * partitions; a lookup knows its key, and a listing queries every shard after the cursor's address and
 * merges them in address order. Entries have no TTL: they last until removed. An entry of an
 * internationalised domain written before decision 0153 is keyed by the domain in Unicode: a lookup
 * and a removal of its key reach it too (core/suppressions.ts `formerSuppressionKey`).
 */
import {
  BatchGetCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { ERROR_CLASS, PostdateError } from '../core/postdateError.js';
import {
  formerSuppressionKey,
  isSuppressionReason,
  SUPPRESSION_REASON,
  type Suppression,
  type SuppressionInput,
  type SuppressionReason,
} from '../core/suppressions.js';
import type { SuppressionList, SuppressionPage } from '../ports/SuppressionList.js';
import { shardOf } from './messageRecord.js';
import { KEY, PARTITION_PREFIX, SUPPRESSION_SHARDS } from './tableLayout.js';

/** BatchGetItem takes at most this many keys; a message has at most 50 recipients. */
const BATCH_GET_LIMIT = 100;
const UNPROCESSED_ROUNDS = 5;

export const suppressionShardPk = (tenant: string, shard: number): string =>
  `${PARTITION_PREFIX.suppression}${tenant}#${shard}`;

/** The key of one address's entry in a tenant's list. */
export function suppressionKeyOf(tenant: string, address: string): Record<string, string> {
  return {
    [KEY.partition]: suppressionShardPk(tenant, shardOf(address, SUPPRESSION_SHARDS)),
    [KEY.sort]: address,
  };
}

/** Thrown when a read of the list could not be completed: the caller must not act as if nothing were listed. */
export class SuppressionReadError extends PostdateError {
  override readonly name = 'SuppressionReadError';
  constructor(message: string) {
    // Unprocessed keys are DynamoDB's throttling: another try may read them.
    super(message, { class: ERROR_CLASS.transient });
  }
}

export class DynamoSuppressionList implements SuppressionList {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async suppressedAmong(tenant: string, addresses: readonly string[]): Promise<ReadonlySet<string>> {
    // Each key, and the key its entry had before decision 0153 where that differs: found as the key.
    const asKey = new Map<string, string>();
    for (const address of addresses) {
      asKey.set(address, address);
      const former = formerSuppressionKey(address);
      if (former !== undefined && !asKey.has(former)) asKey.set(former, address);
    }
    const found = new Set<string>();
    const distinct = [...asKey.keys()];
    for (let start = 0; start < distinct.length; start += BATCH_GET_LIMIT) {
      let pending: Record<string, unknown>[] = distinct
        .slice(start, start + BATCH_GET_LIMIT)
        .map((address) => suppressionKeyOf(tenant, address));
      for (let round = 0; pending.length > 0; round++) {
        if (round === UNPROCESSED_ROUNDS) {
          // Absence must mean "not suppressed", never "not read": the send waits instead.
          throw new SuppressionReadError(`${pending.length} suppression keys stayed unprocessed`);
        }
        const result = await this.documents.send(
          new BatchGetCommand({
            RequestItems: {
              [this.tableName]: {
                Keys: pending,
                ProjectionExpression: '#sk',
                ExpressionAttributeNames: { '#sk': KEY.sort },
              },
            },
          }),
        );
        for (const item of result.Responses?.[this.tableName] ?? []) {
          const address = item[KEY.sort];
          const key = typeof address === 'string' ? asKey.get(address) : undefined;
          if (key !== undefined) found.add(key);
        }
        pending = result.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
      }
    }
    return found;
  }

  async addReported(input: SuppressionInput): Promise<void> {
    await this.documents.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: suppressionKeyOf(input.tenant, input.address),
        // if_not_exists on every field: the first report stands, a repeat changes nothing.
        UpdateExpression:
          'SET #tenant = if_not_exists(#tenant, :tenant), #address = if_not_exists(#address, :address), ' +
          '#reason = if_not_exists(#reason, :reason), #message_id = if_not_exists(#message_id, :message_id), ' +
          '#created_at = if_not_exists(#created_at, :now)',
        ExpressionAttributeNames: NAMES,
        ExpressionAttributeValues: {
          ':tenant': input.tenant,
          ':address': input.address,
          ':reason': input.reason,
          ':message_id': input.messageId,
          ':now': input.now.toISOString(),
        },
      }),
    );
  }

  async put(input: {
    tenant: string;
    address: string;
    reason: SuppressionReason | undefined;
    now: Date;
  }): Promise<Suppression> {
    const reason =
      input.reason === undefined ? '#reason = if_not_exists(#reason, :reason)' : '#reason = :reason';
    const { Attributes } = await this.documents.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: suppressionKeyOf(input.tenant, input.address),
        UpdateExpression:
          `SET #tenant = :tenant, #address = :address, ${reason}, ` +
          '#message_id = if_not_exists(#message_id, :message_id), #created_at = if_not_exists(#created_at, :now)',
        ExpressionAttributeNames: NAMES,
        ExpressionAttributeValues: {
          ':tenant': input.tenant,
          ':address': input.address,
          ':reason': input.reason ?? SUPPRESSION_REASON.manual,
          ':message_id': null,
          ':now': input.now.toISOString(),
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    const entry = suppressionOf(Attributes);
    if (entry === undefined) throw new Error('the suppression written is unreadable');
    return entry;
  }

  async remove(tenant: string, address: string): Promise<Suppression | null> {
    const former = formerSuppressionKey(address);
    const [removed, removedFormer] = await Promise.all([
      this.removeKey(tenant, address),
      former === undefined ? null : this.removeKey(tenant, former),
    ]);
    return removed ?? removedFormer;
  }

  private async removeKey(tenant: string, address: string): Promise<Suppression | null> {
    const { Attributes } = await this.documents.send(
      new DeleteCommand({
        TableName: this.tableName,
        Key: suppressionKeyOf(tenant, address),
        ReturnValues: 'ALL_OLD',
      }),
    );
    return suppressionOf(Attributes) ?? null;
  }

  async list(tenant: string, page: { limit: number; after: string | null }): Promise<SuppressionPage> {
    // Every shard's first `limit` entries after the cursor: the page is the first `limit` of their merge.
    const shards = await Promise.all(
      Array.from({ length: SUPPRESSION_SHARDS }, (_, shard) => this.queryShard(tenant, shard, page)),
    );
    const merged = shards
      .flatMap((shard) => shard.items)
      .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
    const items = merged.slice(0, page.limit);
    const more = merged.length > page.limit || shards.some((shard) => shard.more);
    const last = items[items.length - 1];
    return { items, next: more && last !== undefined ? last.address : null };
  }

  private async queryShard(
    tenant: string,
    shard: number,
    page: { limit: number; after: string | null },
  ): Promise<{ items: Suppression[]; more: boolean }> {
    const items: Suppression[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await this.documents.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: page.after === null ? '#pk = :pk' : '#pk = :pk AND #sk > :after',
          ExpressionAttributeNames: {
            '#pk': KEY.partition,
            ...(page.after === null ? {} : { '#sk': KEY.sort }),
          },
          ExpressionAttributeValues: {
            ':pk': suppressionShardPk(tenant, shard),
            ...(page.after === null ? {} : { ':after': page.after }),
          },
          Limit: page.limit - items.length,
          ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
        }),
      );
      for (const item of result.Items ?? []) {
        const entry = suppressionOf(item);
        if (entry !== undefined) items.push(entry);
      }
      startKey = result.LastEvaluatedKey;
    } while (startKey !== undefined && items.length < page.limit);
    return { items, more: startKey !== undefined };
  }
}

const NAMES = {
  '#tenant': 'tenant',
  '#address': 'address',
  '#reason': 'reason',
  '#message_id': 'message_id',
  '#created_at': 'created_at',
} as const;

/** An item read back as an entry; undefined when it is not one. */
function suppressionOf(item: Record<string, unknown> | undefined): Suppression | undefined {
  if (item === undefined) return undefined;
  const { address, reason, message_id: messageId, created_at: createdAt } = item;
  if (typeof address !== 'string' || !isSuppressionReason(reason) || typeof createdAt !== 'string') {
    return undefined;
  }
  return {
    address,
    reason,
    message_id: typeof messageId === 'string' ? messageId : null,
    created_at: createdAt,
  };
}
