import { DeleteCommand, type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { KEY, TTL_ATTRIBUTE } from '../../lambdas/store/tableLayout.js';

/**
 * DynamoDB's TTL played on DynamoDB Local, which keeps the table's TTL setting but never deletes an
 * item: every item whose `expires_at` (epoch seconds) is before `now` is deleted, as AWS would do
 * some time after that instant. A test moves its clock, calls this, and sees what a message that
 * waited that long would find. Answers the keys it deleted.
 */
export async function expireAsTtlWould(
  documents: DynamoDBDocumentClient,
  tableName: string,
  now: Date,
): Promise<{ pk: string; sk: string }[]> {
  const nowSeconds = Math.floor(now.getTime() / 1000);
  const deleted: { pk: string; sk: string }[] = [];
  let cursor: Record<string, unknown> | undefined;
  do {
    const page = await documents.send(
      new ScanCommand({
        TableName: tableName,
        FilterExpression: '#ttl < :now',
        ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE },
        ExpressionAttributeValues: { ':now': nowSeconds },
        ConsistentRead: true,
        ExclusiveStartKey: cursor,
      }),
    );
    for (const item of page.Items ?? []) {
      const key = { pk: String(item[KEY.partition]), sk: String(item[KEY.sort]) };
      await documents.send(
        new DeleteCommand({
          TableName: tableName,
          Key: { [KEY.partition]: key.pk, [KEY.sort]: key.sk },
        }),
      );
      deleted.push(key);
    }
    cursor = page.LastEvaluatedKey;
  } while (cursor !== undefined);
  return deleted;
}
