/**
 * DESIGN §13: attachments' "lifetime follows the message's … and the retention after it; an upload
 * never referenced is deleted after a day" (docs/decisions/0144). Whatever an enqueue stored for a
 * request that did not become a message — its write failed, it lost a race for its key, an upload
 * vanished mid-way, a batch item failed, or the key names a message whose records expired — must
 * expire within a day; and what a message names is kept while it lives, a replay or a loser of a
 * race never touching it. The event producer runs over the table's real stream, as in AWS, and the
 * bucket's lifecycle is read off each object's tag (lib/constructs/Attachments.ts: `pending` a day,
 * `ended` the retention, anything else never; test/cdk/attachments.test.ts pins the rules).
 * Against DynamoDB Local and the S3 emulator.
 */
import { randomBytes } from 'node:crypto';
import {
  DeleteObjectCommand,
  GetObjectTaggingCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import { messageIdFor } from '../../lambdas/core/ids.js';
import { resumeWindowMs } from '../../lambdas/core/messageLifetime.js';
import { createEventsHandler } from '../../lambdas/events/createEventsHandler.js';
import type { ApiStore } from '../../lambdas/ports/ApiStore.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { readStateRecord } from '../../lambdas/store/stateReads.js';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { DynamoWebhookStore } from '../../lambdas/store/webhookStore.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { StreamTail } from '../relay/streamTail.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { apiHarness, uploadThroughApi } from './apiHarness.js';
import { apiEvent, enqueueEvent, validBody } from './events.js';

let emulator: S3Emulator;
let client: S3Client;
let store: S3AttachmentStore;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `unacc-${randomBytes(4).toString('hex')}` });
  client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
  store = new S3AttachmentStore({ bucket: emulator.bucket, client });
});
afterAll(async () => {
  await emulator?.stop();
});

type Fate = 'kept' | 'expires after a day' | 'expires after the retention';

/** What the bucket's lifecycle does to an object, by its tag. */
async function fateOf(key: string): Promise<Fate> {
  const tagging = await client.send(new GetObjectTaggingCommand({ Bucket: emulator.bucket, Key: key }));
  const lifetime = tagging.TagSet?.find((tag) => tag.Key === 'postdate-lifetime')?.Value;
  if (lifetime === 'pending') return 'expires after a day';
  if (lifetime === 'ended') return 'expires after the retention';
  return 'kept';
}

/** Every object under a message's prefix, with its fate. */
async function objectsOf(tenant: string, id: string): Promise<Map<string, Fate>> {
  const listed = await client.send(
    new ListObjectsV2Command({ Bucket: emulator.bucket, Prefix: `messages/${tenant}/${id}/` }),
  );
  const keys = (listed.Contents ?? []).map((object) => object.Key ?? '');
  return new Map(await Promise.all(keys.map(async (key) => [key, await fateOf(key)] as const)));
}

const inline = (text: string) => ({ filename: 'invoice.pdf', content: Buffer.from(text).toString('base64') });
const freshTenant = () => `t${randomBytes(4).toString('hex')}`;

/** The api on real parts, the event producer behind its table's stream, and an upload route. */
async function world(options: Parameters<typeof apiHarness>[0] = {}) {
  const api = await apiHarness({ attachments: store, ...options });
  api.clock.set(new Date().toISOString());
  const tail = new StreamTail(api.streamArn);
  const producer = createEventsHandler({
    store: new DynamoWebhookStore(api.documents, api.tableName),
    queue: {
      send: async () => {
        throw new Error('no endpoint is subscribed: nothing is queued');
      },
    },
    now: api.clock.now,
    retryHours: 24,
    retentionDays: 30,
    attachments: { store, currentState: (id) => readStateRecord(api.documents, api.tableName, id) },
  });
  /** Hands everything written since to the event producer, as the stream's event source does. */
  const settle = async () => {
    const batch = await tail.next();
    if (batch.Records.length > 0) expect((await producer(batch)).batchItemFailures).toEqual([]);
  };
  const upload = (tenant: string, bytes: Buffer) => uploadThroughApi(api, tenant, 'big.pdf', bytes);
  /** The keys the message's state record names now, if it has one. */
  const named = async (id: string) =>
    ((await readStateRecord(api.documents, api.tableName, id))?.attachments ?? []).map((held) => held.key);
  return { api, settle, upload, named };
}

