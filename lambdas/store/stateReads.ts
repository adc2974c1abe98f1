import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { type RefusedRecord, refusedRecord } from '../core/recordLayout.js';
import { batchGetItems } from './batchGetItems.js';
import { isMessageStateRecord, type MessageStateRecord, messagePk } from './messageRecord.js';
import { ITEM_SORT_KEY, KEY } from './tableLayout.js';

/**
 * Reads of message state records by id, shared by the API, the sender, the sweeper and the CLI. An
 * item that is not a readable state record counts as absent, so no caller works on a half-written
 * shape. `readState` and `readStates` first ask whether this stack refuses the item (a newer
 * writer's, core/recordLayout.ts): such a record is read as its refusal, never as absent.
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

/** A state record as this stack reads it: the record, or its refusal when a newer writer made it. */
export type StateRead = MessageStateRecord | RefusedRecord;

/** The item as read: refused first (core/recordLayout.ts), then the shape check; undefined: no record. */
function stateRead(item: Record<string, unknown> | undefined): StateRead | undefined {
  if (item?.[KEY.sort] !== ITEM_SORT_KEY.messageState) return undefined;
  return refusedRecord(item) ?? (isMessageStateRecord(item) ? item : undefined);
}

/** One state record or its refusal, strongly consistent; undefined when there is none (whatever its tenant). */
export async function readState(
  documents: DynamoDBDocumentClient,
  tableName: string,
  id: string,
): Promise<StateRead | undefined> {
  const { Item } = await documents.send(
    new GetCommand({ TableName: tableName, Key: stateKey(id), ConsistentRead: true }),
  );
  return stateRead(Item);
}

/** The state records (or their refusals) of some ids, by id; ids without a readable record are absent. */
export async function readStates(
  documents: DynamoDBDocumentClient,
  tableName: string,
  ids: readonly string[],
  options: { readonly consistentRead?: boolean } = {},
): Promise<Map<string, StateRead>> {
  const items = await batchGetItems(documents, tableName, [...new Set(ids)].map(stateKey), options);
  const found = new Map<string, StateRead>();
  for (const item of items) {
    const read = stateRead(item);
    if (read !== undefined) found.set(read.id, read);
  }
  return found;
}
