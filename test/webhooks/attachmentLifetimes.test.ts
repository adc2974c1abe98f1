/**
 * The lifetime of a message's attachments (DESIGN §2 "Only a terminal status starts the retention
 * clock", §13; docs/decisions/0083, 0090, 0144): the event producer, which reads every write of a
 * state record, tags a message's objects (written `pending` by the enqueue) `live` once its record
 * is written, `ended` when a write ends it (its TTL set: a final status, or an operator's discard),
 * `live` again when a retry or a redrive takes it back; and a record replayed after newer ones
 * (`postdate event-failures redrive`) never undoes what they did. An ended message's files written on
 * an earlier day are written again at the end, since the bucket's lifecycle counts from the write
 * (decision 0191). The table holds each message's current record, as it would. Against s3rver,
 * DynamoDB Local and the SQS emulator.
 */
import { randomBytes } from 'node:crypto';
import { GetObjectTaggingCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import type { MessageStatus } from '../../lambdas/core/messageStatus.js';
import type { AttachmentStore } from '../../lambdas/ports/AttachmentStore.js';
import { readStateRecord } from '../../lambdas/store/stateReads.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { documentClient, LOCAL_AWS } from '../support/awsLocal.js';
import { stateImage, webhookHarness } from './webhookHarness.js';

let emulator: S3Emulator;
let client: S3Client;
let store: S3AttachmentStore;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `end-${randomBytes(4).toString('hex')}` });
  client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
  store = new S3AttachmentStore({ bucket: emulator.bucket, client });
});
afterAll(async () => {
  await emulator?.stop();
});

async function tagsOf(key: string): Promise<Record<string, string>> {
  const tagging = await client.send(new GetObjectTaggingCommand({ Bucket: emulator.bucket, Key: key }));
  return Object.fromEntries((tagging.TagSet ?? []).map((tag) => [tag.Key ?? '', tag.Value ?? '']));
}

const TTL = 1_800_000_000;
let sequence = 0;

function state(id: string, status: MessageStatus, keys: readonly string[], expiresAt?: number) {
  return {
    ...stateImage({ id, tenant: 'acme', status, updatedAt: `2026-12-01T09:00:0${sequence % 10}.000Z` }),
    ...(keys.length > 0
      ? {
          attachments: keys.map((key) => ({
            filename: 'a.pdf',
            content_type: 'application/pdf',
            size: 3,
            sha256: 'ab'.repeat(32),
            key,
          })),
        }
      : {}),
    ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
  };
}

function record(before: ReturnType<typeof state> | null, after: ReturnType<typeof state>): DynamoDBRecord {
  sequence++;
  return {
    eventName: before ? 'MODIFY' : 'INSERT',
    dynamodb: {
      SequenceNumber: String(sequence).padStart(10, '0'),
      Keys: { pk: { S: after.pk }, sk: { S: 'STATE' } },
      ...(before ? { OldImage: marshall(before, { removeUndefinedValues: true }) as never } : {}),
      NewImage: marshall(after, { removeUndefinedValues: true }) as never,
    },
  };
}

/**
 * The event producer on a fresh table. `write(before, after)` makes `after` the table's current
 * record and answers the stream record of that write, as the stream would carry it.
 */
async function producer(attachments: AttachmentStore = store) {
  const harness = await webhookHarness();
  const produce = harness.producer({
    attachments: {
      store: attachments,
      currentState: (id) => readStateRecord(documentClient(), harness.tableName, id),
    },
  });
  const hold = async (current: ReturnType<typeof state>) => {
    await documentClient().send(new PutCommand({ TableName: harness.tableName, Item: current }));
  };
  const write = async (before: ReturnType<typeof state> | null, after: ReturnType<typeof state>) => {
    await hold(after);
    return record(before, after);
  };
  return { produce, hold, write, now: harness.clock.now };
}

