import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { ERROR_CLASS, PostdateError } from '../core/postdateError.js';
import type { GroupVersion } from '../core/unsentDecision.js';
import { groupHeadPk } from './messageRecord.js';
import type { TransactWriteItem } from './outboxRecords.js';
import { ITEM_SORT_KEY, KEY } from './tableLayout.js';

/**
 * A group's head (DESIGN §4 Freshness): one item per group that keeps the highest version seen. It
 * is the one hot item of a group, so an enqueue writes it only when its version rises above it
 * (docs/decisions/0097-group-head-written-when-it-rises.md). The freshness promise does not rest on
 * the enqueue's read: heads only grow, and the sender reads the head once more, consistently, under
 * its claim just before it sends (sender/sendClaimed.ts).
 *
 * One item takes 3,000 reads/s, so the head is held by N replicas (POSTDATE_GROUP_HEAD_REPLICAS,
 * docs/decisions/0104-group-head-replicas.md): a raise writes every one in one transaction, each on
 * `attribute_not_exists OR version < :v`, so they never disagree once it lands; a reader reads one
 * at random. Replica 0 is the head item of old. A group's set never shrinks (`replicasToWrite`), and
 * a reader whose replica does not exist yet reads replica 0 (`replicaReadOutcome`): N may change on
 * a live deployment without a reader missing a raise.
 */

/** A group's head as read: its version, and how many replicas its last raise wrote. */
export interface GroupHead {
  readonly version: number;
  /** Absent on a head written before replicas: one. */
  readonly replicas: number;
  readonly updated_at?: string;
}

/** The key of replica `replica` of a group's head: 0 is the head item of old, the others each a partition. */
export function groupHeadKey(tenant: string, groupKey: string, replica: number): Record<string, string> {
  const pk = groupHeadPk(tenant, groupKey);
  return replica === 0
    ? { [KEY.partition]: pk, [KEY.sort]: ITEM_SORT_KEY.groupHead }
    : // The sort key names the replica too: group "a" replica 1 is never group "a#1"'s head.
      { [KEY.partition]: `${pk}#${replica}`, [KEY.sort]: `${ITEM_SORT_KEY.groupHead}#${replica}` };
}

/** The replica a reader configured with `replicas` reads: one at random. */
export function replicaToRead(replicas: number, random: () => number): number {
  const count = Math.max(1, Math.floor(replicas));
  return Math.min(count - 1, Math.max(0, Math.floor(random() * count)));
}

/**
 * What reading replica `replica` tells (`item` as stored, undefined when absent): its head; no head
 * when the first is absent; and when another is absent, read the first — a replica that does not
 * exist yet (N raised, no raise since) must not hide a head the first holds.
 */
export type ReplicaRead = { kind: 'head'; head: GroupHead | null } | { kind: 'read-first' };

export function replicaReadOutcome(
  replica: number,
  item:
    | { readonly version?: unknown; readonly replicas?: unknown; readonly updated_at?: unknown }
    | undefined,
): ReplicaRead {
  if (item === undefined || typeof item.version !== 'number')
    return replica === 0 ? { kind: 'head', head: null } : { kind: 'read-first' };
  return {
    kind: 'head',
    head: {
      version: item.version,
      replicas: typeof item.replicas === 'number' ? item.replicas : 1,
      ...(typeof item.updated_at === 'string' ? { updated_at: item.updated_at } : {}),
    },
  };
}

/**
 * How many replicas a raise writes: those configured, and never fewer than the group's last raise
 * wrote (`seen`) — a replica left out of a raise would answer an older version. Replica 0's
 * condition checks it too (`replicas <= :n`), so a raise that read a stale count fails and reads again.
 */
export function replicasToWrite(configured: number, seen: number | undefined): number {
  return Math.max(configured, seen ?? 1);
}

/**
 * What an enqueue at `version` does to the head it read (`head`; null: the group has none yet;
 * undefined: not read).
 *
 * - `raise`: absent or lower — set it to `version`, on condition that it is still absent or lower
 *   (`attribute_not_exists OR version < :v`), in the message's own transaction: a concurrent raise
 *   fails ours, and the enqueue reads again.
 * - `none`: at `version` already — nothing to write; the message is put alone. A raise that lands
 *   meanwhile supersedes it at send time, as it would a message written a moment earlier.
 * - `check-above`: higher — the message is written `superseded`. No write. A head the api read from
 *   the table needs no check: heads only grow, so it is above for good, and a group's late messages
 *   take nothing of replica 0 (DESIGN §4). A caller of the public outbox may pass a head it made up,
 *   so its transaction checks that the head is above (`groupHeadCheckItem`, added by the outbox alone:
 *   no function's code builds it, decision 0200).
 * - `raise-or-keep`: not read (the public outbox without `groupHeadVersion`) — set it on condition
 *   that it is absent or at most `version`: an equal head is rewritten, a higher one fails.
 */
