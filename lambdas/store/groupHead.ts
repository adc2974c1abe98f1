import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { groupHeadPk } from './messageRecord.js';
import { ITEM_SORT_KEY, KEY } from './tableLayout.js';

/**
 * The current version of a group's head, or null when the group has none (or `groupKey` is absent).
 * Pass it to `buildOutboxTransactItems` as `groupHeadVersion`: a message older than the head is then
 * written as `superseded` instead of failing the transaction. Strongly consistent.
 */
export async function readGroupHeadVersion(
  documents: DynamoDBDocumentClient,
  tableName: string,
  tenant: string,
  groupKey: string | null | undefined,
): Promise<number | null> {
  if (groupKey === null || groupKey === undefined) return null;
  const { Item } = await documents.send(
    new GetCommand({
      TableName: tableName,
      Key: { [KEY.partition]: groupHeadPk(tenant, groupKey), [KEY.sort]: ITEM_SORT_KEY.groupHead },
      ConsistentRead: true,
      ProjectionExpression: '#version',
      ExpressionAttributeNames: { '#version': 'version' },
    }),
  );
  const version = Item?.version;
  return typeof version === 'number' ? version : null;
}
