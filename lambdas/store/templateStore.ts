/**
 * The DynamoDB adapter of the TemplateStore port (ports/TemplateStore.ts), in the outbox table
 * (docs/decisions/, "Templates: the items and their cost"):
 *
 * - the head, `pk = TPLS#{tenant}`, `sk = {name}`: latest version, description, archived; one
 *   partition per tenant holds its heads, so the listing is one Query by name;
 * - each version, `pk = TPL#{tenant}#{name}`, `sk = V#{version, 10 digits}`: subject, text, html,
 *   written once and never changed.
 *
 * A new version is one transaction: the version put (`attribute_not_exists`) and the head moved from
 * the latest it was read at to the new one (conditional on that latest). Two PUTs racing read the
 * same latest; one transaction wins, the other's condition fails and it tries the next number, so
 * they end as n+1 and n+2. No template item has an index attribute or a TTL, and the relay's stream
 * filter passes only message state records, so templates never reach the relay.
 *
 * An enqueue reads the head through a brief per-instance cache (`recentHead`, below): every head of
 * a tenant is one partition, which a consistent read per templated enqueue would hold to 3,000
 * enqueues/s (DESIGN §4, "No hot partitions"). The other reads stay consistent.
 */
import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { TemplateContent } from '../core/renderTemplate.js';
import { LruCache } from '../core/templateCache.js';
import type {
  PutVersionResult,
  TemplateHead,
  TemplatePage,
  TemplateStore,
  TemplateVersion,
} from '../ports/TemplateStore.js';
import { ITEM_SORT_KEY, KEY, PARTITION_PREFIX } from './tableLayout.js';

export const templateHeadKey = (tenant: string, name: string) => ({
  [KEY.partition]: `${PARTITION_PREFIX.templateHeads}${tenant}`,
  [KEY.sort]: name,
});

export const templateVersionKey = (tenant: string, name: string, version: number) => ({
  [KEY.partition]: `${PARTITION_PREFIX.templateVersions}${tenant}#${name}`,
  [KEY.sort]: `${ITEM_SORT_KEY.templateVersion}${String(version).padStart(10, '0')}`,
});

/** Version numbers a PUT tries before it answers `contended`. */
const MAX_PUT_ATTEMPTS = 8;

/**
 * How old a head an enqueue may judge by (DESIGN §10): an archive stops new enqueues, and a new
 * version becomes the one an enqueue without a version pins, within this bound on every warm api
 * function (at once on the one that wrote it). An enqueue naming a version the cached head does not
 * have yet reads through, so a version just stored is never refused. At 10,000 templated
 * enqueues/s on ~400 warm functions a head is read ~80 times a second (docs/capacity.md).
 */
export const TEMPLATE_HEAD_MAX_AGE_MS = 5_000;

/** Heads one warm function keeps. */
const HEAD_CACHE_ENTRIES = 1_000;

export class DynamoTemplateStore implements TemplateStore {
  private readonly heads: LruCache<TemplateHead>;

