/**
 * The end of an ended message's attachments (DESIGN §2 "Only a terminal status starts the retention
 * clock", §13; docs/decisions/0083, 0090): the event producer, which reads every write of a state
 * record, tags a message's objects `postdate-lifetime=ended` when the write ends it (its TTL set: a
 * final status, or an operator's discard), `live` again when a retry or a redrive takes it back, and
 * leaves the objects of a waiting message untagged. Against s3rver, DynamoDB Local and the SQS emulator.
 */
import { randomBytes } from 'node:crypto';
import { GetObjectTaggingCommand, type S3Client } from '@aws-sdk/client-s3';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import type { MessageStatus } from '../../lambdas/core/messageStatus.js';
import { createEventsHandler } from '../../lambdas/events/createEventsHandler.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { webhookHarness } from './webhookHarness.js';

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
    pk: `MSG#${id}`,
    sk: 'STATE',
    id,
    tenant: 'acme',
    status,
    rev: 1,
    send_at: '2026-12-01T09:00:00.000Z',
    not_after: null,
    created_at: '2026-12-01T08:00:00.000Z',
    updated_at: `2026-12-01T09:00:0${sequence % 10}.000Z`,
    attempts: 0,
    last_error: null,
    history: [],
    group: null,
    on_ambiguous: 'retry',
    tags: {},
    metadata: {},
    rcpt_total: 1,
    lst_pk: 'x',
    lst_sk: 'y',
    tnt_pk: 'x',
    tnt_sk: 'y',
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

async function producer() {
  const harness = await webhookHarness();
  return createEventsHandler({
    store: harness.store,
    queue: harness.queue,
    now: harness.clock.now,
    retryHours: 24,
    retentionDays: 30,
    attachments: store,
  });
}

async function objects(id: string, count: number): Promise<string[]> {
  const keys = Array.from({ length: count }, (_, n) => `messages/acme/${id}/${n}-x`);
  await Promise.all(keys.map((key) => store.put(key, new Uint8Array([1, 2, 3]), 'application/pdf')));
  return keys;
}

describe("an ended message's attachments", () => {
  it('are tagged ended when the message is sent, and not while it waits', async () => {
    const produce = await producer();
    const keys = await objects('m-sent', 2);
    const scheduled = state('m-sent', 'scheduled', keys);
    const sending = state('m-sent', 'sending', keys);
    const waiting = await produce({ Records: [record(null, scheduled), record(scheduled, sending)] });
    expect(waiting.batchItemFailures).toEqual([]);
    expect(await tagsOf(keys[0] ?? '')).toEqual({});

    const sent = state('m-sent', 'sent', keys, TTL);
    expect((await produce({ Records: [record(sending, sent)] })).batchItemFailures).toEqual([]);
    for (const key of keys) expect(await tagsOf(key)).toEqual({ 'postdate-lifetime': 'ended' });
  });

  it("are tagged ended by an operator's discard (no status change), and live again when a retry takes it back", async () => {
    const produce = await producer();
    const keys = await objects('m-dead', 1);
    const dead = state('m-dead', 'dead', keys);
    const discarded = state('m-dead', 'dead', keys, TTL);
    await produce({ Records: [record(dead, discarded)] });
    expect(await tagsOf(keys[0] ?? '')).toEqual({ 'postdate-lifetime': 'ended' });

    const retried = state('m-dead', 'scheduled', keys);
    await produce({ Records: [record(discarded, retried)] });
    expect(await tagsOf(keys[0] ?? '')).toEqual({ 'postdate-lifetime': 'live' });
  });

  it('leave the last word to the last write when a message ends and comes back in one batch', async () => {
    const produce = await producer();
    const keys = await objects('m-both', 1);
    const failed = state('m-both', 'failed', keys);
    const discarded = state('m-both', 'failed', keys, TTL);
    const retried = state('m-both', 'scheduled', keys);
    await produce({ Records: [record(failed, discarded), record(discarded, retried)] });
    expect(await tagsOf(keys[0] ?? '')).toEqual({ 'postdate-lifetime': 'live' });
  });

  it('are not an error when already gone, and a message without attachments tags nothing', async () => {
    const produce = await producer();
    const gone = ['messages/acme/m-gone/0-x'];
    const before = state('m-gone', 'sending', gone);
    const plain = state('m-plain', 'sending', []);
    const answer = await produce({
      Records: [
        record(before, state('m-gone', 'sent', gone, TTL)),
        record(plain, state('m-plain', 'sent', [], TTL)),
      ],
    });
    expect(answer.batchItemFailures).toEqual([]);
  });

  it('a tagging that fails reports its record for a retry', async () => {
    const harness = await webhookHarness();
    const produce = createEventsHandler({
      store: harness.store,
      queue: harness.queue,
      now: harness.clock.now,
      retryHours: 24,
      retentionDays: 30,
      attachments: new S3AttachmentStore({ bucket: 'no-such-bucket-here', client }),
    });
    const keys = ['messages/acme/m-fail/0-x'];
    const sending = state('m-fail', 'sending', keys);
    const ended = record(sending, state('m-fail', 'sent', keys, TTL));
    const answer = await produce({ Records: [ended] });
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: ended.dynamodb?.SequenceNumber }]);
  });
});
