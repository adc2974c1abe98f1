/**
 * `POST /v1/messages/{id}/retry` of a message whose attachments' bytes are gone (DESIGN §3, §13;
 * docs/decisions/0130-a-retry-refuses-a-message-whose-attachments-are-gone.md), on DynamoDB Local and
 * the S3 emulator. A discarded message's files can be gone (expired before decision 0191, counted
 * from their write, or deleted); a retry then could only fail the message again (the sender's
 * AttachmentMissingError is permanent), so it is refused with a 409 that names the attachment and
 * says what to do, and changes nothing.
 */
import { randomBytes } from 'node:crypto';
import { DeleteObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import { retryMessage } from '../../lambdas/api/routes/messages.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, validBody } from './events.js';

let emulator: S3Emulator;
let client: S3Client;
let store: S3AttachmentStore;
let api: Awaited<ReturnType<typeof apiHarness>>;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `retry-${randomBytes(4).toString('hex')}` });
  client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
  store = new S3AttachmentStore({ bucket: emulator.bucket, client });
  api = await apiHarness({ attachments: store });
});
afterAll(async () => {
  await emulator?.stop();
});

const file = (filename: string, text: string) => ({
  filename,
  content: Buffer.from(text).toString('base64'),
});

/** A message with two attachments that failed for good and that an operator discarded. */
async function discardedWithAttachments(key: string): Promise<string> {
  const enqueued = await api.call(
    enqueueEvent(validBody({ attachments: [file('invoice.pdf', '%PDF-1'), file('terms.txt', 'terms')] }), {
      key,
    }),
  );
  expect(enqueued.status).toBe(202);
  const id = String(enqueued.json.id);
  // As the sender leaves a message every recipient refused (the status is all the retry reads).
  await api.documents.send(
    new UpdateCommand({
      TableName: api.tableName,
      Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState },
      UpdateExpression: 'SET #status = :failed REMOVE due_pk, due_at',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':failed': 'failed' },
    }),
  );
  const now = api.clock.now();
  const discarded = await api.store.discard({ tenant: 'acme', id, now, expiresAt: 2_000_000_000 });
  expect(discarded.kind).toBe('updated');
  return id;
}

async function keysOf(id: string): Promise<string[]> {
  const listed = await client.send(
    new ListObjectsV2Command({ Bucket: emulator.bucket, Prefix: `messages/acme/${id}/` }),
  );
  return (listed.Contents ?? []).map((object) => object.Key ?? '').sort();
}

async function stateOf(id: string) {
  const { Item } = await api.documents.send(
    new GetCommand({
      TableName: api.tableName,
      Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState },
      ConsistentRead: true,
    }),
  );
  return Item;
}

const retry = (id: string) => api.call(apiEvent({ method: 'POST', path: `/v1/messages/${id}/retry` }));

describe('a retry of a message whose attachments are gone', () => {
  it('is refused with a 409 naming each attachment that is gone and saying to enqueue a new message, and changes nothing', async () => {
    const id = await discardedWithAttachments('gone-1');
    const keys = await keysOf(id);
    expect(keys).toHaveLength(2);
    // The bucket's lifecycle expired the second file (written longer than the retention ago).
    const second = keys.find((key) => key.includes('/1-')) ?? '';
    await client.send(new DeleteObjectCommand({ Bucket: emulator.bucket, Key: second }));
    const before = await stateOf(id);

    const answer = await retry(id);

    expect(answer.status).toBe(409);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.json).toMatchObject({
      type: 'urn:postdate:problem:attachments-gone',
      status: 409,
      current_status: 'failed',
      errors: [{ field: '/attachments/1', message: expect.stringContaining('no longer stored') }],
    });
    expect(String(answer.json.detail)).toMatch(/new message/);
    expect(await stateOf(id)).toEqual(before);
  });

  it('is accepted (202) while every attachment is still there, discarded or not', async () => {
    const id = await discardedWithAttachments('kept-1');
    const answer = await retry(id);
    expect(answer.status).toBe(202);
    expect(answer.json).toMatchObject({ id, status: 'scheduled', rev: 2 });
  });

  it('without a bucket to check them in, is not retried unchecked: attachments-unchecked, nothing changed', async () => {
    const id = await discardedWithAttachments('unchecked-1');
    const before = await stateOf(id);
    const input = { tenant: 'acme', id, now: api.clock.now(), maxAttempts: 5 };
    const result = await retryMessage({ store: api.store }, input);
    expect(result).toMatchObject({ kind: 'attachments-unchecked', current: { id, status: 'failed' } });
    expect(await stateOf(id)).toEqual(before);
  });

  it('answers the status conflict first for a message that cannot be retried anyway', async () => {
    const enqueued = await api.call(
      enqueueEvent(validBody({ attachments: [file('invoice.pdf', '%PDF-1')] }), { key: 'scheduled-1' }),
    );
    const id = String(enqueued.json.id);
    for (const key of await keysOf(id))
      await client.send(new DeleteObjectCommand({ Bucket: emulator.bucket, Key: key }));
    const answer = await retry(id);
    expect(answer.status).toBe(409);
    expect(answer.json).toMatchObject({
      type: 'urn:postdate:problem:status-conflict',
      current_status: 'scheduled',
    });
  });
});