/** A message's objects, as an enqueue writes them: tagged pending. */
async function objects(id: string, count: number): Promise<string[]> {
  const keys = Array.from({ length: count }, (_, n) => `messages/acme/${id}/${n}-x`);
  await Promise.all(
    keys.map((key) => store.put(key, new Uint8Array([1, 2, 3]), 'application/pdf', 'pending')),
  );
  return keys;
}

const LIVE = { 'postdate-lifetime': 'live' };
const ENDED = { 'postdate-lifetime': 'ended' };

describe("a message's attachments", () => {
  it('are kept (live) from the first write of the record while the message waits, and tagged ended when it is sent', async () => {
    const { produce, write } = await producer();
    const keys = await objects('m-sent', 2);
    expect(await tagsOf(keys[0] ?? '')).toEqual({ 'postdate-lifetime': 'pending' });
    const scheduled = state('m-sent', 'scheduled', keys);
    const sending = state('m-sent', 'sending', keys);
    const waiting = await produce({
      Records: [await write(null, scheduled), await write(scheduled, sending)],
    });
    expect(waiting.batchItemFailures).toEqual([]);
    for (const key of keys) expect(await tagsOf(key)).toEqual(LIVE);

    const sent = state('m-sent', 'sent', keys, TTL);
    expect((await produce({ Records: [await write(sending, sent)] })).batchItemFailures).toEqual([]);
    for (const key of keys) expect(await tagsOf(key)).toEqual(ENDED);
  });

  it("are tagged ended by an operator's discard (no status change), and live again when a retry takes it back", async () => {
    const { produce, write } = await producer();
    const keys = await objects('m-dead', 1);
    const dead = state('m-dead', 'dead', keys);
    const discarded = state('m-dead', 'dead', keys, TTL);
    await produce({ Records: [await write(dead, discarded)] });
    expect(await tagsOf(keys[0] ?? '')).toEqual(ENDED);

    const retried = state('m-dead', 'scheduled', keys);
    await produce({ Records: [await write(discarded, retried)] });
    expect(await tagsOf(keys[0] ?? '')).toEqual(LIVE);
  });

  it('leave the last word to the last write when a message ends and comes back in one batch', async () => {
    const { produce, write } = await producer();
    const keys = await objects('m-both', 1);
    const failed = state('m-both', 'failed', keys);
    const discarded = state('m-both', 'failed', keys, TTL);
    const retried = state('m-both', 'scheduled', keys);
    await produce({ Records: [await write(failed, discarded), await write(discarded, retried)] });
    expect(await tagsOf(keys[0] ?? '')).toEqual(LIVE);
  });

  it('are not an error when already gone, and a message without attachments tags nothing', async () => {
    const { produce, write } = await producer();
    const gone = ['messages/acme/m-gone/0-x'];
    const before = state('m-gone', 'sending', gone);
    const plain = state('m-plain', 'sending', []);
    const answer = await produce({
      Records: [
        await write(before, state('m-gone', 'sent', gone, TTL)),
        await write(plain, state('m-plain', 'sent', [], TTL)),
      ],
    });
    expect(answer.batchItemFailures).toEqual([]);
  });

  it('a tagging that fails reports its record for a retry', async () => {
    const { produce, write } = await producer(
      new S3AttachmentStore({ bucket: 'no-such-bucket-here', client }),
    );
    const keys = ['messages/acme/m-fail/0-x'];
    const sending = state('m-fail', 'sending', keys);
    const ended = await write(sending, state('m-fail', 'sent', keys, TTL));
    const answer = await produce({ Records: [ended] });
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: ended.dynamodb?.SequenceNumber }]);
  });
});

