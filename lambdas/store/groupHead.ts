import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
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
 */

/**
 * What an enqueue at `version` does to the head it read (`head`; null: the group has none yet;
 * undefined: not read).
 *
 * - `raise`: absent or lower — set it to `version`, on condition that it is still absent or lower
 *   (`attribute_not_exists OR version < :v`), in the message's own transaction: a concurrent raise
 *   fails ours, and the enqueue reads again.
 * - `none`: at `version` already — nothing to write; the message is put alone. A raise that lands
 *   meanwhile supersedes it at send time, as it would a message written a moment earlier.
 * - `check-above`: higher — the message is written `superseded`, and the transaction checks that
 *   the head is above it (a caller of the public outbox may pass a head it made up). No write.
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
 * The transaction item that carries `step` for a message of `tenant` in `group` (written at
 * `writtenAt`), or undefined when the head is left alone.
 */
export function groupHeadItem(
  tableName: string,
  input: {
    readonly tenant: string;
    readonly group: GroupVersion;
    readonly step: GroupHeadStep;
    readonly writtenAt: string;
  },
): TransactWriteItem | undefined {
  const Key = {
    [KEY.partition]: groupHeadPk(input.tenant, input.group.key),
    [KEY.sort]: ITEM_SORT_KEY.groupHead,
  };
  const names = { '#version': 'version' };
  switch (input.step) {
    case 'none':
      return undefined;
    case 'check-above':
      return {
        ConditionCheck: {
          TableName: tableName,
          Key,
          ConditionExpression: '#version > :version',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ':version': input.group.version },
        },
      };
    case 'raise':
    case 'raise-or-keep':
      return {
        Update: {
          TableName: tableName,
          Key,
          UpdateExpression: 'SET #version = :version, #updated = :now',
          ConditionExpression: `attribute_not_exists(${KEY.partition}) OR #version ${input.step === 'raise' ? '<' : '<='} :version`,
          ExpressionAttributeNames: { ...names, '#updated': 'updated_at' },
          ExpressionAttributeValues: { ':version': input.group.version, ':now': input.writtenAt },
        },
      };
  }
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
  options: { readonly consistent?: boolean } = {},
): Promise<number | null> {
  if (groupKey === null || groupKey === undefined) return null;
  const { Item } = await documents.send(
    new GetCommand({
      TableName: tableName,
      Key: { [KEY.partition]: groupHeadPk(tenant, groupKey), [KEY.sort]: ITEM_SORT_KEY.groupHead },
      ConsistentRead: options.consistent ?? true,
      ProjectionExpression: '#version',
      ExpressionAttributeNames: { '#version': 'version' },
    }),
  );
  const version = Item?.version;
  return typeof version === 'number' ? version : null;
}
