import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { itemBytes, SEND_GROWTH_BYTES } from '../../lambdas/store/bodyContent.js';
import { type MessageStateRecord, messagePk } from '../../lambdas/store/messageRecord.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import {
  createSenderRig,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
} from '../sender/senderHarness.js';
import { enqueueTextMail } from './enqueueTextMail.js';

/**
 * docs/design.md §4 "Storage cost" and docs/data-model.md: a small message is one item — its body
 * inside its state record, written by the enqueue's one conditional put, read with the state, expiring
 * with it (DESIGN §2 "Lifetimes") — while a large body keeps its own item and today's rules. Covers
 * store/bodyContent.ts (placeBody), store/outboxRecords.ts, api/routes/enqueue.ts, store/apiStore.ts
 * and store/senderTransitions.ts: the real api enqueue and the real sender on DynamoDB Local, the SQS
 * emulator and a real smtp-server, every table request they make observed on the client.
 */

const RETENTION_DAYS = 30;
let world: SenderWorld;
let rig: SenderRig;
let api: DynamoApiStore;
/** Every request on the shared document client: its command and the sort key it names, if any. */
const requests: { command: string; sk: string | undefined }[] = [];
let keys = 0;

beforeAll(async () => {
  world = await startSenderWorld();
  rig = await createSenderRig(world, { settings: { retentionDays: RETENTION_DAYS } });
  api = new DynamoApiStore(world.documents, world.tableName);
  world.documents.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Key?: { sk?: string }; Item?: { sk?: string } };
      requests.push({ command: context.commandName ?? '?', sk: input.Key?.sk ?? input.Item?.sk });
      return next(args);
    },
    { step: 'initialize', name: 'observeTableRequests' },
  );
});
afterAll(async () => world?.close());

async function enqueue(text: string): Promise<MessageStateRecord> {
  keys += 1;
  const now = rig.clock.now();
  return enqueueTextMail(api, {
    text,
    now,
    idempotencyKey: `inline-${keys}-${now.getTime()}`,
    retentionDays: RETENTION_DAYS,
  });
}

async function itemsOf(id: string): Promise<Record<string, unknown>[]> {
  const { Items } = await world.documents.send(
    new QueryCommand({
      TableName: world.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': messagePk(id) },
      ConsistentRead: true,
    }),
  );
  return Items ?? [];
}

async function send(state: MessageStateRecord): Promise<void> {
  await rig.dispatch({ id: state.id, rev: state.rev });
  await rig.deliverNext();
}

const during = async (work: () => Promise<unknown>) => {
  const start = requests.length;
  await work();
  return requests.slice(start);
};

describe('a small message is one item', () => {
  it("the api's enqueue is one conditional put of the state record, the body inside it", async () => {
    let state: MessageStateRecord | undefined;
    const made = await during(async () => {
      state = await enqueue('Your code is 424242.');
    });
    expect(made).toEqual([{ command: 'PutItemCommand', sk: 'STATE' }]);
    const items = await itemsOf(state?.id ?? '');
    expect(items.map((item) => item.sk)).toEqual(['STATE']);
    expect(items[0]?.body).toMatchObject({
      text: 'Your code is 424242.',
      to: ['Ada Lovelace <ada@example.com>'],
    });
  });

  it('the sender sends it without reading or writing a body item, and its TTL is the state record’s', async () => {
    const state = await enqueue('Your code is 515151.');
    const made = await during(() => send(state));
    expect(rig.received(state.id)).toHaveLength(1);
    expect(rig.received(state.id)[0]?.raw).toContain('Your code is 515151.');
    expect(made.filter((request) => request.sk === 'BODY')).toEqual([]);
    const after = await rig.state(state.id);
    expect(after).toMatchObject({ status: 'sent', body: { text: 'Your code is 515151.' } });
    expect(after.expires_at).toBe(Math.floor(rig.clock.now().getTime() / 1000) + RETENTION_DAYS * 86_400);
    expect((await itemsOf(state.id)).map((item) => item.sk)).toEqual(['STATE']);
  });

  it('what a send adds to the state record is within the growth the placement counts', async () => {
    const state = await enqueue('Your code is 616161.');
    const enqueued = (await itemsOf(state.id))[0] ?? {};
    await send(state);
    const sent = await rig.state(state.id);
    expect(sent.status).toBe('sent');
    expect(itemBytes(sent) - itemBytes(enqueued)).toBeLessThanOrEqual(
      SEND_GROWTH_BYTES.claim + SEND_GROWTH_BYTES.outcome,
    );
  });

  it('cancelled, its one item expires with the cancel: no write of a body', async () => {
    const state = await enqueue('Cancel me.');
    const expiresAt = Math.floor(rig.clock.now().getTime() / 1000) + RETENTION_DAYS * 86_400;
    const made = await during(() =>
      api.cancel({ tenant: 'acme', id: state.id, now: rig.clock.now(), expiresAt }),
    );
    expect(made.filter((request) => request.sk === 'BODY')).toEqual([]);
    const items = await itemsOf(state.id);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      status: 'cancelled',
      expires_at: expiresAt,
      body: { text: 'Cancel me.' },
    });
  });

  it('a discarded failed message keeps its body inside; the retry takes the TTL off the one item', async () => {
    const state = await enqueue('Retry me.');
    const sender = new DynamoSenderStore(world.documents, world.tableName);
    const claimed = await sender.claim({
      observed: state,
      owner: 'test-owner',
      now: rig.clock.now(),
      leaseUntil: new Date(rig.clock.now().getTime() + 60_000),
    });
    if (claimed.outcome !== 'applied') throw new Error('claim lost');
    const failed = await sender.settleScreened({
      claimed: claimed.record,
      owner: 'test-owner',
      to: 'failed',
      now: rig.clock.now(),
      retentionDays: RETENTION_DAYS,
      recipients: { accepted: [], rejected: [0] },
      showsLastError: true,
    });
    expect(failed.outcome).toBe('applied');
    const expiresAt = Math.floor(rig.clock.now().getTime() / 1000) + RETENTION_DAYS * 86_400;
    await api.discard({ tenant: 'acme', id: state.id, now: rig.clock.now(), expiresAt });
    expect((await rig.state(state.id)).expires_at).toBe(expiresAt);
    const made = await during(() =>
      api.retry({ tenant: 'acme', id: state.id, now: rig.clock.now(), maxAttempts: 3 }),
    );
    expect(made.filter((request) => request.sk === 'BODY')).toEqual([]);
    const retried = await rig.state(state.id);
    expect(retried).toMatchObject({ status: 'scheduled', body: { text: 'Retry me.' } });
    expect(retried).not.toHaveProperty('expires_at');
    await send(retried);
    expect(rig.received(state.id).at(-1)?.raw).toContain('Retry me.');
  });
});

describe('a large body keeps its own item and today’s rules', () => {
  it('20 KB: the body item is written before the state, read by the sender, and expires with it', async () => {
    const state = await enqueue(mailText(20 * 1024));
    expect(state).not.toHaveProperty('body');
    expect((await itemsOf(state.id)).map((item) => item.sk).sort()).toEqual(['BODY', 'STATE']);
    const made = await during(() => send(state));
    expect(made.filter((request) => request.sk === 'BODY').map((request) => request.command)).toEqual([
      'GetItemCommand',
      'UpdateItemCommand',
    ]);
    const after = await rig.state(state.id);
    expect(after.status).toBe('sent');
    const { Item } = await world.documents.send(
      new GetCommand({ TableName: world.tableName, Key: { pk: messagePk(state.id), sk: 'BODY' } }),
    );
    expect(Item?.expires_at).toBe(after.expires_at);
  });
});