describe('a replayed record (event-failures redrive) never undoes a later tagging (decision 0090)', () => {
  it('a discard replayed after a retry took the message back leaves its files live (its send needs them)', async () => {
    const { produce, write } = await producer();
    const keys = await objects('m-replay-end', 1);
    const dead = state('m-replay-end', 'dead', keys);
    const discarded = state('m-replay-end', 'dead', keys, TTL);
    const discard = await write(dead, discarded);
    await produce({ Records: [discard] });
    const retried = state('m-replay-end', 'scheduled', keys);
    await produce({ Records: [await write(discarded, retried)] });
    expect(await tagsOf(keys[0] ?? '')).toEqual(LIVE);

    expect((await produce({ Records: [discard] })).batchItemFailures).toEqual([]);
    expect(await tagsOf(keys[0] ?? '')).toEqual(LIVE);
  });

  it('a retry replayed after the message was sent leaves its files ended (they expire)', async () => {
    const { produce, write } = await producer();
    const keys = await objects('m-replay-live', 1);
    const discarded = state('m-replay-live', 'failed', keys, TTL);
    const retried = state('m-replay-live', 'scheduled', keys);
    const retry = await write(discarded, retried);
    await produce({ Records: [retry] });
    const sent = state('m-replay-live', 'sent', keys, TTL);
    await produce({ Records: [await write(retried, sent)] });
    expect(await tagsOf(keys[0] ?? '')).toEqual(ENDED);

    await produce({ Records: [retry] });
    expect(await tagsOf(keys[0] ?? '')).toEqual(ENDED);
  });

  it('a replay whose tag lands after the live source tagged a newer write is corrected by its own second read', async () => {
    const keys = await objects('m-race', 1);
    const discarded = state('m-race', 'dead', keys, TTL);
    const retried = state('m-race', 'scheduled', keys);
    let raced = false;
    let tables: Awaited<ReturnType<typeof producer>> | undefined;
    // The replay read the record ended; before its tag lands, a retry is written and the live event
    // source tags it live. The replay's stale `ended` then lands last.
    const racing = new (class extends S3AttachmentStore {
      override async setLifetime(key: string, lifetime: 'ended' | 'live') {
        if (!raced) {
          raced = true;
          await tables?.hold(retried);
          await store.setLifetime(key, 'live');
        }
        await super.setLifetime(key, lifetime);
      }
    })({ bucket: emulator.bucket, client });
    tables = await producer(racing);
    const discard = await tables.write(state('m-race', 'dead', keys), discarded);
    expect((await tables.produce({ Records: [discard] })).batchItemFailures).toEqual([]);
    expect(await tagsOf(keys[0] ?? '')).toEqual(LIVE);
  });
});

describe("an ended message's files, whatever it waited (DESIGN §2, §13: kept a retention after the end; decision 0191)", () => {
  const head = (key: string) => client.send(new HeadObjectCommand({ Bucket: emulator.bucket, Key: key }));

  it('are written again at the end when written on an earlier day (the lifecycle counts from the write), only tagged when written the same day, and kept for ever again when taken back', async () => {
    const { produce, write, now } = await producer();
    const [old = '', young = ''] = await objects('m-waited', 2);
    const end = now();
    // A dead message an operator looked at 400 days after its enqueue; another file written today.
    await emulator.backdate(old, new Date(end.getTime() - 400 * 86_400_000));
    const today = new Date(Math.floor(end.getTime() / 86_400_000) * 86_400_000 + 1000);
    await emulator.backdate(young, today);

    const dead = state('m-waited', 'dead', [old, young]);
    const discarded = state('m-waited', 'dead', [old, young], TTL);
    expect((await produce({ Records: [await write(dead, discarded)] })).batchItemFailures).toEqual([]);

    const rewritten = await head(old);
    expect(rewritten.LastModified?.getTime()).toBeGreaterThanOrEqual(Math.floor(end.getTime() / 1000) * 1000);
    expect(rewritten.ContentType).toBe('application/pdf');
    expect(await store.read(old)).toEqual(new Uint8Array([1, 2, 3]));
    expect((await head(young)).LastModified).toEqual(today);
    for (const key of [old, young]) expect(await tagsOf(key)).toEqual(ENDED);

    const retried = state('m-waited', 'scheduled', [old, young]);
    expect((await produce({ Records: [await write(discarded, retried)] })).batchItemFailures).toEqual([]);
    for (const key of [old, young]) expect(await tagsOf(key)).toEqual(LIVE);
  });
});
