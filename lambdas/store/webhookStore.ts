/**
 * Webhook endpoints and deliveries in the outbox table (the DynamoDB adapter of ports/Webhooks.ts):
 *
 * - endpoint: `pk = WHEP#{tenant}`, `sk = {endpoint id}`: a tenant's endpoints are one partition,
 *   which the fan-out reads for every event and no other tenant's key can reach;
 * - delivery: `pk = WHDL#{endpoint id}#{shard}`, `sk = {delivery id}`: the shard is a hash of the
 *   id (WEBHOOK_DELIVERY_SHARDS), so one busy endpoint's puts and attempt writes spread over as many
 *   partitions (DESIGN §4, "No hot partitions"); the ids begin with the event's time, so each shard
 *   read backwards is newest first, and the listing merges the shards.
 *
 * - a failed delivery also carries an entry in the `due` index: `due_pk = WHFL#{endpoint}#{shard}`
 *   (the delivery's own shard), `due_at = {delivery id}`; the write that makes it failed sets them,
 *   a manual retry removes them, a delivered one never has them. So the failed deliveries are listed
 *   and counted by reading those entries only, however many deliveries the endpoint keeps (DESIGN
 *   §3, §4, §11; docs/decisions/0133-failed-deliveries-listed-and-stalled-ones-retried.md).
 *
 * Neither has `sk = STATE`, so no stream filter lets them reach the relay or the event producer, and
 * only a failed delivery carries an index key, in partitions of its own that no message listing or
 * sweep reads. Lost conditions become typed outcomes here; other errors pass through.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { isEventType, type PostdateEvent } from '../core/messageEvents.js';
import { ERROR_CLASS, PostdateError } from '../core/postdateError.js';
import { stalledBefore, WEBHOOK_FAILED_COUNT_CAP } from '../core/webhookOperator.js';
import {
  isWebhookDeliveryStatus,
  retireOnRotation,
  WEBHOOK_DELIVERY_STATUS,
  WEBHOOK_LIMITS,
  type WebhookDeliveryStatus,
  webhookDeliveryId,
} from '../core/webhooks.js';
import type {
  AttemptWrite,
  DeliveryAttempt,
  DeliveryCounts,
  DeliveryPage,
  DeliveryRetry,
  DeliveryRetryResult,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookStore,
} from '../ports/Webhooks.js';
import { INDEX, KEY, TTL_ATTRIBUTE, WEBHOOK_DELIVERY_SHARDS } from './tableLayout.js';

export const WEBHOOK_PARTITION_PREFIX = { endpoint: 'WHEP#', delivery: 'WHDL#', failed: 'WHFL#' } as const;

const endpointPk = (tenant: string): string => `${WEBHOOK_PARTITION_PREFIX.endpoint}${tenant}`;

/** A delivery's shard: the last hex digits of its id (a SHA-256 of endpoint and event). */
export function deliveryShard(deliveryId: string): number {
  return Number.parseInt(deliveryId.slice(-6), 16) % WEBHOOK_DELIVERY_SHARDS;
}

/** The partition a delivery lives in: `WHDL#{endpoint}#{shard}`. */
export function deliveryPartitionKey(endpointId: string, deliveryId: string): string {
  return shardPk(endpointId, deliveryShard(deliveryId));
}

const shardPk = (endpointId: string, shard: number): string =>
  `${WEBHOOK_PARTITION_PREFIX.delivery}${endpointId}#${shard}`;
/** The `due` index partition of an endpoint's failed deliveries in one shard. */
const failedShardPk = (endpointId: string, shard: number): string =>
  `${WEBHOOK_PARTITION_PREFIX.failed}${endpointId}#${shard}`;
/** The index attributes a delivery carries while it is failed. */
const failedEntry = (endpointId: string, deliveryId: string) => ({
  [INDEX.due.partitionKey]: failedShardPk(endpointId, deliveryShard(deliveryId)),
  [INDEX.due.sortKey]: deliveryId,
});
const SHARDS = Array.from({ length: WEBHOOK_DELIVERY_SHARDS }, (_, shard) => shard);

/**
 * Items a listing asks of one shard at a time: the shards are merged newest first, so a page of
 * `limit` needs about `limit / shards` of each, and a shard whose read runs out is read again.
 */
const SHARD_READ_LIMIT = 8;

/** Reads and conditional writes a rotation tries while other rotations of the endpoint win. */
const ROTATION_ROUNDS = 3;

