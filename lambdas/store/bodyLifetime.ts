/**
 * The body item's TTL, written where core/messageLifetime.ts says it changes: the one home of that
 * write for the sender's and the api's stores (the CLI's cancel, discard and `dlq drop` go through
 * the api's). It is one `UpdateItem` of the body, billed by the body's size, so it is done only
 * when the TTL changes — and `finishBodyLifetime` repeats it, idempotently, for a state write that
 * landed while its body write failed (decision 0145). Around a TTL that can be taken back, the
 * body's write is confirmed from the other side too (`takingBodyBack`, decision 0181).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mayBeTakenBack, type TtlWrite } from '../core/messageLifetime.js';
import { type MessageStateRecord, messagePk } from './messageRecord.js';
import { ITEM_SORT_KEY, KEY, TTL_ATTRIBUTE } from './tableLayout.js';

/** Sets or removes the body's TTL; a message without a body item (a broken one) has nothing to write. */
export async function writeBodyTtl(
  documents: DynamoDBDocumentClient,
  tableName: string,
  id: string,
  write: Exclude<TtlWrite, { kind: 'keep' }>,
): Promise<void> {
  try {
    await documents.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageBody },
        UpdateExpression: write.kind === 'remove' ? 'REMOVE #ttl' : 'SET #ttl = :ttl',
        ConditionExpression: `attribute_exists(${KEY.partition})`,
        ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE },
        ...(write.kind === 'set' ? { ExpressionAttributeValues: { ':ttl': write.expiresAt } } : {}),
      }),
    );
  } catch (error) {
    // No body (a broken message): nothing to keep or to expire.
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

/**
 * The body's retention made the state record's (DESIGN §2): a record that has ended carries a TTL,
 * and its body item gets the same one; a record without one leaves the body alone, and so does a
 * small message, whose body is inside its state record and expires with it (docs/data-model.md).
 */
export async function finishBodyLifetime(
  documents: DynamoDBDocumentClient,
  tableName: string,
  state: MessageStateRecord,
): Promise<void> {
  if (state.expires_at === undefined || state.body !== undefined) return;
  await writeBodyTtl(documents, tableName, state.id, { kind: 'set', expiresAt: state.expires_at });
  // A discarded (or test-side) message may have been taken back since `state` was read, its body's
  // TTL removed before ours landed: the state says so now, and the body's comes off again.
  if (mayBeTakenBack(state.status) && !(await stillEnded(documents, tableName, state.id)))
    await writeBodyTtl(documents, tableName, state.id, { kind: 'remove' });
}

/**
 * A state write that takes a message back (its TTL removed: a manual retry, a DLQ redrive's claim),
 * with the body's TTL removed around it: before, so that a crash after leaves a body that outlives
 * nothing; and again once the state write applied, for a setter's body write (a discard's, or its
 * repair) that landed in between (decision 0181). `body` is what core/messageLifetime.ts decided.
 */
export async function takingBodyBack<R>(
  documents: DynamoDBDocumentClient,
  tableName: string,
  id: string,
  body: TtlWrite,
  stateWrite: () => Promise<R>,
  applied: (result: R) => boolean,
): Promise<R> {
  if (body.kind !== 'remove') return stateWrite();
  await writeBodyTtl(documents, tableName, id, body);
  const result = await stateWrite();
  if (applied(result)) await writeBodyTtl(documents, tableName, id, body);
  return result;
}

/** Whether the state record still has a TTL (strongly consistent); one gone has ended for good. */
async function stillEnded(
  documents: DynamoDBDocumentClient,
  tableName: string,
  id: string,
): Promise<boolean> {
  const { Item } = await documents.send(
    new GetCommand({
      TableName: tableName,
      Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState },
      ProjectionExpression: '#ttl',
      ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE },
      ConsistentRead: true,
    }),
  );
  return Item === undefined || typeof Item[TTL_ATTRIBUTE] === 'number';
}
