import { describe, expect, it } from 'vitest';
import { mostInAnyInterval, relayReceipts } from '../../bench/outageCounts.js';

const at = (ms: number) => new Date(ms).toISOString();
const mail = (postdateId: string | null, ms: number) => ({ postdateId, receivedAt: at(ms) });

describe('relayReceipts (what the relays received, never what Postdate recorded)', () => {
  it('a message received once at either relay is delivered once, at that relay', () => {
    const counts = relayReceipts(['a', 'b', 'c'], {
      primary: [mail('a', 1_000)],
      backup: [mail('b', 2_000), mail('c', 3_000)],
    });
    expect(counts).toMatchObject({ lost: 0, doubled: 0, atTwoRelays: 0 });
    expect(counts.perRelay).toEqual({ primary: 1, backup: 2 });
    expect([...counts.firstReceiptMs]).toEqual([
      ['a', 1_000],
      ['b', 2_000],
      ['c', 3_000],
    ]);
  });

  it('a copy at each relay is doubled, and counted as at two relays', () => {
    const counts = relayReceipts(['a'], { primary: [mail('a', 5_000)], backup: [mail('a', 4_000)] });
    expect(counts).toMatchObject({ lost: 0, doubled: 1, atTwoRelays: 1 });
    expect(counts.firstReceiptMs.get('a')).toBe(4_000);
  });

  it('two copies at one relay are doubled but not at two relays; a message nowhere is lost', () => {
    const counts = relayReceipts(['a', 'b'], { primary: [mail('a', 1), mail('a', 2)], backup: [] });
    expect(counts).toMatchObject({ lost: 1, doubled: 1, atTwoRelays: 0 });
  });

  it('ignores mail of other runs and mail without an id', () => {
    const counts = relayReceipts(['a'], { primary: [mail('z', 1), mail(null, 2), mail('a', 3)] });
    expect(counts).toMatchObject({ lost: 0, doubled: 0, perRelay: { primary: 1 } });
  });
});

describe('mostInAnyInterval (RFC 5321 §4.5.4.1: one attempt per probe interval)', () => {
  it('probes exactly one interval apart never share a half-open window', () => {
    expect(mostInAnyInterval([0, 3_000, 6_000, 9_000], 3_000)).toBe(1);
  });

  it('two attempts closer than the interval share one', () => {
    expect(mostInAnyInterval([0, 3_000, 5_999, 9_000], 3_000)).toBe(2);
    expect(mostInAnyInterval([0, 100, 200, 10_000], 3_000)).toBe(3);
  });

  it('counts nothing in an empty list, and sorts what it is given', () => {
    expect(mostInAnyInterval([], 3_000)).toBe(0);
    expect(mostInAnyInterval([6_000, 0, 3_000, 2_000], 3_000)).toBe(2);
  });
});
