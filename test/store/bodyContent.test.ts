import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import { parseEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { buildOutboxWrite } from '../../lambdas/outbox/outboxItems.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import {
  BodyContentError,
  bodyGoesInline,
  bodyOfStoredItem,
  inlineBodyOf,
  itemBytes,
  placeBody,
  storedBodyItem,
} from '../../lambdas/store/bodyContent.js';
import {
  isMessageBodyRecord,
  type MessageBodyRecord,
  type MessageStateRecord,
  messagePk,
} from '../../lambdas/store/messageRecord.js';
import { OUTBOX_ITEM_INDEX, outboxRecords, outboxTransactItems } from '../../lambdas/store/outboxRecords.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { ITEM_SORT_KEY } from '../../lambdas/store/tableLayout.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/** Bodies stored compressed when that saves, read in both forms (issue 21). */

let n = 0;

/** A state record whose body is an item of its own: all the sender's body read looks at. */
const separateBodyOf = (id: string) => ({ id, pk: messagePk(id) }) as MessageStateRecord;

function body(text: string | null, html: string | null): MessageBodyRecord {
  n += 1;
  return {
    pk: messagePk(`01JBODYCONTENT${String(n).padStart(12, '0')}`),
    sk: ITEM_SORT_KEY.messageBody,
    fingerprint: 'f'.repeat(64),
    created_at: '2026-12-01T12:00:00.000Z',
    from: 'ops@example.com',
    to: ['ada@example.org'],
    cc: [],
    bcc: [],
    reply_to: null,
    subject: 'Your order',
    text,
    html,
    headers: {},
  };
}

describe('storedBodyItem / bodyOfStoredItem (compressed only when that saves a write unit)', () => {
  it('gives back exactly the text and html it was given, whichever form it chose', () => {
    fc.assert(
      fc.property(
        fc.option(fc.string({ unit: 'grapheme', maxLength: 400 })),
        fc.option(fc.string({ unit: 'grapheme', maxLength: 400 })),
        fc.nat({ max: 5 }),
        (text, html, repeat) => {
          const record = body(text === null ? null : text.repeat(repeat), html);
          expect(bodyOfStoredItem(storedBodyItem(record), record.pk)).toEqual(record);
        },
      ),
    );
  });

  it('compresses prose, keeps null and empty parts apart, and leaves everything else as it is', () => {
    const record = body(mailText(20 * 1024), null);
    const stored = storedBodyItem(record);
    expect(stored).toMatchObject({
      content_encoding: 'br',
      to: ['ada@example.org'],
      fingerprint: record.fingerprint,
    });
    for (const part of ['subject', 'text', 'html']) expect(stored).not.toHaveProperty(part);
    expect(stored.content?.byteLength).toBeLessThan(10 * 1024);
    expect(bodyOfStoredItem(stored, record.pk)).toEqual(record);
    const empty = body('', null);
    const emptyHtml = storedBodyItem({ ...empty, text: 'a'.repeat(2000), html: '' });
    expect(emptyHtml).toHaveProperty('content_encoding', 'br');
    expect(bodyOfStoredItem(emptyHtml, empty.pk)).toEqual({ ...empty, text: 'a'.repeat(2000), html: '' });
  });

  it('stores plain what fits in one write unit anyway: a short mail, a template message (no parts)', () => {
    for (const record of [
      body('Your campaign was approved.', '<p>Your campaign was approved.</p>'),
      body('Your order 4711 has shipped and will arrive on Thursday, 3 December.', null),
      body('Your campaign was approved. '.repeat(12), '<p>Your campaign was approved.</p>'.repeat(6)),
      body(null, null),
    ]) {
      const stored = storedBodyItem(record);
      expect(stored).toBe(record);
      expect(stored).not.toHaveProperty('content_encoding');
    }
  });

  it('is, to a sender older than compression, no body at all (it fails the message, held), never a mail without text', () => {
    // The older sender's check on the raw item was isMessageBodyRecord: it wants a string subject.
    expect(isMessageBodyRecord(storedBodyItem(body(mailText(4096), '<p>hi</p>')))).toBe(false);
    expect(isMessageBodyRecord(storedBodyItem(body('Short.', null)))).toBe(true);
  });

  it('refuses content it cannot read with a BodyContentError (class config), never a body without text', () => {
    const stored = storedBodyItem(body(mailText(4096), null));
    const unknown = { ...stored, content_encoding: 'zstd' };
    expect(() => bodyOfStoredItem(unknown, 'id-1')).toThrow(BodyContentError);
    const corrupt = { ...stored, content: new Uint8Array([1, 2, 3, 4]) };
    expect(() => bodyOfStoredItem(corrupt, 'id-2')).toThrow(
      expect.objectContaining({
        name: 'BodyContentError',
        class: 'config',
        id: 'id-2',
        cause: expect.anything(),
      }),
    );
  });
});

