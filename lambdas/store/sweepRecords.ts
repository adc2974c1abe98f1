import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DeadLetterPayload } from '../core/dispatchPayload.js';
import type { RefusedRecord } from '../core/recordLayout.js';
import type { SweptRecord } from '../core/sweepDecision.js';
import type { RedispatchRecord, SweepRecords } from '../ports/SweepRecords.js';
import { recordDeadLetterPut } from './deadLetterEntry.js';
import { messagePk } from './messageRecord.js';
import { readStates } from './stateReads.js';
import { ITEM_SORT_KEY, KEY } from './tableLayout.js';

/**
 * The sweeper's state-record reads (BatchGetItem, consistent), its conditional re-dispatch stamp, and
 * the record of a DLQ copy it made (store/deadLetterEntry.ts).
 */
export class DynamoSweepRecords implements SweepRecords {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  read(ids: readonly string[]): Promise<ReadonlyMap<string, SweptRecord | RefusedRecord>> {
    return readStates(this.documents, this.tableName, ids, { consistentRead: true });
  }

  async recordRedispatch(input: RedispatchRecord): Promise<'recorded' | 'moved-on'> {
    try {
      await this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { [KEY.partition]: messagePk(input.id), [KEY.sort]: ITEM_SORT_KEY.messageState },
          UpdateExpression:
            'SET #due_at = :next, #sweep_due_at = :next, #sweep_count = :count, #swept_at = :now',
          ConditionExpression: '#rev = :rev AND #status = :status AND #due_at = :seen',
          ExpressionAttributeNames: {
            '#due_at': 'due_at',
            '#sweep_due_at': 'sweep_due_at',
            '#sweep_count': 'sweep_count',
            '#swept_at': 'swept_at',
            '#rev': 'rev',
            '#status': 'status',
          },
          ExpressionAttributeValues: {
            ':next': input.nextDueAt,
            ':count': input.sweepCount,
            ':now': input.now.toISOString(),
            ':rev': input.rev,
            ':status': input.status,
            ':seen': input.seenDueAt,
          },
        }),
      );
      return 'recorded';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'moved-on';
      throw error;
    }
  }

  recordDeadLetter(letter: DeadLetterPayload): Promise<'recorded' | 'moved-on'> {
    return recordDeadLetterPut(this.documents, this.tableName, letter);
  }
}
