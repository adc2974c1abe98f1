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
 *
 * The sender's instance keeps its lookups, listed or not, at most SUPPRESSION_MAX_AGE_MS (decision
 * 0173): an address on every message (a compliance BCC) is otherwise one item read at the send rate.
 */

import { setTimeout as pause } from 'node:timers/promises';
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
import { LruCache } from '../core/templateCache.js';
import type { SuppressionList, SuppressionPage } from '../ports/SuppressionList.js';
import { BATCH_GET_LIMIT } from './batchGetItems.js';
import { shardOf } from './messageRecord.js';
import { KEY, PARTITION_PREFIX, SUPPRESSION_SHARDS } from './tableLayout.js';

const UNPROCESSED_ROUNDS = 5;
/** The pause before round n of unprocessed keys is drawn from [0, min(cap, first · 2^(n−1))]. */
const UNPROCESSED_PAUSE = { firstMs: 50, capMs: 400 } as const;

/**
 * How old a lookup the sender may judge by (DESIGN §12 as built, decision 0173): an add or a removal
 * applies to every warm sender within this bound (at once on the one that wrote it). At 10,000
 * messages/s with one address on every message, ~870 warm senders read its entry ~174 times a second
 * instead of 10,000 (docs/capacity.md).
 */
export const SUPPRESSION_MAX_AGE_MS = 5_000;

/** Lookups one warm sender keeps (an address and its answer: a few hundred bytes each). */
const LOOKUP_CACHE_ENTRIES = 10_000;

/** The sender's cache of lookups (DynamoSenderStore); the api, the bounces function and the CLI keep none. */
export interface SuppressionLookups {
  /** @default SUPPRESSION_MAX_AGE_MS */
  readonly maxAgeMs?: number;
  /** The clock lookups age by. @default the system clock */
  readonly now?: () => Date;
}

export interface SuppressionListOptions {
  /** Keep this function's lookups, hits and misses, each at most `maxAgeMs` old. */
  readonly recent?: SuppressionLookups;
  /** The jitter of the pauses between rounds of unprocessed keys. @default Math.random */
  readonly random?: () => number;
  /** @default a timer */
  readonly sleep?: (milliseconds: number) => Promise<void>;
}

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
  /** Whether an address is listed, by `lookupKey`; only with `recent`. */
  private readonly lookups: LruCache<boolean> | undefined;
  private readonly random: () => number;
  private readonly sleep: (milliseconds: number) => Promise<void>;

  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
    options: SuppressionListOptions = {},
  ) {
    const { recent } = options;
    const now = recent?.now ?? (() => new Date());
    this.lookups =
      recent === undefined
        ? undefined
        : new LruCache<boolean>(LOOKUP_CACHE_ENTRIES, {
            maxAgeMs: recent.maxAgeMs ?? SUPPRESSION_MAX_AGE_MS,
            now: () => now().getTime(),
          });
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? ((milliseconds) => pause(milliseconds));
  }

  async suppressedAmong(tenant: string, addresses: readonly string[]): Promise<ReadonlySet<string>> {
    const lookups = this.lookups;
    if (lookups === undefined) return this.readListed(tenant, addresses);
    // The addresses not looked up recently are read together, in one BatchGetItem, once the cache
    // has said which they are (getOrLoad calls `load` at once); a failed read is not kept.
    const unread: string[] = [];
    let readUnread: (found: Promise<ReadonlySet<string>>) => void = () => {};
    const read = new Promise<ReadonlySet<string>>((resolve) => {
      readUnread = resolve;
    });
    const listed = addresses.map((address) =>
      lookups.getOrLoad(lookupKey(tenant, address), () => {
        unread.push(address);
        return read.then((found) => found.has(address));
      }),
    );
    readUnread(unread.length === 0 ? Promise.resolve(new Set()) : this.readListed(tenant, unread));
    const answers = await Promise.all(listed);
    return new Set(addresses.filter((_, index) => answers[index] === true));
  }

  /** Which of `addresses` are listed, read now (eventually consistent). */
  private async readListed(tenant: string, addresses: readonly string[]): Promise<ReadonlySet<string>> {
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
        // Unprocessed keys are throttling: asking again at once only adds to it.
        if (round > 0) await this.sleep(unprocessedPauseMs(round, this.random));
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
    await this.written(
      input.tenant,
      input.address,
      true,
      this.documents.send(
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
      ),
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
    const { Attributes } = await this.written(
      input.tenant,
      input.address,
      true,
      this.documents.send(
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
      ),
    );
    const entry = suppressionOf(Attributes);
    if (entry === undefined) throw new Error('the suppression written is unreadable');
    return entry;
  }

  async remove(tenant: string, address: string, formerKey?: string): Promise<Suppression | null> {
    const keys = [address, formerSuppressionKey(address), formerKey].filter(
      (key): key is string => key !== undefined,
    );
    const removed = await this.written(
      tenant,
      address,
      false,
      Promise.all([...new Set(keys)].map((key) => this.removeKey(tenant, key))),
    );
    return removed.find((entry) => entry !== null) ?? null;
  }

  /**
   * A write of this instance's to `address`, which leaves it `listed` or not: once it succeeded, this
   * instance's lookups answer that at once (no eventually consistent read, which may miss the write,
   * and would be kept SUPPRESSION_MAX_AGE_MS). A write that failed may or may not have applied: its
   * next lookup reads the table.
   */
  private async written<T>(tenant: string, address: string, listed: boolean, write: Promise<T>): Promise<T> {
    const key = lookupKey(tenant, address);
    try {
      const done = await write;
      this.lookups?.set(key, listed);
      return done;
    } catch (error) {
      this.lookups?.delete(key);
      throw error;
    }
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

/** The cache key of one address of one tenant (tenants and addresses hold no NUL). */
const lookupKey = (tenant: string, address: string): string => `${tenant}\u0000${address}`;

/** The pause before `round` (1 for the first retry): full jitter, doubling, capped. */
function unprocessedPauseMs(round: number, random: () => number): number {
  const ceiling = Math.min(UNPROCESSED_PAUSE.capMs, UNPROCESSED_PAUSE.firstMs * 2 ** (round - 1));
  return Math.round(random() * ceiling);
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
