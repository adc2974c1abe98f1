import { describe, expect, it } from 'vitest';
import { faultTarget } from '../../chaos/throttleMiddleware.js';

/** Inputs shaped as lambdas/store/senderTransitions.ts builds them (UpdateBuilder). */
const stateUpdate = (to: string, extraSets: string[] = [], ownLease = true) => ({
  TableName: 't',
  Key: { pk: 'MSG#01ABC', sk: 'STATE' },
  UpdateExpression: `SET #status = :v_status, #updated_at = :v_updated_at${extraSets
    .map((attribute) => `, #${attribute} = :v_${attribute}`)
    .join('')} REMOVE #lease_owner, #lease_until`,
  ConditionExpression: `attribute_exists(#pk) AND #rev = :observedRev AND #status = :observedStatus${
    ownLease ? ' AND #lease_owner = :owner' : ''
  }`,
  ExpressionAttributeNames: {
    '#pk': 'pk',
    '#rev': 'rev',
    '#status': 'status',
    '#updated_at': 'updated_at',
    '#lease_owner': 'lease_owner',
    '#lease_until': 'lease_until',
    ...Object.fromEntries(extraSets.map((attribute) => [`#${attribute}`, attribute])),
  },
  ExpressionAttributeValues: {
    ':observedRev': 1,
    ':observedStatus': 'sending',
    ':owner': 'me',
    ':v_status': to,
    ':v_updated_at': 'now',
    ...Object.fromEntries(extraSets.map((attribute) => [`:v_${attribute}`, []])),
  },
});

describe('faultTarget', () => {
  it('takes the outcome write under our lease (from sending, an attempt recorded) for the outcome fault', () => {
    for (const to of ['sent', 'retrying', 'failed', 'dead', 'unknown']) {
      expect(faultTarget('UpdateItemCommand', stateUpdate(to, ['history']))).toEqual({
        kind: 'outcome-write',
        id: '01ABC',
      });
    }
  });

  it('leaves the claim, a release without an attempt and a takeover of another lease alone', () => {
    const claim = {
      ...stateUpdate('sending', ['history']),
      ExpressionAttributeValues: {
        ...stateUpdate('sending').ExpressionAttributeValues,
        ':observedStatus': 'scheduled',
      },
    };
    expect(faultTarget('UpdateItemCommand', claim)).toBeUndefined();
    expect(faultTarget('UpdateItemCommand', stateUpdate('retrying'))).toBeUndefined();
    expect(faultTarget('UpdateItemCommand', stateUpdate('unknown', ['history'], false))).toBeUndefined();
  });

  it('reads attribute values of a low-level command as well', () => {
    const low = {
      ...stateUpdate('sent', ['history']),
      Key: { pk: { S: 'MSG#01ABC' }, sk: { S: 'STATE' } },
      ExpressionAttributeValues: {
        ':observedRev': { N: '1' },
        ':observedStatus': { S: 'sending' },
        ':owner': { S: 'me' },
        ':v_status': { S: 'sent' },
        ':v_history': { L: [] },
      },
    };
    expect(faultTarget('UpdateItemCommand', low)?.kind).toBe('outcome-write');
  });

  it('takes the body and group head reads for the read fault, and nothing else', () => {
    expect(faultTarget('GetItemCommand', { Key: { pk: 'MSG#01ABC', sk: 'BODY' } })).toEqual({
      kind: 'body-read',
      id: '01ABC',
    });
    expect(faultTarget('GetItemCommand', { Key: { pk: 'GROUP#t#campaign:1', sk: 'HEAD' } })).toEqual({
      kind: 'group-read',
      id: 't#campaign:1',
    });
    expect(faultTarget('GetItemCommand', { Key: { pk: 'MSG#01ABC', sk: 'STATE' } })).toBeUndefined();
    expect(faultTarget('PutItemCommand', { Key: { pk: 'MSG#01ABC', sk: 'BODY' } })).toBeUndefined();
  });
});
