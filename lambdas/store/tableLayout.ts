/**
 * The outbox table's layout: keys, item kinds and indexes, defined once as plain data.
 * The CDK stack (lib/), the local stack (local/) and the tests build the table from this file,
 * so the three can never drift. See docs/data-model.md for the meaning of every item and index.
 */
import { MESSAGE_STATUS, MESSAGE_STATUSES } from '../core/messageStatus.js';

export const KEY = { partition: 'pk', sort: 'sk' } as const;

/** Sort-key values that tell the item kinds apart (the partition key carries the id). */
export const ITEM_SORT_KEY = {
  messageState: 'STATE',
  messageBody: 'BODY',
  groupHead: 'HEAD',
  apiKey: 'APIKEY',
  /** A template version's sort key is this and the version, zero-padded (store/templateStore.ts). */
  templateVersion: 'V#',
} as const;

/** Partition-key prefixes, one per item kind. */
export const PARTITION_PREFIX = {
  message: 'MSG#',
  groupHead: 'GROUP#',
  apiKey: 'APIKEY#',
  /** A tenant's suppression list (DESIGN §12): `SUPP#{tenant}#{shard}`, sort key = the address. */
  suppression: 'SUPP#',
  /** One partition per tenant: its template heads, sort key = the template's name. */
  templateHeads: 'TPLS#',
  /** One partition per template: its versions. */
  templateVersions: 'TPL#',
} as const;

/**
 * A tenant's suppression list is spread over this many partitions by a hash of the address: every
 * send reads it (one item per recipient), so one tenant's sends never all hit one partition; a
 * listing merges the shards (lambdas/store/suppressionList.ts). Changing it moves every entry.
 */
export const SUPPRESSION_SHARDS = 16;

/**
 * One webhook endpoint's deliveries are spread over this many partitions by their id's hash
 * (`WHDL#{endpoint}#{shard}`, lambdas/store/webhookStore.ts): every event of a subscribed tenant is
 * a delivery put and an attempt update of ~2 KB each, ~8 write units a message, so at 10,000
 * messages/s one endpoint writes ~80,000 units/s: 625 per shard, the share the index shards take
 * (DESIGN §4, "No hot partitions"; docs/capacity.md). The listing merges the shards, newest first.
 * Changing it moves every delivery.
 */
export const WEBHOOK_DELIVERY_SHARDS = 128;

/**
 * How many shards the index partition keys are spread over (no hot partitions, DESIGN §4). Sized for
 * 10,000 messages/s (docs/capacity.md): at most ~625 writes/s per index key. Changing a count changes
 * partition-key values; records written before keep their old suffixes. `waiting` shards the `due`
 * index's partitions of messages waiting for an operator (one set per status): rare writes, counted by
 * the sweeper every run, so fewer shards.
 */
export const INDEX_SHARDS = { byStatus: 32, byTenant: 16, due: 64, waiting: 16 } as const;

export interface IndexDefinition {
  readonly indexName: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  readonly projection:
    | { readonly type: 'KEYS_ONLY' }
    | { readonly type: 'INCLUDE'; readonly attributes: readonly string[] };
}

export const INDEX = {
  /** Listing by status, newest first: `lst_pk = {tenant}#{status}#{shard}`, `lst_sk = {created_at}#{id}`. */
  byStatus: {
    indexName: 'by_status',
    partitionKey: 'lst_pk',
    sortKey: 'lst_sk',
    projection: { type: 'KEYS_ONLY' },
  },
  /** Listing every status, newest first: `tnt_pk = {tenant}#{shard}`, `tnt_sk = {created_at}#{id}`. Written once. */
  byTenant: {
    indexName: 'by_tenant',
    partitionKey: 'tnt_pk',
    sortKey: 'tnt_sk',
    projection: { type: 'KEYS_ONLY' },
  },
  /**
   * Sparse index of non-terminal messages for the sweeper: `due_pk = due#{shard}`, `due_at` = the ISO
   * time after which the record should have moved (send_at, lease_until or next retry).
   * Final records REMOVE `due_pk` and drop out of it; records that wait for an operator (failed,
   * dead, unknown) move to `due_pk = wait#{status}#{shard}`, `due_at` = since when, which the
   * sweeper counts into its gauge and never re-dispatches.
   */
  due: {
    indexName: 'due',
    partitionKey: 'due_pk',
    sortKey: 'due_at',
    projection: { type: 'INCLUDE', attributes: ['id', 'rev', 'status'] },
  },
} as const satisfies Record<string, IndexDefinition>;

/** TTL attribute (epoch seconds), set on terminal records and on every body. */
export const TTL_ATTRIBUTE = 'expires_at';

/** Every key attribute of the table and its indexes; all are strings. */
export const KEY_ATTRIBUTES: readonly string[] = [
  KEY.partition,
  KEY.sort,
  ...Object.values(INDEX).flatMap((index) => [index.partitionKey, index.sortKey]),
];

/** The statuses the relay never acts on (every one this stack knows but `scheduled` and `cancelled`). */
const RELAY_IGNORES: readonly string[] = MESSAGE_STATUSES.filter(
  (status) => status !== MESSAGE_STATUS.scheduled && status !== MESSAGE_STATUS.cancelled,
);

/**
 * The stream filter that lets only the records the relay acts on reach it: message state records
 * whose new image is `scheduled` (an enqueue, a reschedule, a manual retry) or `cancelled` (its
 * schedule must go), and those with a status this stack does not know — a newer writer's, which the
 * relay refuses and counts (decision 0166) — as "anything but" the statuses it never acts on.
 * Claims, outcomes and TTL deletions never invoke the relay, which saves three invocations per
 * message (bench/cost.ts). CDK puts it on the event source mapping; the local stream runner applies
 * the same pattern.
 */
export const RELAY_STREAM_FILTER = {
  dynamodb: {
    Keys: { [KEY.sort]: { S: [ITEM_SORT_KEY.messageState] } },
    NewImage: { status: { S: [{ 'anything-but': RELAY_IGNORES }] } },
  },
} as const;