/** Failed entries one count query reads of a shard (~200 bytes each: a few read units). */
const FAILED_COUNT_PAGE = 200;

export class DynamoWebhookStore implements WebhookStore {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async createEndpoint(endpoint: WebhookEndpoint, limit: number): Promise<'created' | 'limit'> {
    // A soft limit: two creates at once may both pass; fan-out cost stays bounded all the same.
    if ((await this.listEndpoints(endpoint.tenant)).length >= limit) return 'limit';
    await this.documents.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          [KEY.partition]: endpointPk(endpoint.tenant),
          [KEY.sort]: endpoint.id,
          id: endpoint.id,
          tenant: endpoint.tenant,
          url: endpoint.url,
          events: endpoint.events,
          description: endpoint.description,
          secret: endpoint.secret,
          created_at: endpoint.createdAt,
        },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': KEY.partition },
      }),
    );
    return 'created';
  }

  async listEndpoints(tenant: string): Promise<readonly WebhookEndpoint[]> {
    const endpoints: WebhookEndpoint[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.documents.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': KEY.partition },
          ExpressionAttributeValues: { ':pk': endpointPk(tenant) },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        const endpoint = readEndpoint(item);
        if (endpoint) endpoints.push(endpoint);
      }
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return endpoints;
  }

  private async consistentItem(pk: string, sk: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.documents.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [KEY.partition]: pk, [KEY.sort]: sk },
        ConsistentRead: true,
      }),
    );
    return Item;
  }

  async getEndpoint(tenant: string, id: string): Promise<WebhookEndpoint | null> {
    const item = await this.consistentItem(endpointPk(tenant), id);
    return item ? readEndpoint(item) : null;
  }

  /**
   * Read, then write on condition of the secret read: a rotation between the two (or a removal) is
   * read again, so every retired secret keeps its own day and none is lost to a race. The old
   * single `previous_secret` (items rotated before decision 0183) is read as a retired secret and
   * removed by the write.
   */
  async rotateSecret(rotation: {
    readonly tenant: string;
    readonly id: string;
    readonly secret: string;
    readonly now: Date;
  }): Promise<WebhookEndpoint | 'not-found'> {
    for (let round = 1; ; round++) {
      const current = await this.getEndpoint(rotation.tenant, rotation.id);
      if (current === null) return 'not-found';
      try {
        const { Attributes } = await this.documents.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { [KEY.partition]: endpointPk(rotation.tenant), [KEY.sort]: rotation.id },
            UpdateExpression:
              'SET #secret = :secret, retired_secrets = :retired REMOVE previous_secret, previous_secret_until',
            ConditionExpression: 'attribute_exists(#pk) AND #secret = :current',
            ExpressionAttributeNames: { '#pk': KEY.partition, '#secret': 'secret' },
            ExpressionAttributeValues: {
              ':secret': rotation.secret,
              ':current': current.secret,
              ':retired': retireOnRotation(current, rotation.now),
            },
            ReturnValues: 'ALL_NEW',
          }),
        );
        return (Attributes && readEndpoint(Attributes)) ?? 'not-found';
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        if (round >= ROTATION_ROUNDS) {
          throw new PostdateError('the secret kept changing under concurrent rotations', {
            class: ERROR_CLASS.transient,
            cause: error,
          });
        }
      }
    }
  }

  async deleteEndpoint(tenant: string, id: string): Promise<'deleted' | 'not-found'> {
    try {
      await this.documents.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { [KEY.partition]: endpointPk(tenant), [KEY.sort]: id },
          ConditionExpression: 'attribute_exists(#pk)',
          ExpressionAttributeNames: { '#pk': KEY.partition },
        }),
      );
      return 'deleted';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'not-found';
      throw error;
    }
  }

  /**
   * Bounded, whatever the endpoint keeps (DESIGN §4): `failed` counts the failed entries (every failed
   * delivery, up to WEBHOOK_FAILED_COUNT_CAP); `pending` and `delivered` count the newest delivery of
   * each shard, a sample of the most recent ones (`recent` of them). Counting every delivery read
   * every delivery of a month, and a counter written on every delivery would be a hot item.
   */
  async countDeliveries(endpointId: string): Promise<DeliveryCounts> {
    const [failed, recent] = await Promise.all([
      this.countFailed(endpointId),
      Promise.all(SHARDS.map((shard) => this.newestStatus(endpointId, shard))),
    ]);
    const sampled = recent.filter((status) => status !== null);
    return {
      pending: sampled.filter((status) => status === WEBHOOK_DELIVERY_STATUS.pending).length,
      delivered: sampled.filter((status) => status === WEBHOOK_DELIVERY_STATUS.delivered).length,
      failed,
      recent: sampled.length,
    };
  }

  private async countFailed(endpointId: string): Promise<number> {
    const shards = SHARDS.map((shard) => ({
      shard,
      start: undefined as Record<string, unknown> | undefined,
    }));
    let pending = shards;
    let total = 0;
    // Rounds over the shards not yet read to the end, until the cap: a few rounds at the most.
    while (pending.length > 0 && total < WEBHOOK_FAILED_COUNT_CAP) {
      await Promise.all(
        pending.map(async (cursor) => {
          const page = await this.documents.send(
            new QueryCommand({
              TableName: this.tableName,
              IndexName: INDEX.due.indexName,
              KeyConditionExpression: '#pk = :pk',
              ExpressionAttributeNames: { '#pk': INDEX.due.partitionKey },
              ExpressionAttributeValues: { ':pk': failedShardPk(endpointId, cursor.shard) },
              Select: 'COUNT',
              Limit: FAILED_COUNT_PAGE,
              ExclusiveStartKey: cursor.start,
            }),
          );
          total += page.Count ?? 0;
          cursor.start = page.LastEvaluatedKey;
        }),
      );
      pending = pending.filter((cursor) => cursor.start !== undefined);
    }
    return Math.min(total, WEBHOOK_FAILED_COUNT_CAP);
  }

  private async newestStatus(endpointId: string, shard: number): Promise<WebhookDeliveryStatus | null> {
    const { Items = [] } = await this.documents.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: '#pk = :pk',
        ProjectionExpression: '#status',
        ExpressionAttributeNames: { '#pk': KEY.partition, '#status': 'status' },
        ExpressionAttributeValues: { ':pk': shardPk(endpointId, shard) },
        ScanIndexForward: false,
        Limit: 1,
      }),
    );
    const status = Items[0]?.status;
    return isWebhookDeliveryStatus(status) ? status : null;
  }

  async putDelivery(
    delivery: WebhookDelivery,
  ): Promise<{ readonly kind: 'created' | 'exists'; readonly delivery: WebhookDelivery }> {
    try {
      await this.documents.send(
        new PutCommand({
          TableName: this.tableName,
          Item: deliveryItem(delivery),
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': KEY.partition },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { kind: 'created', delivery };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const existing = error.Item ? readDelivery(unmarshallLoose(error.Item)) : null;
        return { kind: 'exists', delivery: existing ?? delivery };
      }
      throw error;
    }
  }

  async getDelivery(endpointId: string, deliveryId: string): Promise<WebhookDelivery | null> {
    const item = await this.consistentItem(deliveryPartitionKey(endpointId, deliveryId), deliveryId);
    return item ? readDelivery(item) : null;
  }

  /**
   * Newest first over every shard, paged by the last id of the page before (the same cursor as when
   * one partition held them all). `failed` reads the failed entries of the `due` index and then
   * those deliveries, so it costs what the failed ones cost; another status filters the deliveries.
   */
  async listDeliveries(query: {
    readonly endpointId: string;
    readonly status: WebhookDeliveryStatus | null;
    readonly limit: number;
    readonly cursor: string | null;
  }): Promise<DeliveryPage> {
    const { limit, cursor, status } = query;
    const below = (
      sortKey: string,
    ): { condition: string; names: Record<string, string>; values: Record<string, string> } =>
      cursor === null
        ? { condition: '#pk = :pk', names: {}, values: {} }
        : {
            condition: '#pk = :pk AND #sk < :cursor',
            names: { '#sk': sortKey },
            values: { ':cursor': cursor },
          };
    if (status === WEBHOOK_DELIVERY_STATUS.failed) {
      const range = below(INDEX.due.sortKey);
      const page = await mergeShards(limit, readEntryId, (shard, start) =>
        this.documents.send(
          new QueryCommand({
            TableName: this.tableName,
            IndexName: INDEX.due.indexName,
            KeyConditionExpression: range.condition,
            ExpressionAttributeNames: { '#pk': INDEX.due.partitionKey, ...range.names },
            ExpressionAttributeValues: { ':pk': failedShardPk(query.endpointId, shard), ...range.values },
            ScanIndexForward: false,
            Limit: Math.min(limit, SHARD_READ_LIMIT),
            ExclusiveStartKey: start,
          }),
        ),
      );
      // The index is eventually consistent: a delivery retried a moment ago is left out.
      const deliveries = await Promise.all(
        page.items.map(({ id }) => this.getDelivery(query.endpointId, id)),
      );
      return {
        items: deliveries.filter(
          (delivery): delivery is WebhookDelivery => delivery?.status === WEBHOOK_DELIVERY_STATUS.failed,
        ),
        nextCursor: page.nextCursor,
      };
    }
    const range = below(KEY.sort);
    return mergeShards(limit, readDelivery, (shard, start) =>
      this.documents.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: range.condition,
          ExpressionAttributeNames: {
            '#pk': KEY.partition,
            ...range.names,
            ...(status ? { '#status': 'status' } : {}),
          },
          ExpressionAttributeValues: {
            ':pk': shardPk(query.endpointId, shard),
            ...range.values,
            ...(status ? { ':status': status } : {}),
          },
          ...(status ? { FilterExpression: '#status = :status' } : {}),
          ScanIndexForward: false,
          Limit: Math.min(limit, SHARD_READ_LIMIT),
          ExclusiveStartKey: start,
        }),
      ),
    );
  }

  async recordAttempt(write: AttemptWrite): Promise<'updated' | 'conflict'> {
    const delivered = write.next.kind === 'delivered';
    const failed = write.next.kind === 'failed';
    const status =
      write.next.kind === 'retry'
        ? WEBHOOK_DELIVERY_STATUS.pending
        : delivered
          ? WEBHOOK_DELIVERY_STATUS.delivered
          : WEBHOOK_DELIVERY_STATUS.failed;
    try {
      await this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: {
            [KEY.partition]: deliveryPartitionKey(write.endpointId, write.deliveryId),
            [KEY.sort]: write.deliveryId,
          },
          // The history is capped by the reader keeping the newest; the write appends.
          UpdateExpression:
            'SET #status = :status, attempts = :next, history = list_append(if_not_exists(history, :empty), :attempt), ' +
            'window_started_at = :window, next_attempt_at = :nextAt, updated_at = :now, delivered_at = :deliveredAt' +
            // Failed: listed and counted through its entry in the `due` index (a delivered one has none).
            (failed ? ', #entryPk = :entryPk, #entrySk = :entrySk' : ''),
          ConditionExpression: '#status = :pending AND rev = :rev AND attempts = :seq',
          ExpressionAttributeNames: {
            '#status': 'status',
            ...(failed ? { '#entryPk': INDEX.due.partitionKey, '#entrySk': INDEX.due.sortKey } : {}),
          },
          ExpressionAttributeValues: {
            ...(failed
              ? {
                  ':entryPk': failedShardPk(write.endpointId, deliveryShard(write.deliveryId)),
                  ':entrySk': write.deliveryId,
                }
              : {}),
            ':status': status,
            ':pending': WEBHOOK_DELIVERY_STATUS.pending,
            ':rev': write.rev,
            ':seq': write.seq,
            ':next': write.seq + 1,
            ':empty': [],
            ':attempt': [attemptItem(write.attempt)],
            ':window': write.windowStartedAt,
            ':nextAt': write.next.kind === 'retry' ? write.next.at : null,
            ':now': write.attempt.at,
            ':deliveredAt': delivered ? write.next.at : null,
          },
        }),
      );
      return 'updated';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'conflict';
      throw error;
    }
  }

  async retryDelivery(input: DeliveryRetry): Promise<DeliveryRetryResult> {
    try {
      const { Attributes } = await this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: {
            [KEY.partition]: deliveryPartitionKey(input.endpointId, input.deliveryId),
            [KEY.sort]: input.deliveryId,
          },
          UpdateExpression:
            'SET #status = :pending, rev = rev + :one, retry_id = :retryId, window_started_at = :now, next_attempt_at = :now, updated_at = :now, #ttl = :expiresAt ' +
            'REMOVE #entryPk, #entrySk',
          // mayRetryDelivery, on the revision and attempt count the route read and queued the copy
          // for: an attempt or another retry landing in between makes this a conflict, so only one
          // chain goes on.
          ConditionExpression:
            'rev = :rev AND attempts = :attempts AND ' +
            '(#status = :failed OR (#status = :pending AND next_attempt_at < :stalledBefore))',
          ExpressionAttributeNames: {
            '#status': 'status',
            '#ttl': TTL_ATTRIBUTE,
            '#entryPk': INDEX.due.partitionKey,
            '#entrySk': INDEX.due.sortKey,
          },
          ExpressionAttributeValues: {
            ':pending': WEBHOOK_DELIVERY_STATUS.pending,
            ':failed': WEBHOOK_DELIVERY_STATUS.failed,
            ':rev': input.seen.rev,
            ':attempts': input.seen.attempts,
            ':stalledBefore': stalledBefore(new Date(input.now)).toISOString(),
            ':one': 1,
            ':retryId': input.retryId,
            ':now': input.now,
            ':expiresAt': input.expiresAt,
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const delivery = Attributes ? readDelivery(Attributes) : null;
      return delivery ? { kind: 'updated', delivery } : { kind: 'not-found' };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const current = error.Item ? readDelivery(unmarshallLoose(error.Item)) : null;
        return current ? { kind: 'conflict', current } : { kind: 'not-found' };
      }
      throw error;
    }
  }
}

