import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { MessageStatus } from '../../lambdas/core/messageStatus.js';
import { planRelay } from '../../lambdas/relay/planRelay.js';
import { fromLambdaRecord } from '../../lambdas/relay/relayRecord.js';

type Image = { id: string; rev: number; status: MessageStatus; send_at: string };

function attributes(image: Image): Record<string, AttributeValue> {
  return {
    pk: { S: `MSG#${image.id}` },
    sk: { S: 'STATE' },
    id: { S: image.id },
    rev: { N: String(image.rev) },
    status: { S: image.status },
    send_at: { S: image.send_at },
    tags: { M: {} },
    history: { L: [] },
    not_after: { NULL: true },
  };
}

/** A Lambda stream record for a state item, shaped as the event source delivers it. */
function streamRecord(
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE',
  images: { old?: Image; new?: Image },
  sortKey = 'STATE',
): DynamoDBRecord {
  return {
    eventName,
    eventSource: 'aws:dynamodb',
    dynamodb: {
      SequenceNumber: '000000000000000000042',
      Keys: { pk: { S: 'MSG#A' }, sk: { S: sortKey } },
      ...(images.old ? { OldImage: attributes(images.old) } : {}),
      ...(images.new ? { NewImage: attributes(images.new) } : {}),
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
}

const AT = '2026-12-01T09:00:00.000Z';
const scheduled = (rev: number, send_at = AT): Image => ({ id: 'A', rev, status: 'scheduled', send_at });
const plan = (record: DynamoDBRecord) => planRelay(fromLambdaRecord(record));

describe('what the relay does with one stream record', () => {
  it('dispatches the inserted rev of a scheduled message', () => {
    expect(plan(streamRecord('INSERT', { new: scheduled(1) }))).toEqual({
      kind: 'act',
      id: 'A',
      dispatch: scheduled(1),
      deleteSchedules: [],
    });
  });

  it('ignores a message inserted as superseded', () => {
    expect(plan(streamRecord('INSERT', { new: { ...scheduled(1), status: 'superseded' } })).kind).toBe(
      'ignore',
    );
  });

  it('on a reschedule, dispatches the new rev and deletes the old rev’s schedule', () => {
    expect(
      plan(streamRecord('MODIFY', { old: scheduled(1), new: scheduled(2, '2026-12-02T09:00:00.000Z') })),
    ).toEqual({
      kind: 'act',
      id: 'A',
      dispatch: scheduled(2, '2026-12-02T09:00:00.000Z'),
      deleteSchedules: ['pd-A-1'],
    });
  });

  it('on a manual retry of a failed message, dispatches the new rev (a failed message has no live schedule)', () => {
    const failed: Image = { ...scheduled(1), status: 'failed' };
    expect(plan(streamRecord('MODIFY', { old: failed, new: scheduled(2) }))).toMatchObject({
      dispatch: scheduled(2),
      deleteSchedules: [],
    });
  });

  it('on a cancel of a scheduled message, deletes its schedule and dispatches nothing', () => {
    expect(
      plan(streamRecord('MODIFY', { old: scheduled(3), new: { ...scheduled(3), status: 'cancelled' } })),
    ).toEqual({ kind: 'act', id: 'A', dispatch: null, deleteSchedules: ['pd-A-3'] });
  });

  it('ignores a cancel while retrying (its copy is in the queue, not in the scheduler)', () => {
    const retrying: Image = { ...scheduled(2), status: 'retrying' };
    expect(
      plan(streamRecord('MODIFY', { old: retrying, new: { ...retrying, status: 'cancelled' } })).kind,
    ).toBe('ignore');
  });

  it('ignores claims, outcomes and removals', () => {
    const sending: Image = { ...scheduled(1), status: 'sending' };
    expect(plan(streamRecord('MODIFY', { old: scheduled(1), new: sending })).kind).toBe('ignore');
    expect(plan(streamRecord('MODIFY', { old: sending, new: { ...sending, status: 'sent' } })).kind).toBe(
      'ignore',
    );
    expect(plan(streamRecord('REMOVE', { old: { ...sending, status: 'sent' } })).kind).toBe('ignore');
  });

  it('applies the stream filter again: other item kinds are ignored even if they slip through', () => {
    expect(plan(streamRecord('INSERT', { new: scheduled(1) }, 'BODY'))).toEqual({
      kind: 'ignore',
      reason: 'not a message state record',
    });
  });

  it('calls a state image it cannot read invalid, naming what is wrong', () => {
    const record = streamRecord('INSERT', { new: scheduled(1) });
    delete record.dynamodb?.NewImage?.rev;
    expect(plan(record)).toEqual({
      kind: 'invalid',
      reason: 'new image: image has no positive integer rev',
      id: 'A',
    });
  });
});
