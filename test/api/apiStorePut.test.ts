import {
  ProvisionedThroughputExceededException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { parseEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { buildOutboxWrite } from '../../lambdas/outbox/outboxItems.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { validBody } from './events.js';

const now = new Date('2026-11-29T18:00:00.000Z');

function write(tableName: string, subject: string) {
  const parsed = parseEnqueueRequest(validBody({ subject }), {
    allowedFrom: ['*@example.com'],
    defaultFrom: 'ops@example.com',
    maxHorizonDays: 400,
    now,
  });
  if (!parsed.ok) throw new Error(parsed.problem.detail);
  return buildOutboxWrite({ tableName, tenant: 'acme', idempotencyKey: 'put-1', request: parsed.value, now });
}

/** A document client whose every call fails with `error`: DynamoDB Local cannot be made to. */
function failingWith(error: Error): DynamoDBDocumentClient {
  return { send: async () => Promise.reject(error) } as unknown as DynamoDBDocumentClient;
}

describe("the API store's conditional put (an ungrouped enqueue, item by item)", () => {
  it('writes a record once; a second put of the same key answers exists and changes nothing', async () => {
    const { tableName } = await freshTable('put');
    const store = new DynamoApiStore(documentClient(), tableName);
    const first = write(tableName, 'First');
    const second = write(tableName, 'Second');

    expect(await store.putNew(first.body)).toEqual({ kind: 'written' });
    expect(await store.putNew(second.body)).toEqual({ kind: 'exists' });

    const { Item } = await documentClient().send(
      new GetCommand({ TableName: tableName, Key: { pk: first.body.pk, sk: first.body.sk } }),
    );
    expect(Item?.subject).toBe('First');
    expect(await store.readBodyStamp(first.messageId, now)).toEqual({
      fingerprint: first.body.fingerprint,
      created_at: first.body.created_at,
    });
  });

  it('answers contended when a transaction holds the item (nothing was written, trying again is safe)', async () => {
    const conflict = new TransactionConflictException({ message: 'conflict', $metadata: {} });
    const store = new DynamoApiStore(failingWith(conflict), 't');
    expect(await store.putNew(write('t', 'x').state)).toEqual({ kind: 'contended' });
  });

  it('lets any other error through, for the handler to answer', async () => {
    const throttled = new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: {} });
    const store = new DynamoApiStore(failingWith(throttled), 't');
    await expect(store.putNew(write('t', 'x').state)).rejects.toBe(throttled);
  });
});
