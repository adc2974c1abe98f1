import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { documentClient } from './awsLocal.js';

/**
 * A table client whose first `times` UpdateItems of each message's body fail above the SDK's retry
 * step, as a throttle that outlasted the SDK's own retries would: the write that sets the body's TTL
 * after its state write landed. Every other request reaches DynamoDB Local as it is. `failed` counts
 * the failures over all messages.
 */
export function bodyUpdatesFailing(times = 1): { documents: DynamoDBDocumentClient; failed: () => number } {
  const documents = documentClient();
  const failedFor = new Map<string, number>();
  documents.middlewareStack.add(
    (next, context) => async (args) => {
      const key = (args.input as { Key?: Record<string, unknown> }).Key;
      const sk = key?.[KEY.sort];
      const isBody =
        sk === ITEM_SORT_KEY.messageBody || (sk as { S?: string })?.S === ITEM_SORT_KEY.messageBody;
      const message = JSON.stringify(key?.[KEY.partition]);
      const failures = failedFor.get(message) ?? 0;
      if (context.commandName === 'UpdateItemCommand' && isBody && failures < times) {
        failedFor.set(message, failures + 1);
        throw new ProvisionedThroughputExceededException({ message: 'throttled', $metadata: {} });
      }
      return next(args);
    },
    { step: 'initialize', name: 'failBodyUpdates' },
  );
  return { documents, failed: () => [...failedFor.values()].reduce((sum, count) => sum + count, 0) };
}