export type GroupHeadStep = 'raise' | 'none' | 'check-above' | 'raise-or-keep';

export function groupHeadStep(head: number | null | undefined, version: number): GroupHeadStep {
  if (head === undefined) return 'raise-or-keep';
  if (head === null || head < version) return 'raise';
  return head === version ? 'none' : 'check-above';
}

/**
 * The transaction items that carry `step` for a message of `tenant` in `group` (written at
 * `writtenAt`) over `replicas` replicas: none when the head is left alone or above the message (the
 * public outbox adds its check, `groupHeadCheckItem`), an update of every replica for a raise.
 */
export function groupHeadItems(
  tableName: string,
  input: {
    readonly tenant: string;
    readonly group: GroupVersion;
    readonly step: GroupHeadStep;
    readonly writtenAt: string;
    readonly replicas: number;
  },
): TransactWriteItem[] {
  switch (input.step) {
    case 'none':
    case 'check-above':
      return [];
    case 'raise':
    case 'raise-or-keep':
      return raiseItems(tableName, {
        tenant: input.tenant,
        groupKey: input.group.key,
        version: input.group.version,
        now: input.writtenAt,
        replicas: input.replicas,
        below: input.step === 'raise' ? '<' : '<=',
      });
  }
}

/**
 * The public outbox's check that the head it was given is above its message (`check-above`): the
 * caller's transaction fails if the head is not, instead of writing a live message `superseded`.
 */
export function groupHeadCheckItem(
  tableName: string,
  input: { readonly tenant: string; readonly group: GroupVersion },
): TransactWriteItem {
  return {
    ConditionCheck: {
      TableName: tableName,
      Key: groupHeadKey(input.tenant, input.group.key, 0),
      ConditionExpression: '#version > :version',
      ExpressionAttributeNames: { '#version': 'version' },
      ExpressionAttributeValues: { ':version': input.group.version },
    },
  };
}

/** An update of every replica to `version`, each only if absent or below it (`<`, or `<=` to keep). */
function raiseItems(
  tableName: string,
  input: {
    readonly tenant: string;
    readonly groupKey: string;
    readonly version: number;
    readonly now: string;
    readonly replicas: number;
    readonly below: '<' | '<=';
  },
): TransactWriteItem[] {
  const rises = `(attribute_not_exists(${KEY.partition}) OR #version ${input.below} :version)`;
  return Array.from({ length: input.replicas }, (_, replica) => ({
    Update: {
      TableName: tableName,
      Key: groupHeadKey(input.tenant, input.groupKey, replica),
      UpdateExpression: 'SET #version = :version, #updated = :now, #replicas = :replicas',
      // Replica 0 also refuses a raise over fewer replicas than the group has (replicasToWrite).
      ConditionExpression:
        replica === 0 ? `${rises} AND (attribute_not_exists(#replicas) OR #replicas <= :replicas)` : rises,
      ExpressionAttributeNames: { '#version': 'version', '#updated': 'updated_at', '#replicas': 'replicas' },
      ExpressionAttributeValues: {
        ':version': input.version,
        ':now': input.now,
        ':replicas': input.replicas,
      },
    },
  }));
}

/** How a reader reads the head: which replicas exist to choose from, and its randomness. */
export interface GroupHeadReading {
  /** Strongly consistent unless false (the enqueue's first read: heads only grow). */
  readonly consistent?: boolean | undefined;
  /** POSTDATE_GROUP_HEAD_REPLICAS of the reader (default 1: the first). */
  readonly replicas?: number | undefined;
  readonly random?: (() => number) | undefined;
}

/** A store's group-head settings: POSTDATE_GROUP_HEAD_REPLICAS and the randomness that picks one. */
export interface GroupHeadReplicas {
  readonly groupHeadReplicas?: number | undefined;
  readonly random?: (() => number) | undefined;
}

