import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { WEBHOOK_DELIVERY_STATUS } from '../lambdas/core/webhooks.js';
import type { QueuedWebhookCopy, WebhookQueue } from '../lambdas/ports/Webhooks.js';
import { KEY } from '../lambdas/store/tableLayout.js';
import { WEBHOOK_PARTITION_PREFIX } from '../lambdas/store/webhookStore.js';

/**
 * What SQS would have kept: the local SQS emulator holds its queues in memory, so a stack restarted
 * on its data dir has lost every webhook copy that was waiting (a first attempt, or a retry's
 * delayed copy). In AWS the queue keeps them. On a reused table the local stack therefore queues one
 * copy again for every delivery still `pending` (its current revision and attempt count, no delay:
 * the delivery function puts back a copy that comes before its `next_attempt_at`, and a duplicate of
 * a copy costs at most one extra POST). A Scan, local only: the local table is small.
 */
export async function requeuePendingDeliveries(
  documents: DynamoDBDocumentClient,
  tableName: string,
  queue: WebhookQueue,
): Promise<number> {
  const copies: QueuedWebhookCopy[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await documents.send(
      new ScanCommand({
        TableName: tableName,
        FilterExpression: 'begins_with(#pk, :prefix) AND #status = :pending',
        ProjectionExpression: 'endpoint_id, id, rev, attempts, retry_id',
        ExpressionAttributeNames: { '#pk': KEY.partition, '#status': 'status' },
        ExpressionAttributeValues: {
          ':prefix': WEBHOOK_PARTITION_PREFIX.delivery,
          ':pending': WEBHOOK_DELIVERY_STATUS.pending,
        },
        ExclusiveStartKey: startKey,
        ConsistentRead: true,
      }),
    );
    for (const item of page.Items ?? []) {
      const { endpoint_id, id, rev, attempts, retry_id } = item;
      if (typeof endpoint_id !== 'string' || typeof id !== 'string') continue;
      if (typeof rev !== 'number' || typeof attempts !== 'number') continue;
      copies.push({
        copy: {
          v: 1,
          endpoint: endpoint_id,
          delivery: id,
          rev,
          seq: attempts,
          // A manual retry's revision takes only its own copies (isCopyOfItsRetry).
          ...(typeof retry_id === 'string' ? { retry: retry_id } : {}),
        },
        delaySeconds: 0,
      });
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  for (let from = 0; from < copies.length; from += 10) {
    const { failed, error } = await queue.send(copies.slice(from, from + 10));
    if (failed.length > 0) throw error ?? new Error('the webhook queue refused a copy');
  }
  return copies.length;
}
