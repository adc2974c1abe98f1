import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetItems } from './batchGetItems.js';
import { isMessageStateRecord, type MessageStateRecord, messagePk } from './messageRecord.js';
import { ITEM_SORT_KEY, KEY } from './tableLayout.js';

/**
 * Reads of message state records by id, shared by the API, the sender and the CLI. An item that is
 * not a readable state record counts as absent, so no caller works on a half-written shape.
 */

const stateKey = (id: string) => ({ [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState });

/** One state record, strongly consistent; undefined when there is none (whatever its tenant). */
export async function readStateRecord(
  documents: DynamoDBDocumentClient,
  tableName: string,
  id: string,
): Promise<MessageStateRecord | undefined> {
  const { Item } = await documents.send(
    new GetCommand({ TableName: tableName, Key: stateKey(id), ConsistentRead: true }),
  );
  return isMessageStateRecord(Item) ? Item : undefined;
}

/** The state records of some ids, by id; ids without a readable record are absent. */
export async function readStateRecords(
  documents: DynamoDBDocumentClient,
  tableName: string,
  ids: readonly string[],
  options: { readonly consistentRead?: boolean } = {},
): Promise<Map<string, MessageStateRecord>> {
  const unique = [...new Set(ids)];
  const items = await batchGetItems(documents, tableName, unique.map(stateKey), options);
  const found = new Map<string, MessageStateRecord>();
  for (const item of items) if (isMessageStateRecord(item)) found.set(item.id, item);
  return found;
}
