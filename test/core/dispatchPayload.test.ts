import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  deadLetterPayload,
  encodeDispatchPayload,
  parseDispatchPayload,
} from '../../lambdas/core/dispatchPayload.js';

describe('the dispatch payload {v: 1, id, rev} (DESIGN §2)', () => {
  it('encodes exactly v, id and rev', () => {
    expect(encodeDispatchPayload({ id: '01JDQ3Z8W0N1S3E8R5CQ0A1B2C', rev: 3 })).toBe(
      '{"v":1,"id":"01JDQ3Z8W0N1S3E8R5CQ0A1B2C","rev":3}',
    );
  });
  it('parses what it encodes', () => {
    expect(parseDispatchPayload('{"rev":2,"id":"abc","v":1}')).toEqual({
      ok: true,
      payload: { v: 1, id: 'abc', rev: 2 },
    });
  });
  it('rejects a body that is not JSON, or not an object', () => {
    expect(parseDispatchPayload('{')).toEqual({ ok: false, reason: 'body is not JSON' });
    for (const body of ['null', '[]', '"x"', '1']) {
      expect(parseDispatchPayload(body)).toEqual({ ok: false, reason: 'body is not a JSON object' });
    }
  });
  it('rejects any version but 1 by name', () => {
    expect(parseDispatchPayload('{"v":2,"id":"a","rev":1}')).toEqual({
      ok: false,
      reason: 'unsupported payload version 2 (expected 1)',
    });
    expect(parseDispatchPayload('{"id":"a","rev":1}')).toEqual({
      ok: false,
      reason: 'unsupported payload version undefined (expected 1)',
    });
    expect(parseDispatchPayload('{"v":"1","id":"a","rev":1}').ok).toBe(false);
  });
  it('rejects ids that are not URL-safe or longer than 32 characters', () => {
    for (const id of ['', 'a/b', 'a'.repeat(33), 'ü', 7]) {
      expect(parseDispatchPayload(JSON.stringify({ v: 1, id, rev: 1 }))).toEqual({
        ok: false,
        reason: 'id must be a URL-safe string of 1–32 characters',
      });
    }
  });
  it('rejects a rev that is not a positive safe integer', () => {
    for (const rev of [0, -1, 1.5, '1', null, 2 ** 53]) {
      expect(parseDispatchPayload(JSON.stringify({ v: 1, id: 'a', rev }))).toEqual({
        ok: false,
        reason: 'rev must be a positive integer',
      });
    }
  });
  it("carries a DLQ copy's mark and the death it stands for (DESIGN §5; decision 0149), the death only with the mark", () => {
    const body = encodeDispatchPayload(deadLetterPayload({ id: 'abc', rev: 2, attempts: 8 }));
    expect(body).toBe('{"v":1,"id":"abc","rev":2,"dlq":true,"death":8}');
    expect(parseDispatchPayload(body)).toEqual({
      ok: true,
      payload: { v: 1, id: 'abc', rev: 2, dlq: true, death: 8 },
    });
    // A copy parked before deaths were named still parses.
    expect(parseDispatchPayload('{"v":1,"id":"abc","rev":2,"dlq":true}')).toEqual({
      ok: true,
      payload: { v: 1, id: 'abc', rev: 2, dlq: true },
    });
    expect(parseDispatchPayload('{"v":1,"id":"abc","rev":2,"death":8}')).toEqual({
      ok: false,
      reason: 'death comes only with dlq',
    });
    for (const death of [-1, 1.5, '8', null]) {
      expect(parseDispatchPayload(JSON.stringify({ v: 1, id: 'a', rev: 1, dlq: true, death })).ok).toBe(
        false,
      );
    }
  });
  it('rejects unexpected fields, naming them', () => {
    expect(parseDispatchPayload('{"v":1,"id":"a","rev":1,"to":"x","__proto__":{}}')).toEqual({
      ok: false,
      reason: 'unexpected field(s): to, __proto__',
    });
  });

  describe('properties', () => {
    const id = fc.stringMatching(/^[0-9A-Za-z_-]{1,32}$/);
    const rev = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });

    it('encode → parse is the identity for every valid id and rev', () => {
      fc.assert(
        fc.property(id, rev, (i, r) => {
          expect(parseDispatchPayload(encodeDispatchPayload({ id: i, rev: r }))).toEqual({
            ok: true,
            payload: { v: 1, id: i, rev: r },
          });
        }),
      );
    });

    it('any other v is rejected', () => {
      fc.assert(
        fc.property(
          fc.jsonValue().filter((v) => v !== 1),
          id,
          rev,
          (v, i, r) => {
            const result = parseDispatchPayload(JSON.stringify({ v, id: i, rev: r }));
            expect(result.ok).toBe(false);
          },
        ),
      );
    });

    it('never throws on arbitrary text', () => {
      fc.assert(
        fc.property(fc.oneof(fc.string(), fc.json()), (body) => {
          const result = parseDispatchPayload(body);
          expect(typeof result.ok).toBe('boolean');
        }),
      );
    });
  });
});

describe('encoding (lead addition)', () => {
  it('refuses to encode a payload its own parser would reject', () => {
    expect(() => encodeDispatchPayload({ id: 'a/b', rev: 1 })).toThrow(RangeError);
    expect(() => encodeDispatchPayload({ id: 'ok', rev: 0 })).toThrow(RangeError);
  });
});