/**
 * A new delivery of `event` to `endpoint`: pending, due now, kept until the retry window and the
 * retention have passed (DynamoDB's TTL then removes it).
 */
export function newDelivery(input: {
  readonly endpoint: Pick<WebhookEndpoint, 'id' | 'tenant'>;
  readonly event: PostdateEvent;
  readonly now: Date;
  readonly retryHours: number;
  readonly retentionDays: number;
}): WebhookDelivery {
  const { endpoint, event, now } = input;
  const at = now.toISOString();
  return {
    id: webhookDeliveryId(endpoint.id, event.id, Date.parse(event.created_at) || now.getTime()),
    endpointId: endpoint.id,
    tenant: endpoint.tenant,
    eventId: event.id,
    eventType: event.type,
    payload: JSON.stringify(event),
    status: WEBHOOK_DELIVERY_STATUS.pending,
    rev: 1,
    attempts: 0,
    history: [],
    windowStartedAt: null,
    nextAttemptAt: at,
    createdAt: at,
    updatedAt: at,
    deliveredAt: null,
    expiresAt: deliveryExpiresAt(now, input.retryHours, input.retentionDays),
  };
}

/** Epoch seconds: the retry window, then the retention. */
export function deliveryExpiresAt(now: Date, retryHours: number, retentionDays: number): number {
  return Math.floor(now.getTime() / 1000) + retryHours * 3600 + retentionDays * 86_400;
}

