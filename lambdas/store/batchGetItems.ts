import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';

/** BatchGetItem takes at most this many keys per request. */
export const BATCH_GET_LIMIT = 100;
/** Rounds of retrying unprocessed keys per chunk before giving up on them. */
const UNPROCESSED_ROUNDS = 10;

/**
 * Every item of `keys` that exists, read with BatchGetItem in chunks of 100, unprocessed keys tried
 * again (up to 10 rounds per chunk). Items not found, or still unprocessed after the last round, are
 * simply absent from the answer; callers treat absence as "not there (yet)".
 */
export async function batchGetItems(
  documents: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
  options: { readonly consistentRead?: boolean; readonly projection?: string } = {},
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
    let pending: Record<string, unknown>[] = keys.slice(start, start + BATCH_GET_LIMIT);
    for (let round = 0; pending.length > 0 && round < UNPROCESSED_ROUNDS; round++) {
      const result = await documents.send(
        new BatchGetCommand({
          RequestItems: {
            [tableName]: {
              Keys: pending,
              ...(options.consistentRead ? { ConsistentRead: true } : {}),
              ...(options.projection ? { ProjectionExpression: options.projection } : {}),
            },
          },
        }),
      );
      items.push(...(result.Responses?.[tableName] ?? []));
      pending = result.UnprocessedKeys?.[tableName]?.Keys ?? [];
    }
  }
  return items;
}
