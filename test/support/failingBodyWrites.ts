import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { documentClient } from './awsLocal.js';

/**
 * A table client whose first `times` UpdateItems of a message body fail above the SDK's retry step,
 * as a throttle that outlasted the SDK's own retries would: the write that sets the body's TTL after
 * its state write landed. Every other request reaches DynamoDB Local as it is.
 */
export function bodyUpdatesFailing(times = 1): { documents: DynamoDBDocumentClient; failed: () => number } {
  const documents = documentClient();
  let failed = 0;
  documents.middlewareStack.add(
    (next, context) => async (args) => {
      const key = (args.input as { Key?: Record<string, unknown> }).Key;
      const sk = key?.[KEY.sort];
      const isBody =
        sk === ITEM_SORT_KEY.messageBody || (sk as { S?: string })?.S === ITEM_SORT_KEY.messageBody;
      if (context.commandName === 'UpdateItemCommand' && isBody && failed < times) {
        failed += 1;
        throw new ProvisionedThroughputExceededException({ message: 'throttled', $metadata: {} });
      }
      return next(args);
    },
    { step: 'initialize', name: 'failBodyUpdates' },
  );
  return { documents, failed: () => failed };
}
