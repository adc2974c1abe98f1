import * as zlib from 'node:zlib';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { bodyOfStoredItem, inlineBodyOf } from '../../lambdas/store/bodyContent.js';
import { type MessageStateRecord, messagePk } from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY } from '../../lambdas/store/tableLayout.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { enqueueTextMail } from './enqueueTextMail.js';

/**
 * What an enqueue costs the api beyond its puts (issue 32): the body's brotli (store/bodyContent.ts)
 * is about 1.6 ms of a 1 KB mail under load, so an enqueue compresses its body at most once, however
 * many forms it weighs (inside the state record or an item of its own, plain or compressed). The real
 * api enqueue on DynamoDB Local; the compressor is Node's own, only counted.
 */
vi.mock('node:zlib', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:zlib')>();
  return { ...original, brotliCompressSync: vi.fn(original.brotliCompressSync) };
});

const compressions = vi.mocked(zlib.brotliCompressSync);
const documents = documentClient();
let store: DynamoApiStore;
let keys = 0;

beforeAll(async () => {
  const { tableName } = await freshTable('compression');
  store = new DynamoApiStore(documents, tableName);
});

async function enqueue(text: string): Promise<MessageStateRecord> {
  keys += 1;
  const now = new Date();
  return enqueueTextMail(store, {
    text,
    now,
    idempotencyKey: `compression-${keys}-${now.getTime()}`,
    retentionDays: 30,
  });
}

/** The text as the sender reads it back: from the state record, or from the body item. */
async function storedText(state: MessageStateRecord): Promise<string | null | undefined> {
  const inline = inlineBodyOf(state);
  if (inline !== undefined) return inline.text;
  const { Item } = await documents.send(
    new GetCommand({
      TableName: store.tableName,
      Key: { pk: messagePk(state.id), sk: ITEM_SORT_KEY.messageBody },
      ConsistentRead: true,
    }),
  );
  return Item === undefined ? undefined : bodyOfStoredItem(Item, state.id).text;
}

describe('an enqueue compresses its body at most once', () => {
  it.each([
    ['a short body (inside the state record, plain)', 'Your code is 424242.'],
    ['a 1 KB mail (an item of its own, as the enqueueLatency bench sends)', mailText(1024)],
    ['a 2 KB mail (inside the state record, compressed)', mailText(2048)],
    ['a 20 KB mail (an item of its own, compressed)', mailText(20 * 1024)],
  ])('%s', async (_, text) => {
    compressions.mockClear();
    const state = await enqueue(text);
    expect(compressions.mock.calls.length).toBeLessThanOrEqual(1);
    expect(await storedText(state)).toBe(text);
  });
});