  /** @param now the clock the cached heads age by. @default the system clock */
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    readonly tableName: string,
    now: () => Date = () => new Date(),
  ) {
    this.heads = new LruCache<TemplateHead>(HEAD_CACHE_ENTRIES, {
      maxAgeMs: TEMPLATE_HEAD_MAX_AGE_MS,
      now: () => now().getTime(),
    });
  }

  async recentHead(tenant: string, name: string, version: number | null): Promise<TemplateHead | undefined> {
    const key = headCacheKey(tenant, name);
    const head = await this.heads.getOrLoad(key, () => this.getHead(tenant, name));
    if (head === undefined || version === null || version <= head.latest_version) return head;
    // A version the cached head has not seen: it may be new. Read through.
    this.heads.delete(key);
    return this.heads.getOrLoad(key, () => this.getHead(tenant, name));
  }

  async putVersion(input: {
    tenant: string;
    name: string;
    content: TemplateContent;
    description: string | null;
    now: Date;
  }): Promise<PutVersionResult> {
    const now = input.now.toISOString();
    for (let attempt = 0; attempt < MAX_PUT_ATTEMPTS; attempt++) {
      const head = await this.getHead(input.tenant, input.name);
      const previous = head?.latest_version ?? 0;
      const version: TemplateVersion = {
        name: input.name,
        version: previous + 1,
        subject: input.content.subject,
        text: input.content.text,
        html: input.content.html,
        description: input.description,
        created_at: now,
      };
      try {
        await this.documents.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: this.tableName,
                  Item: {
                    ...templateVersionKey(input.tenant, input.name, version.version),
                    tenant: input.tenant,
                    ...version,
                  },
                  ConditionExpression: `attribute_not_exists(${KEY.partition})`,
                },
              },
              {
                Update: {
                  TableName: this.tableName,
                  Key: templateHeadKey(input.tenant, input.name),
                  UpdateExpression:
                    'SET #tenant = :tenant, #name = :name, #latest = :latest, #description = :description, #updated = :now, #created = if_not_exists(#created, :now) REMOVE #archived',
                  ConditionExpression:
                    head === undefined ? `attribute_not_exists(${KEY.partition})` : '#latest = :previous',
                  ExpressionAttributeNames: {
                    '#tenant': 'tenant',
                    '#name': 'name',
                    '#latest': 'latest_version',
                    '#description': 'description',
                    '#updated': 'updated_at',
                    '#created': 'created_at',
                    '#archived': 'archived_at',
                  },
                  ExpressionAttributeValues: {
                    ':tenant': input.tenant,
                    ':name': input.name,
                    ':latest': version.version,
                    ':description': input.description,
                    ':now': now,
                    ...(head === undefined ? {} : { ':previous': previous }),
                  },
                },
              },
            ],
          }),
        );
        const written: TemplateHead = {
          name: input.name,
          latest_version: version.version,
          description: input.description,
          created_at: head?.created_at ?? now,
          updated_at: now,
          archived_at: null,
        };
        this.heads.delete(headCacheKey(input.tenant, input.name));
        return { kind: 'created', version, head: written, unarchived: head?.archived_at != null };
      } catch (error) {
        // Another PUT took this number (its head condition, or its version item), or holds the
        // items right now: read the head again and try the next number.
        if (!(error instanceof TransactionCanceledException || error instanceof TransactionConflictException))
          throw error;
      }
    }
    return { kind: 'contended' };
  }

  async getHead(tenant: string, name: string): Promise<TemplateHead | undefined> {
    const { Item } = await this.documents.send(
      new GetCommand({ TableName: this.tableName, Key: templateHeadKey(tenant, name), ConsistentRead: true }),
    );
    return headOf(Item);
  }

  async getVersion(tenant: string, name: string, version: number): Promise<TemplateVersion | undefined> {
    const { Item } = await this.documents.send(
      new GetCommand({
        TableName: this.tableName,
        Key: templateVersionKey(tenant, name, version),
        ConsistentRead: true,
      }),
    );
    return versionOf(Item);
  }

  async list(tenant: string, options: { limit: number; after: string | null }): Promise<TemplatePage> {
    const partition = templateHeadKey(tenant, '')[KEY.partition];
    const { Items, LastEvaluatedKey } = await this.documents.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': KEY.partition },
        ExpressionAttributeValues: { ':pk': partition },
        Limit: options.limit,
        ...(options.after === null ? {} : { ExclusiveStartKey: templateHeadKey(tenant, options.after) }),
      }),
    );
    const items = (Items ?? []).map(headOf).filter((head): head is TemplateHead => head !== undefined);
    const last = items[items.length - 1];
    return { items, next: LastEvaluatedKey !== undefined && last !== undefined ? last.name : null };
  }

  async archive(tenant: string, name: string, now: Date): Promise<TemplateHead | undefined> {
    this.heads.delete(headCacheKey(tenant, name));
    try {
      const { Attributes } = await this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: templateHeadKey(tenant, name),
          UpdateExpression: 'SET #archived = if_not_exists(#archived, :now), #updated = :now',
          ConditionExpression: `attribute_exists(${KEY.partition})`,
          ExpressionAttributeNames: { '#archived': 'archived_at', '#updated': 'updated_at' },
          ExpressionAttributeValues: { ':now': now.toISOString() },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return headOf(Attributes);
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  }
}

/** Names and tenants never hold NUL. */
const headCacheKey = (tenant: string, name: string): string => `${tenant}\u0000${name}`;

function headOf(item: Record<string, unknown> | undefined): TemplateHead | undefined {
  if (
    item === undefined ||
    typeof item.name !== 'string' ||
    typeof item.latest_version !== 'number' ||
    typeof item.created_at !== 'string'
  )
    return undefined;
  return {
    name: item.name,
    latest_version: item.latest_version,
    description: typeof item.description === 'string' ? item.description : null,
    created_at: item.created_at,
    updated_at: typeof item.updated_at === 'string' ? item.updated_at : item.created_at,
    archived_at: typeof item.archived_at === 'string' ? item.archived_at : null,
  };
}

function versionOf(item: Record<string, unknown> | undefined): TemplateVersion | undefined {
  if (
    item === undefined ||
    typeof item.name !== 'string' ||
    typeof item.version !== 'number' ||
    typeof item.subject !== 'string'
  )
    return undefined;
  const text = typeof item.text === 'string' ? item.text : null;
  const html = typeof item.html === 'string' ? item.html : null;
  return {
    name: item.name,
    version: item.version,
    subject: item.subject,
    text,
    html,
    description: typeof item.description === 'string' ? item.description : null,
    created_at: typeof item.created_at === 'string' ? item.created_at : '',
  };
}
