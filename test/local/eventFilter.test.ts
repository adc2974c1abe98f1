import { describe, expect, it } from 'vitest';
import { MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import { RELAY_STREAM_FILTER } from '../../lambdas/store/tableLayout.js';
import {
  assertSupportedFilter,
  matchesFilter,
  UnsupportedFilterError,
} from '../../local/runners/eventFilter.js';

const record = (sk: string, extra: Record<string, unknown> = {}) => ({
  eventName: 'INSERT',
  dynamodb: { Keys: { pk: { S: 'MSG#1' }, sk: { S: sk } }, ...extra },
});

describe('the event filter subset of the local stream runner', () => {
  it('matches the relay filter on scheduled or cancelled message state records, and on a status this stack does not know', () => {
    const image = (status: string) => ({ NewImage: { status: { S: status } } });
    expect(matchesFilter(RELAY_STREAM_FILTER, record('STATE', image('scheduled')))).toBe(true);
    expect(matchesFilter(RELAY_STREAM_FILTER, record('STATE', image('cancelled')))).toBe(true);
    for (const status of MESSAGE_STATUSES.filter((s) => s !== 'scheduled' && s !== 'cancelled'))
      expect(matchesFilter(RELAY_STREAM_FILTER, record('STATE', image(status))), status).toBe(false);
    // A newer writer's status reaches the relay, which refuses and counts it (decision 0166).
    expect(matchesFilter(RELAY_STREAM_FILTER, record('STATE', image('held')))).toBe(true);
    // A TTL deletion (REMOVE) has no new image.
    expect(matchesFilter(RELAY_STREAM_FILTER, record('STATE'))).toBe(false);
    expect(matchesFilter(RELAY_STREAM_FILTER, record('BODY', image('scheduled')))).toBe(false);
    expect(matchesFilter(RELAY_STREAM_FILTER, { dynamodb: {} })).toBe(false);
  });

  it('matches any value of a list, any pattern of a list of patterns, and {exists}', () => {
    expect(matchesFilter({ eventName: ['MODIFY', 'INSERT'] }, record('STATE'))).toBe(true);
    expect(matchesFilter([{ eventName: ['REMOVE'] }, { eventName: ['INSERT'] }], record('STATE'))).toBe(true);
    expect(matchesFilter({ dynamodb: { NewImage: [{ exists: false }] } }, record('STATE'))).toBe(true);
    expect(matchesFilter({ dynamodb: { NewImage: [{ exists: true }] } }, record('STATE'))).toBe(false);
    const notSk = { dynamodb: { Keys: { sk: { S: [{ 'anything-but': ['BODY'] }] } } } };
    expect(matchesFilter(notSk, record('STATE'))).toBe(true);
    expect(matchesFilter(notSk, record('BODY'))).toBe(false);
    // An absent field matches no anything-but.
    expect(matchesFilter({ dynamodb: { NewImage: [{ 'anything-but': ['x'] }] } }, record('STATE'))).toBe(
      false,
    );
  });

  it('refuses patterns outside the subset instead of silently matching nothing', () => {
    expect(() => assertSupportedFilter({ eventName: [{ prefix: 'IN' }] })).toThrow(UnsupportedFilterError);
    expect(() => assertSupportedFilter({ eventName: [{ 'anything-but': { prefix: 'IN' } }] })).toThrow(
      UnsupportedFilterError,
    );
    expect(() => assertSupportedFilter({ eventName: 'INSERT' })).toThrow(UnsupportedFilterError);
    expect(() => assertSupportedFilter(RELAY_STREAM_FILTER)).not.toThrow();
  });
});