describe('bodies in DynamoDB Local', () => {
  let tableName: string;
  const documents = documentClient();
  beforeAll(async () => {
    ({ tableName } = await freshTable('body'));
  });

  const rawItem = async (pk: string) =>
    (
      await documents.send(
        new GetCommand({ TableName: tableName, Key: { pk, sk: ITEM_SORT_KEY.messageBody } }),
      )
    ).Item;

  it("the api's put stores a long body compressed in fewer write units, and the sender reads it back", async () => {
    const record = body(mailText(20 * 1024), `<p>${mailText(2048)}</p>`);
    expect(await new DynamoApiStore(documents, tableName).putNew(record)).toEqual({ kind: 'written' });
    const stored = await rawItem(record.pk);
    expect(stored).toMatchObject({ content_encoding: 'br' });
    expect(stored).not.toHaveProperty('text');
    const plainWrite = await documents.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...record, pk: `${record.pk}-plain` },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    const compressedWrite = await documents.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...stored, pk: `${record.pk}-again` },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    expect(plainWrite.ConsumedCapacity?.CapacityUnits).toBe(23);
    expect(compressedWrite.ConsumedCapacity?.CapacityUnits).toBeLessThan(12);
    const id = record.pk.slice('MSG#'.length);
    expect(await new DynamoSenderStore(documents, tableName).readBody(separateBodyOf(id))).toEqual(record);
  });

  it('the sender reads a body stored plain (as before compression) unchanged', async () => {
    const record = body(mailText(8192), '<p>old</p>');
    await documents.send(new PutCommand({ TableName: tableName, Item: record }));
    expect(await rawItem(record.pk)).toMatchObject({ text: record.text });
    expect(
      await new DynamoSenderStore(documents, tableName).readBody(
        separateBodyOf(record.pk.slice('MSG#'.length)),
      ),
    ).toEqual(record);
  });
});

