import type { DynamoDBRecord } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  fromLambdaRecord,
  fromSdkRecord,
  inStreamOrder,
  type SdkAttributeMap,
  unmarshallImage,
} from '../../lambdas/store/streamRecord.js';

const read = (image: SdkAttributeMap | undefined) => (image === undefined ? 'none' : unmarshallImage(image));

/** The stream decoder both readers of the table's stream (the relay, the event producer) use. */
describe('a stream record, decoded', () => {
  it('reads the event source record: sequence number, event, sort key, and both images with binary as bytes', () => {
    const record: DynamoDBRecord = {
      eventName: 'MODIFY',
      dynamodb: {
        SequenceNumber: '100',
        Keys: { pk: { S: 'MSG#1' }, sk: { S: 'STATE' } },
        OldImage: { id: { S: 'm1' }, rev: { N: '1' } },
        NewImage: {
          id: { S: 'm1' },
          rev: { N: '2' },
          blob: { B: Buffer.from('hi').toString('base64') },
          nested: { M: { list: { L: [{ BS: [Buffer.from('a').toString('base64')] }] } } },
        },
      },
    };
    const decoded = fromLambdaRecord(record, read);
    expect(decoded).toMatchObject({ sequenceNumber: '100', eventName: 'MODIFY', sortKey: 'STATE' });
    expect(decoded.oldImage).toEqual({ ok: true, item: { id: 'm1', rev: 1 } });
    expect(decoded.newImage).toMatchObject({ ok: true, item: { id: 'm1', rev: 2 } });
    const item = decoded.newImage !== 'none' && decoded.newImage.ok ? decoded.newImage.item : {};
    expect(Buffer.from(item.blob as Uint8Array).toString()).toBe('hi');
  });

  it('reads a GetRecords record the same way, and a record without images as having none', () => {
    const decoded = fromSdkRecord(
      { eventName: 'REMOVE', dynamodb: { SequenceNumber: '7', Keys: { sk: { S: 'STATE' } } } },
      read,
    );
    expect(decoded).toEqual({
      sequenceNumber: '7',
      eventName: 'REMOVE',
      sortKey: 'STATE',
      oldImage: 'none',
      newImage: 'none',
    });
    expect(fromLambdaRecord({}, read)).toMatchObject({ sequenceNumber: '', sortKey: undefined });
  });

  it('decodes only the attributes asked for, so an unreadable other attribute cannot trip the reader', () => {
    const image: SdkAttributeMap = { id: { S: 'm1' }, broken: { X: 'no such type' } as never };
    expect(unmarshallImage(image)).toMatchObject({ ok: false, reason: expect.stringMatching(/unmarshall/) });
    expect(unmarshallImage(image, ['id'])).toEqual({ ok: true, item: { id: 'm1' } });
  });
});

describe('a stream batch failures, in stream order', () => {
  it('lists the failed sequence numbers in the order the batch had them, whatever order they failed in', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1 }), { minLength: 1 }),
        fc.array(fc.nat()),
        (ids, picks) => {
          const records = ids.map((sequenceNumber) => ({ sequenceNumber }));
          const failed = new Set(picks.map((pick) => ids[pick % ids.length] ?? ''));
          const ordered = inStreamOrder(records, [...failed].reverse());
          expect(ordered).toEqual(ids.filter((id) => failed.has(id)));
        },
      ),
    );
  });
});
