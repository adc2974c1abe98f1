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

/**
 * Sets or removes the body's TTL; a message without a body item (a broken one) has nothing to write.
 * A TTL is set only on a body created before it: its message's was, at least a retention earlier
 * (the TTL is set when the message ends). A body created after it is a new message's, put over an
 * orphan once the old record's TTL had passed (decision 0208), which a late repair read from the old
 * record must not expire. Removing a TTL needs no such check: at worst a body outlives its message.
 */
export async function writeBodyTtl(
  documents: DynamoDBDocumentClient,
  tableName: string,
  id: string,
  write: Exclude<TtlWrite, { kind: 'keep' }>,
): Promise<void> {
  const exists = `attribute_exists(${KEY.partition})`;
  try {
    await documents.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageBody },
        ...(write.kind === 'remove'
          ? {
              UpdateExpression: 'REMOVE #ttl',
              ConditionExpression: exists,
              ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE },
            }
          : {
              UpdateExpression: 'SET #ttl = :ttl',
              // `created_at` is `toISOString()` (store/outboxRecords.ts); a new message's body has one.
              ConditionExpression: `${exists} AND (attribute_not_exists(#created) OR #created < :ttlAt)`,
              ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE, '#created': 'created_at' },
              ExpressionAttributeValues: {
                ':ttl': write.expiresAt,
                ':ttlAt': new Date(write.expiresAt * 1000).toISOString(),
              },
            }),
      }),
    );
  } catch (error) {
    // No body (a broken message), or another message's: nothing to keep or to expire.
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