/** An ApiStore whose state-record writes throw (throttled past the SDK's retries, say). */
function stateWritesThrow(failFor?: (id: string) => boolean): (store: ApiStore) => ApiStore {
  return (real) =>
    new Proxy(real, {
      get(target, name, receiver) {
        if (name === 'putNew')
          return async (record: Parameters<ApiStore['putNew']>[0]) => {
            if (record.sk === ITEM_SORT_KEY.messageState && (failFor?.(record.id) ?? true))
              throw Object.assign(new Error('Throughput exceeds the current capacity'), {
                name: 'ThrottlingException',
              });
            return target.putNew(record);
          };
        const value = Reflect.get(target, name, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
}

describe('what an enqueue stored for a request that did not become a message (DESIGN §13)', () => {
  it('expires after a day when the state record cannot be written (503: a throttle), inline files and copied uploads alike', async () => {
    const w = await world({ wrapStore: stateWritesThrow() });
    const tenant = freshTenant();
    const id = await w.upload(tenant, randomBytes(2048));
    const res = await w.api.call(
      enqueueEvent(validBody({ attachments: [inline('%PDF-a'), { attachment_id: id }] }), {
        tenant,
        key: 'k-500',
      }),
    );
    expect(res.status).toBe(503);
    await w.settle();
    const stored = await objectsOf(tenant, messageIdFor(tenant, 'k-500'));
    expect(stored.size).toBe(2);
    expect([...stored.values()]).toEqual(['expires after a day', 'expires after a day']);
  });

  it('expires after a day for the loser of a race for one key with other files (422), and never touches the winner’s', async () => {
    let raced = false;
    const w = await world({
      // The loser read the key's record before the winner wrote it, then stored its files.
      wrapStore: (real) =>
        new Proxy(real, {
          get(target, name, receiver) {
            if (name === 'getMessage' && !raced)
              return async () => {
                raced = true;
                return null;
              };
            const value = Reflect.get(target, name, receiver);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        }),
    });
    const tenant = freshTenant();
    raced = true; // the winner reads truly
    const winner = await w.api.call(
      enqueueEvent(validBody({ attachments: [inline('same'), inline('winner')] }), { tenant, key: 'k-race' }),
    );
    expect(winner.status).toBe(202);
    raced = false;
    const loser = await w.api.call(
      enqueueEvent(validBody({ attachments: [inline('same'), inline('loser')] }), { tenant, key: 'k-race' }),
    );
    expect(loser.status).toBe(422);
    await w.settle();

    const messageId = messageIdFor(tenant, 'k-race');
    const names = await w.named(messageId);
    const stored = await objectsOf(tenant, messageId);
    expect(names).toHaveLength(2);
    for (const key of names) expect(stored.get(key), key).toBe('kept');
    const others = [...stored].filter(([key]) => !names.includes(key));
    expect(others).toHaveLength(2);
    for (const [key, fate] of others) expect(fate, key).toBe('expires after a day');
  });

  it('expires after a day when an upload vanished between its check and its copy (400): the positions already stored', async () => {
    const w = await world();
    const tenant = freshTenant();
    const kept = await w.upload(tenant, randomBytes(1024));
    const vanishing = await w.upload(tenant, randomBytes(1024));
    const copy = store.copy.bind(store);
    store.copy = async (from, to, lifetime) => {
      // Its day ended just now: the copy finds nothing (the others' copies land first).
      if (from.endsWith(vanishing)) {
        await new Promise((resolve) => setImmediate(resolve));
        await client.send(new DeleteObjectCommand({ Bucket: emulator.bucket, Key: from }));
      }
      return copy(from, to, lifetime);
    };
    try {
      const res = await w.api.call(
        enqueueEvent(
          validBody({
            attachments: [inline('%PDF-c'), { attachment_id: kept }, { attachment_id: vanishing }],
          }),
          { tenant, key: 'k-gone' },
        ),
      );
      expect(res.status).toBe(400);
    } finally {
      store.copy = copy;
    }
    const stored = await objectsOf(tenant, messageIdFor(tenant, 'k-gone'));
    expect(stored.size).toBe(2);
    expect([...stored.values()]).toEqual(['expires after a day', 'expires after a day']);
  });

  it('expires after a day for a permissive batch item whose write failed, while its neighbour is kept', async () => {
    const tenant = freshTenant();
    const failing = messageIdFor(tenant, 'b-2');
    const w = await world({ wrapStore: stateWritesThrow((id) => id === failing) });
    const res = await w.api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/messages/batch',
        routeKey: 'POST /v1/messages/batch',
        tenant,
        body: {
          messages: [
            { idempotency_key: 'b-1', ...validBody({ attachments: [inline('one')] }) },
            { idempotency_key: 'b-2', ...validBody({ attachments: [inline('two')] }) },
          ],
        },
      }),
    );
    expect(res.status).toBe(200);
    expect((res.json.results as { status: number }[]).map((result) => result.status)).toEqual([202, 503]);
    await w.settle();
    expect([...(await objectsOf(tenant, failing)).values()]).toEqual(['expires after a day']);
    expect([...(await objectsOf(tenant, messageIdFor(tenant, 'b-1'))).values()]).toEqual(['kept']);
  });

  it("never writes over an ended message's files when its key makes a new message after its state record expired (202, decision 0208)", async () => {
    const w = await world();
    const tenant = freshTenant();
    // A body too large to ride inside the state record: it is an item of its own, which outlives
    // the state record's TTL by the sweep's lag.
    const body = validBody({ html: randomBytes(12_000).toString('base64'), attachments: [inline('%PDF-e')] });
    expect((await w.api.call(enqueueEvent(body, { tenant, key: 'k-late' }))).status).toBe(202);
    await w.settle();
    const messageId = messageIdFor(tenant, 'k-late');
    const [original = ''] = await w.named(messageId);
    // It ended long ago (its files tagged ended), and TTL took its state record, not yet its body.
    await store.setLifetime(original, 'ended');
    await w.api.documents.send(
      new DeleteCommand({
        TableName: w.api.tableName,
        Key: { [KEY.partition]: messagePk(messageId), [KEY.sort]: ITEM_SORT_KEY.messageState },
      }),
    );
    expect((await w.api.scanAll()).some((item) => item[KEY.sort] === ITEM_SORT_KEY.messageBody)).toBe(true);
    w.api.clock.advance(resumeWindowMs(30) + 60_000);

    expect((await w.api.call(enqueueEvent(body, { tenant, key: 'k-late' }))).status).toBe(202);
    const stored = await objectsOf(tenant, messageId);
    expect(stored.get(original)).toBe('expires after the retention');
    for (const [key, fate] of stored) if (key !== original) expect(fate, key).toBe('expires after a day');
  });
});

describe('what a message names (DESIGN §2: none expires while it is not terminal)', () => {
  it('is stored when its key names an ended message whose records DynamoDB deletes during the enqueue (202)', async () => {
    const tenant = freshTenant();
    const messageId = messageIdFor(tenant, 'k-reborn');
    // DynamoDB's TTL deleter reaches the ended original's state record after the enqueue read it,
    // just before the new one is written.
    let deleted = 0;
    const deleterLandsFirst = (real: ApiStore): ApiStore =>
      new Proxy(real, {
        get(target, name, receiver) {
          if (name === 'putNew')
            return async (record: Parameters<ApiStore['putNew']>[0]) => {
              if (record.sk === ITEM_SORT_KEY.messageState && deleted === 0) {
                deleted += 1;
                await w.api.documents.send(
                  new DeleteCommand({
                    TableName: w.api.tableName,
                    Key: { [KEY.partition]: messagePk(messageId), [KEY.sort]: ITEM_SORT_KEY.messageState },
                  }),
                );
              }
              return target.putNew(record);
            };
          const value = Reflect.get(target, name, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const w = await world({ wrapStore: deleterLandsFirst });
    deleted = 1; // the original's enqueue goes through untouched
    expect(
      (
        await w.api.call(
          enqueueEvent(validBody({ attachments: [inline('%PDF-1')] }), { tenant, key: 'k-reborn' }),
        )
      ).status,
    ).toBe(202);
    await w.settle();
    // It was sent long ago: its retention ran out yesterday, its file is tagged ended.
    const [original = ''] = await w.named(messageId);
    await store.setLifetime(original, 'ended');
    await w.api.documents.send(
      new UpdateCommand({
        TableName: w.api.tableName,
        Key: { [KEY.partition]: messagePk(messageId), [KEY.sort]: ITEM_SORT_KEY.messageState },
        UpdateExpression: 'SET #status = :sent, #ttl = :ttl',
        ExpressionAttributeNames: { '#status': 'status', '#ttl': 'expires_at' },
        ExpressionAttributeValues: {
          ':sent': 'sent',
          ':ttl': Math.floor(w.api.clock.now().getTime() / 1000) - 86_400,
        },
      }),
    );
    deleted = 0;

    const reborn = await w.api.call(
      enqueueEvent(validBody({ subject: 'another', attachments: [inline('%PDF-2')] }), {
        tenant,
        key: 'k-reborn',
      }),
    );
    await w.settle();

    expect(deleted).toBe(1);
    expect(reborn.status).toBe(202);
    const keys = await w.named(messageId);
    expect(keys).toHaveLength(1);
    for (const key of keys) expect(await store.describe(key), key).toBeDefined();
    expect(await objectsOf(tenant, messageId)).toEqual(
      new Map([...keys.map((key) => [key, 'kept'] as const), [original, 'expires after the retention']]),
    );
  });

  it('is kept once its record is written, and a replay with its key stores nothing and changes nothing', async () => {
    const w = await world();
    const tenant = freshTenant();
    const id = await w.upload(tenant, randomBytes(4096));
    const body = validBody({ attachments: [inline('%PDF-r'), { attachment_id: id }] });
    expect((await w.api.call(enqueueEvent(body, { tenant, key: 'k-ok' }))).status).toBe(202);
    await w.settle();
    const messageId = messageIdFor(tenant, 'k-ok');
    const before = await objectsOf(tenant, messageId);
    expect([...before.values()]).toEqual(['kept', 'kept']);
    expect([...before.keys()].sort()).toEqual((await w.named(messageId)).sort());

    expect((await w.api.call(enqueueEvent(body, { tenant, key: 'k-ok' }))).status).toBe(200);
    await w.settle();
    expect(await objectsOf(tenant, messageId)).toEqual(before);
  });
});