function deliveryItem(delivery: WebhookDelivery): Record<string, unknown> {
  return {
    [KEY.partition]: deliveryPartitionKey(delivery.endpointId, delivery.id),
    [KEY.sort]: delivery.id,
    id: delivery.id,
    endpoint_id: delivery.endpointId,
    tenant: delivery.tenant,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    payload: delivery.payload,
    status: delivery.status,
    rev: delivery.rev,
    attempts: delivery.attempts,
    history: delivery.history.map(attemptItem),
    window_started_at: delivery.windowStartedAt,
    next_attempt_at: delivery.nextAttemptAt,
    created_at: delivery.createdAt,
    updated_at: delivery.updatedAt,
    delivered_at: delivery.deliveredAt,
    [TTL_ATTRIBUTE]: delivery.expiresAt,
    ...(delivery.status === WEBHOOK_DELIVERY_STATUS.failed
      ? failedEntry(delivery.endpointId, delivery.id)
      : {}),
  };
}

function attemptItem(attempt: DeliveryAttempt): Record<string, unknown> {
  return {
    at: attempt.at,
    status_code: attempt.statusCode,
    error: attempt.error,
    duration_ms: attempt.durationMs,
  };
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

function readEndpoint(item: Record<string, unknown>): WebhookEndpoint | null {
  const { id, tenant, url, secret, created_at } = item;
  if (typeof id !== 'string' || typeof tenant !== 'string' || typeof url !== 'string') return null;
  if (typeof secret !== 'string' || typeof created_at !== 'string') return null;
  const events = Array.isArray(item.events) ? item.events.filter(isEventType) : null;
  const retiredSecrets = (Array.isArray(item.retired_secrets) ? item.retired_secrets : []).flatMap(
    (entry: Record<string, unknown>) =>
      typeof entry.secret === 'string' && typeof entry.until === 'string'
        ? [{ secret: entry.secret, until: entry.until }]
        : [],
  );
  // Rotated before decision 0183: one previous secret in attributes of its own.
  const { previous_secret, previous_secret_until } = item;
  if (typeof previous_secret === 'string' && typeof previous_secret_until === 'string')
    retiredSecrets.push({ secret: previous_secret, until: previous_secret_until });
  return {
    id,
    tenant,
    url,
    events,
    description: text(item.description),
    secret,
    retiredSecrets,
    createdAt: created_at,
  };
}

function readDelivery(item: Record<string, unknown>): WebhookDelivery | null {
  const { id, endpoint_id, tenant, event_id, event_type, payload, status, rev, attempts } = item;
  if (typeof id !== 'string' || typeof endpoint_id !== 'string' || typeof tenant !== 'string') return null;
  if (typeof event_id !== 'string' || !isEventType(event_type) || typeof payload !== 'string') return null;
  if (!isWebhookDeliveryStatus(status) || typeof rev !== 'number' || typeof attempts !== 'number')
    return null;
  const history = (Array.isArray(item.history) ? item.history : [])
    .map((entry: Record<string, unknown>) => ({
      at: text(entry.at) ?? '',
      statusCode: typeof entry.status_code === 'number' ? entry.status_code : null,
      error: text(entry.error),
      durationMs: typeof entry.duration_ms === 'number' ? entry.duration_ms : 0,
    }))
    .slice(-WEBHOOK_LIMITS.maxHistory);
  return {
    id,
    endpointId: endpoint_id,
    tenant,
    eventId: event_id,
    eventType: event_type,
    payload,
    status,
    rev,
    retryId: text(item.retry_id),
    attempts,
    history,
    windowStartedAt: text(item.window_started_at),
    nextAttemptAt: text(item.next_attempt_at),
    createdAt: text(item.created_at) ?? '',
    updatedAt: text(item.updated_at) ?? '',
    deliveredAt: text(item.delivered_at),
    expiresAt: typeof item[TTL_ATTRIBUTE] === 'number' ? (item[TTL_ATTRIBUTE] as number) : 0,
  };
}

/** One shard's place in a listing: the items read and not yet merged, and where its next read starts. */
interface ShardCursor<T> {
  readonly shard: number;
  readonly items: T[];
  start: Record<string, unknown> | undefined;
  done: boolean;
}

type ShardRead = (
  shard: number,
  start: Record<string, unknown> | undefined,
) => Promise<{
  readonly Items?: Record<string, unknown>[];
  readonly LastEvaluatedKey?: Record<string, unknown>;
}>;

/**
 * Merges the shards newest first: each shard is read backwards a few items at a time (`read` knows
 * where from), and the newest head of all is taken until the page is full. A shard whose items
 * were all filtered out is read on until one is left or it ends.
 */
async function mergeShards<T extends { readonly id: string }>(
  limit: number,
  parse: (item: Record<string, unknown>) => T | null,
  read: ShardRead,
): Promise<{ readonly items: T[]; readonly nextCursor: string | null }> {
  const shards = SHARDS.map((shard): ShardCursor<T> => ({ shard, items: [], start: undefined, done: false }));
  const fill = async (cursor: ShardCursor<T>): Promise<void> => {
    while (cursor.items.length === 0 && !cursor.done) {
      const page = await read(cursor.shard, cursor.start);
      for (const item of page.Items ?? []) {
        const parsed = parse(item);
        if (parsed) cursor.items.push(parsed);
      }
      cursor.start = page.LastEvaluatedKey;
      cursor.done = cursor.start === undefined;
    }
  };
  const items: T[] = [];
  while (items.length < limit) {
    await Promise.all(shards.map(fill));
    let newest: ShardCursor<T> | undefined;
    for (const cursor of shards) {
      const head = cursor.items[0];
      if (head && (newest === undefined || head.id > (newest.items[0]?.id ?? ''))) newest = cursor;
    }
    const next = newest?.items.shift();
    if (next === undefined) break;
    items.push(next);
  }
  const more = shards.some((cursor) => cursor.items.length > 0 || !cursor.done);
  const last = items.at(-1);
  return { items, nextCursor: more && last ? last.id : null };
}

/** A failed entry of the `due` index: the delivery's id. */
function readEntryId(item: Record<string, unknown>): { readonly id: string } | null {
  return typeof item.id === 'string' ? { id: item.id } : null;
}

/** The item a lost condition returns is in the low-level shape; the document client does not convert it. */
function unmarshallLoose(item: Record<string, unknown>): Record<string, unknown> {
  return unmarshall(item as Parameters<typeof unmarshall>[0]);
}
