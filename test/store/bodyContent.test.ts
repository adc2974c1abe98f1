import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import { buildOutboxWrite } from '../../lambdas/outbox/outboxItems.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { BodyContentError, bodyOfStoredItem, storedBodyItem } from '../../lambdas/store/bodyContent.js';
import { isMessageBodyRecord, type MessageBodyRecord, messagePk } from '../../lambdas/store/messageRecord.js';
import { OUTBOX_ITEM_INDEX, outboxTransactItems } from '../../lambdas/store/outboxRecords.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { ITEM_SORT_KEY } from '../../lambdas/store/tableLayout.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/** Bodies stored compressed when that saves, read in both forms (issue 21). */

let n = 0;
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
    expect(await new DynamoSenderStore(documents, tableName).readBody(id)).toEqual(record);
  });

  it('the sender reads a body stored plain (as before compression) unchanged', async () => {
    const record = body(mailText(8192), '<p>old</p>');
    await documents.send(new PutCommand({ TableName: tableName, Item: record }));
    expect(await rawItem(record.pk)).toMatchObject({ text: record.text });
    expect(
      await new DynamoSenderStore(documents, tableName).readBody(record.pk.slice('MSG#'.length)),
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
