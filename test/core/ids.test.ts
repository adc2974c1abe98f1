import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { decodeTime } from 'ulid';
import { describe, expect, it } from 'vitest';
import { isMessageId, isUlid, messageIdFor, newMessageId } from '../../lambdas/core/ids.js';

function sequence(values: number[]): () => number {
  let index = 0;
  return () => values[index++ % values.length] ?? 0;
}

describe('ids derived from (tenant, Idempotency-Key)', () => {
  it('are the first 130 bits of SHA-256(tenant NUL key) in lower-case RFC 4648 base-32', () => {
    const digest = createHash('sha256').update('acme\0order-1').digest();
    const bits = [...digest].map((byte) => byte.toString(2).padStart(8, '0')).join('');
    const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
    const expected = Array.from(
      { length: 26 },
      (_, i) => alphabet[Number.parseInt(bits.slice(i * 5, i * 5 + 5), 2)],
    );
    expect(messageIdFor('acme', 'order-1')).toBe(expected.join(''));
  });
  it('are valid message ids, never ULIDs, and the same for the same pair', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,63}$/),
        fc.string({ minLength: 1, maxLength: 255 }),
        (tenant, key) => {
          const id = messageIdFor(tenant, key);
          expect(isMessageId(id)).toBe(true);
          expect(isUlid(id)).toBe(false);
          expect(id).toHaveLength(26);
          expect(messageIdFor(tenant, key)).toBe(id);
        },
      ),
    );
  });
  it('differ between tenants for the same key, and between keys of one tenant', () => {
    expect(messageIdFor('acme', 'k')).not.toBe(messageIdFor('globex', 'k'));
    // The separator keeps ("ab", "c") and ("a", "bc") apart.
    expect(messageIdFor('ab', 'c')).not.toBe(messageIdFor('a', 'bc'));
  });
});

describe('message ids (DESIGN §2)', () => {
  it('are ULIDs carrying the clock value passed in', () => {
    const id = newMessageId(Date.UTC(2026, 11, 1, 9), () => 0.5);
    expect(isUlid(id)).toBe(true);
    expect(decodeTime(id)).toBe(Date.UTC(2026, 11, 1, 9));
  });
  it('are reproducible from the same clock and random source', () => {
    expect(newMessageId(1_700_000_000_000, sequence([0.1, 0.7]))).toBe(
      newMessageId(1_700_000_000_000, sequence([0.1, 0.7])),
    );
    expect(newMessageId(0, () => 0)).toBe('00000000000000000000000000');
  });
  it('sort by time', () => {
    expect(newMessageId(1000, () => 0.99) < newMessageId(1001, () => 0)).toBe(true);
  });
  it('fold a random source that returns 1 or garbage into range', () => {
    expect(newMessageId(0, () => 1)).toBe('0000000000ZZZZZZZZZZZZZZZZ');
    expect(newMessageId(0, () => Number.NaN)).toBe('00000000000000000000000000');
  });
  it('refuse a clock value outside what a ULID can hold, and never read the real clock instead', () => {
    expect(() => newMessageId(Number.NaN, () => 0)).toThrow();
    expect(() => newMessageId(1.5, () => 0)).toThrow();
    expect(() => newMessageId(-1, () => 0)).toThrow();
    expect(() => newMessageId(2 ** 48, () => 0)).toThrow();
  });
  it('are URL-safe and at most 32 characters; derived ids are accepted too', () => {
    expect(isMessageId('01JDQ3Z8W0N1S3E8R5CQ0A1B2C')).toBe(true);
    expect(isMessageId('t-local_abcdefghijklmnopqrstuvw')).toBe(true);
    expect(isMessageId('')).toBe(false);
    expect(isMessageId('a'.repeat(33))).toBe(false);
    expect(isMessageId('../etc/passwd')).toBe(false);
    expect(isMessageId('id with space')).toBe(false);
    expect(isMessageId(42 as unknown as string)).toBe(false);
  });
  it('isUlid accepts only canonical upper-case ULIDs', () => {
    expect(isUlid('01jdq3z8w0n1s3e8r5cq0a1b2c')).toBe(false);
    expect(isUlid('81JDQ3Z8W0N1S3E8R5CQ0A1B2C')).toBe(false);
    expect(isUlid('01JDQ3Z8W0N1S3E8R5CQ0A1B2I')).toBe(false);
  });
  it('property: every new id is a valid message id and decodes to its time', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 48 - 1 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (time, r) => {
          const id = newMessageId(time, () => r);
          expect(isMessageId(id)).toBe(true);
          expect(isUlid(id)).toBe(true);
          expect(decodeTime(id)).toBe(time);
        },
      ),
    );
  });
});