describe('who compresses', () => {
  const input = {
    tableName: 'outbox',
    tenant: 'acme',
    idempotencyKey: 'long-body',
    now: new Date('2026-12-01T12:00:00.000Z'),
    body: { to: ['ada@example.org'], subject: 'Long', text: mailText(8192) },
    validation: { allowedFrom: ['*'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 },
  };
  const bodyItemOf = (items: ReturnType<typeof outboxTransactItems>) =>
    items[OUTBOX_ITEM_INDEX.body]?.Put?.Item as Record<string, unknown>;

  it('the public outbox helper writes the body plain (an application may upgrade before its stack)', () => {
    const write = buildOutboxWrite(input);
    expect(bodyItemOf(write.items)).toMatchObject({ subject: 'Long', text: input.body.text });
    expect(bodyItemOf(write.items)).not.toHaveProperty('content_encoding');
  });

  it("the api's transaction (a grouped enqueue) writes it compressed", () => {
    const write = buildOutboxWrite(input);
    const items = outboxTransactItems('outbox', write, { compressBody: true });
    expect(bodyItemOf(items)).toMatchObject({ content_encoding: 'br' });
    expect(bodyOfStoredItem(bodyItemOf(items), write.messageId)).toEqual(write.body);
  });
});

/** The records the api writes for a message of `text` (its body logical, its state as placed). */
function apiRecords(text: string, bodyInline = true) {
  const now = new Date('2026-12-01T12:00:00.000Z');
  const parsed = parseEnqueueRequest(
    {
      to: ['bench@example.com'],
      subject: 'bench key-1',
      text,
      headers: { 'X-Bench': 'postdate' },
      tags: { kind: 'bench' },
      metadata: { key: 'key-1' },
    },
    { now, allowedFrom: ['*@example.com'], defaultFrom: 'noreply@example.com', maxHorizonDays: 400 },
  );
  if (!parsed.ok) throw new Error(parsed.problem.title);
  return outboxRecords({
    tenant: 'tenant-bench',
    idempotencyKey: `k-${text.length}`,
    request: parsed.value,
    now,
    bodyInline,
  });
}

describe('where a body goes (docs/decisions/0105: the write-unit arithmetic of a send)', () => {
  it('inside, when the units it adds to the enqueue, the claim and the outcome are no more than its own put and TTL update and one unit', () => {
    // Fits in the room a send leaves in the state's one unit: adds nothing.
    expect(bodyGoesInline(500, 150, 400)).toBe(true);
    // Adds one unit to the outcome only, or to claim and outcome: at most the separate item's two.
    expect(bodyGoesInline(617, 300, 700)).toBe(true);
    expect(bodyGoesInline(617, 400, 800)).toBe(true);
    // The benchmark's 1 KB message: +1 on each of the three writes (3) against 1 + 1 and the one
    // unit a second put in turn, a read and an update are worth (0158): inside.
    expect(bodyGoesInline(617, 709, 841)).toBe(true);
    // 1.7 KB: +2 on each write (6) against 2 + 2 and that unit (5): apart.
    expect(bodyGoesInline(617, 1570, 1700)).toBe(false);
    // 2 KB: +1, +1, +2 (4) against a 2-unit body put and TTL update (4): inside, one request fewer.
    expect(bodyGoesInline(617, 1171, 1303)).toBe(true);
    // 20 KB: +8 on each write against 9 + 9: apart.
    expect(bodyGoesInline(617, 8300, 8530)).toBe(false);
  });

  it('the api places a short body inside (plain), a 1 KB one inside and a 20 KB one apart; the outbox helper never inside', () => {
    const short = apiRecords('Your code is 424242.');
    expect(short.state.body).toMatchObject({ text: 'Your code is 424242.' });
    expect(short.state.body).not.toHaveProperty('content');
    expect(apiRecords(mailText(20 * 1024)).state).not.toHaveProperty('body');
    expect(apiRecords(mailText(1024)).state.body).toBeDefined();
    expect(apiRecords('Your code is 424242.', false).state).not.toHaveProperty('body');
  });

  it('reads back, from the state record alone, the body record as written, in either inline form', () => {
    for (const text of ['Your code is 424242.', mailText(2048)]) {
      const records = apiRecords(text);
      expect(records.state.body).toBeDefined();
      expect(inlineBodyOf(records.state)).toEqual(records.body);
    }
    expect(apiRecords(mailText(2048)).state.body).toMatchObject({ content_encoding: 'br' });
    expect(inlineBodyOf(apiRecords(mailText(20 * 1024)).state)).toBeUndefined();
  });

  it('placeBody keeps the state record as it is apart from `body`', () => {
    const records = apiRecords('Hello.', false);
    const placed = placeBody(records.state, records.body);
    const { body: _body, ...rest } = placed.state;
    expect(rest).toEqual(records.state);
    expect(placed.body).toBeUndefined();
  });
});

describe('itemBytes: the size DynamoDB bills', () => {
  let tableName: string;
  const documents = documentClient();
  beforeAll(async () => {
    ({ tableName } = await freshTable('sizes'));
  });

  it('gives the write units DynamoDB Local consumes for the records a message writes', async () => {
    const items: Record<string, unknown>[] = [];
    for (const text of ['Hi.', mailText(700), mailText(1024), mailText(2048), mailText(20 * 1024)]) {
      const records = apiRecords(text);
      // Under keys of their own, off every index, so that only the item is billed.
      const { lst_pk: _l, tnt_pk: _t, due_pk: _d, ...state } = records.state;
      items.push(
        { ...state, pk: `${state.pk}-sized` },
        { ...storedBodyItem(records.body), pk: `${state.pk}-sized` },
      );
    }
    for (const item of items) {
      const written = await documents.send(
        new PutCommand({ TableName: tableName, Item: item, ReturnConsumedCapacity: 'TOTAL' }),
      );
      expect(written.ConsumedCapacity?.CapacityUnits).toBe(Math.ceil(itemBytes(item) / 1024));
    }
  });
});
