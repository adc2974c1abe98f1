import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SweptRecord } from '../core/sweepDecision.js';
import type { RedispatchRecord, SweepRecords } from '../ports/SweepRecords.js';
import { batchGetItems } from './batchGetItems.js';
import { messagePk } from './messageRecord.js';
import { readStateRecords } from './stateReads.js';
import { ITEM_SORT_KEY, KEY, TTL_ATTRIBUTE } from './tableLayout.js';

/** The sweeper's state-record reads (BatchGetItem, consistent) and its conditional re-dispatch stamp. */
export class DynamoSweepRecords implements SweepRecords {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  read(ids: readonly string[]): Promise<ReadonlyMap<string, SweptRecord>> {
    return readStateRecords(this.documents, this.tableName, ids, { consistentRead: true });
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

  async holdBodies(status: SweptRecord['status'], ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const bodyKey = (id: string) => ({
      [KEY.partition]: messagePk(id),
      [KEY.sort]: ITEM_SORT_KEY.messageBody,
    });
    // Read first (half a unit each): only a body that still has a TTL costs a transaction.
    const bodies = await batchGetItems(this.documents, this.tableName, ids.map(bodyKey), {
      projection: `${KEY.partition}, ${TTL_ATTRIBUTE}`,
    });
    let held = 0;
    for (const body of bodies) {
      if (body[TTL_ATTRIBUTE] === undefined || typeof body[KEY.partition] !== 'string') continue;
      const pk = body[KEY.partition] as string;
      try {
        await this.documents.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                // Only while the message still waits in that status with no TTL of its own.
                ConditionCheck: {
                  TableName: this.tableName,
                  Key: { [KEY.partition]: pk, [KEY.sort]: ITEM_SORT_KEY.messageState },
                  ConditionExpression: '#status = :status AND attribute_not_exists(#ttl)',
                  ExpressionAttributeNames: { '#status': 'status', '#ttl': TTL_ATTRIBUTE },
                  ExpressionAttributeValues: { ':status': status },
                },
              },
              {
                Update: {
                  TableName: this.tableName,
                  Key: { [KEY.partition]: pk, [KEY.sort]: ITEM_SORT_KEY.messageBody },
                  UpdateExpression: 'REMOVE #ttl',
                  ConditionExpression: 'attribute_exists(#ttl)',
                  ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE },
                },
              },
            ],
          }),
        );
        held++;
      } catch (error) {
        // The message moved on (retried, discarded) or the body changed: nothing to hold.
        if (!(error instanceof TransactionCanceledException)) throw error;
      }
    }
    return held;
  }
}