/**
 * A group's head, read from one replica chosen at random (the first when that one does not exist
 * yet), or null when the group has none.
 */
export async function readGroupHead(
  documents: DynamoDBDocumentClient,
  tableName: string,
  tenant: string,
  groupKey: string,
  options: GroupHeadReading = {},
): Promise<GroupHead | null> {
  const replicas = options.replicas ?? 1;
  const replica = replicas > 1 ? replicaToRead(replicas, options.random ?? Math.random) : 0;
  const read = async (which: number) => {
    const { Item } = await documents.send(
      new GetCommand({
        TableName: tableName,
        Key: groupHeadKey(tenant, groupKey, which),
        ConsistentRead: options.consistent ?? true,
        ProjectionExpression: '#version, #replicas, #updated',
        ExpressionAttributeNames: {
          '#version': 'version',
          '#replicas': 'replicas',
          '#updated': 'updated_at',
        },
      }),
    );
    return replicaReadOutcome(which, Item);
  };
  const first = await read(replica);
  const outcome = first.kind === 'read-first' ? await read(0) : first;
  return outcome.kind === 'head' ? outcome.head : null;
}

/**
 * The current version of a group's head, or null when the group has none (or `groupKey` is absent).
 * Pass it to `buildOutboxTransactItems` as `groupHeadVersion`: a message older than the head is then
 * written as `superseded` instead of failing the transaction, and one at the head's version leaves
 * the head unwritten. Strongly consistent unless `consistent` is false: an enqueue may read it
 * eventually consistently, since heads only grow and the transaction's condition catches a head that
 * moved (groupHeadStep); the sender's check before it sends reads it consistently.
 */
export async function readGroupHeadVersion(
  documents: DynamoDBDocumentClient,
  tableName: string,
  tenant: string,
  groupKey: string | null | undefined,
  options: GroupHeadReading = {},
): Promise<number | null> {
  if (groupKey === null || groupKey === undefined) return null;
  return (await readGroupHead(documents, tableName, tenant, groupKey, options))?.version ?? null;
}

const RAISE_ATTEMPTS = 5;

/**
 * PUT /v1/groups/{key}: raises a group's head to `version` over every replica (at least
 * `replicas`, never fewer than the group has), or answers the head as it is when it is at or above
 * it. One item: a conditional update; more: one transaction.
 */
export async function raiseGroupHead(
  documents: DynamoDBDocumentClient,
  tableName: string,
  input: {
    readonly tenant: string;
    readonly groupKey: string;
    readonly version: number;
    readonly now: Date;
    readonly replicas: number;
  },
): Promise<{ version: number; updated_at: string }> {
  const now = input.now.toISOString();
  let seen: number | undefined;
  let contended: unknown;
  for (let attempt = 0; attempt < RAISE_ATTEMPTS; attempt++) {
    const items = raiseItems(tableName, {
      ...input,
      now,
      replicas: replicasToWrite(input.replicas, seen),
      below: '<',
    });
    try {
      const only = items.length === 1 ? items[0]?.Update : undefined;
      if (only !== undefined) await documents.send(new UpdateCommand(only));
      else await documents.send(new TransactWriteCommand({ TransactItems: items }));
      return { version: input.version, updated_at: now };
    } catch (error) {
      const refused =
        error instanceof ConditionalCheckFailedException ||
        (error instanceof TransactionCanceledException &&
          (error.CancellationReasons ?? []).some((reason) => reason.Code === 'ConditionalCheckFailed'));
      // A transaction another one held: nothing was written; try again.
      if (!refused && !(error instanceof TransactionCanceledException)) throw error;
      if (!refused) {
        contended = error;
        continue;
      }
    }
    // Refused: the head is at or above the version (answer it), or has more replicas than we wrote.
    const head = await readGroupHead(documents, tableName, input.tenant, input.groupKey);
    if (head !== null && head.version >= input.version)
      return { version: head.version, updated_at: head.updated_at ?? now };
    seen = head?.replicas;
  }
  throw new GroupHeadContendedError(contended);
}

/** A raise that other writers kept from landing, attempt after attempt: the caller may try again. */
export class GroupHeadContendedError extends PostdateError {
  override readonly name = 'GroupHeadContendedError';
  constructor(cause: unknown) {
    super(`the group head's raise was contended ${RAISE_ATTEMPTS} times`, {
      class: ERROR_CLASS.transient,
      cause,
    });
  }
}
