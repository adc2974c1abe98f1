import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DeadLetterPayload } from '../core/dispatchPayload.js';
import { MESSAGE_STATUS } from '../core/messageStatus.js';
import { messagePk, uncopiedDeadPk, waitingPk } from './messageRecord.js';
import { ITEM_SORT_KEY, KEY } from './tableLayout.js';

/**
 * A dead message's place in the `due` index says whether the DLQ is known to hold the copy of its
 * death (DESIGN §5, "Dead means dead"; decision 0159). The death write puts a live `dead` record in
 * `owed#dead#{shard}` (store/senderTransitions.ts); whoever puts that death's copy in the DLQ — the
 * sender's move, or the sweeper making it from the record — then moves the record to
 * `wait#dead#{shard}` with this write. A record left behind is one whose copy never reached the DLQ
 * by the sender's hand: the send queue's backstop moved whatever copy it had (the first redrive's,
 * naming an older death, or an unmarked one), or the put landed and this write did not. The sweeper
 * finds it there and makes the copy (lambdas/sweeper/staleDeadLetters.ts).
 *
 * One conditional `UpdateItem`, on the death's path only: the record is still this death's — same
 * rev, still `dead`, the attempts the copy names (a redrive's claim moves it to `sending`, a later
 * death has more attempts) — and still owed (a discard takes it out of the index, a retry to `due#`,
 * and a second put of the same death finds it recorded). `due_at`, since when it waits, stays.
 * Answers `moved-on` when the condition failed: nothing was written.
 */
export async function recordDeadLetterPut(
  documents: DynamoDBDocumentClient,
  tableName: string,
  letter: DeadLetterPayload,
): Promise<'recorded' | 'moved-on'> {
  try {
    await documents.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { [KEY.partition]: messagePk(letter.id), [KEY.sort]: ITEM_SORT_KEY.messageState },
        UpdateExpression: 'SET #due_pk = :waiting',
        ConditionExpression: '#rev = :rev AND #status = :dead AND #attempts = :death AND #due_pk = :uncopied',
        ExpressionAttributeNames: {
          '#due_pk': 'due_pk',
          '#rev': 'rev',
          '#status': 'status',
          '#attempts': 'attempts',
        },
        ExpressionAttributeValues: {
          ':waiting': waitingPk(MESSAGE_STATUS.dead, letter.id),
          ':uncopied': uncopiedDeadPk(letter.id),
          ':rev': letter.rev,
          ':dead': MESSAGE_STATUS.dead,
          ':death': letter.death,
        },
      }),
    );
    return 'recorded';
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return 'moved-on';
    throw error;
  }
}
