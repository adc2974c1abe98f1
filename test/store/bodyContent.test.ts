import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { BodyContentError, bodyOfStoredItem, storedBodyItem } from '../../lambdas/store/bodyContent.js';
import { type MessageBodyRecord, messagePk } from '../../lambdas/store/messageRecord.js';
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

describe('storedBodyItem / bodyOfStoredItem', () => {
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
    expect(stored).toMatchObject({ content_encoding: 'br', subject: 'Your order', to: ['ada@example.org'] });
    expect(stored).not.toHaveProperty('text');
    expect(stored.content?.byteLength).toBeLessThan(10 * 1024);
    expect(bodyOfStoredItem(stored, record.pk)).toEqual(record);
    const empty = body('', null);
    expect(bodyOfStoredItem(storedBodyItem({ ...empty, text: 'a'.repeat(500), html: '' }), empty.pk)).toEqual(
      {
        ...empty,
        text: 'a'.repeat(500),
        html: '',
      },
    );
  });

  it('stores plain what compressing would not make smaller: short text, a template message (no parts)', () => {
    for (const record of [
      body('Your campaign was approved.', '<p>Your campaign was approved.</p>'),
      body('Your order 4711 has shipped and will arrive on Thursday, 3 December.', null),
      body(null, null),
    ]) {
      const stored = storedBodyItem(record);
      expect(stored).toBe(record);
      expect(stored).not.toHaveProperty('content_encoding');
    }
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
