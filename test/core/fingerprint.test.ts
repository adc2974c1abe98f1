import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprint } from '../../lambdas/core/fingerprint.js';

describe('canonical JSON and the body fingerprint (DESIGN §4)', () => {
  it('sorts object keys recursively and keeps arrays in order, without whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, 1, { z: true, y: null }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[3,1,{"y":null,"z":true}]},"b":1}',
    );
  });
  it('sorts keys as strings, not as numbers', () => {
    expect(canonicalJson({ 10: 'a', 9: 'b', a: 'c' })).toBe('{"10":"a","9":"b","a":"c"}');
  });
  it('follows JSON.stringify for values without a JSON form', () => {
    expect(canonicalJson({ a: undefined, b: () => 1, c: Symbol('s') })).toBe('{}');
    expect(canonicalJson([undefined, Number.NaN, Number.POSITIVE_INFINITY])).toBe('[null,null,null]');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson(new Date('2026-12-01T09:00:00Z'))).toBe('"2026-12-01T09:00:00.000Z"');
    expect(canonicalJson({ toJSON: 'not a function' })).toBe('{"toJSON":"not a function"}');
    expect(canonicalJson(false)).toBe('false');
  });
  it('escapes strings as JSON does', () => {
    expect(canonicalJson({ 'k"ey': 'line\nbreak\u2028' })).toBe(
      JSON.stringify({ 'k"ey': 'line\nbreak\u2028' }),
    );
  });
  it('refuses BigInts and cycles as JSON.stringify does', () => {
    expect(() => canonicalJson({ n: 1n })).toThrow(TypeError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow('cycle');
  });
  it('allows the same object twice when it is not a cycle', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });
  it('fingerprints with SHA-256 hex of the canonical form', () => {
    expect(fingerprint({ b: 2, a: 1 })).toBe(createHash('sha256').update('{"a":1,"b":2}').digest('hex'));
    expect(fingerprint({ a: 1, b: 2 })).toBe(fingerprint({ b: 2, a: 1 }));
    expect(fingerprint({ a: 1 })).not.toBe(fingerprint({ a: 2 }));
  });

  describe('properties', () => {
    it('is valid JSON that parses back to the same value', () => {
      fc.assert(
        fc.property(fc.jsonValue(), (value) => {
          expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
        }),
      );
    });
    it('does not depend on the order in which keys were written', () => {
      fc.assert(
        fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (value) => {
          const reversed = Object.fromEntries(Object.entries(value).reverse());
          expect(fingerprint(reversed)).toBe(fingerprint(value));
        }),
      );
    });
    it('is a fixed point: canonicalising canonical JSON changes nothing', () => {
      fc.assert(
        fc.property(fc.jsonValue(), (value) => {
          const once = canonicalJson(value);
          expect(canonicalJson(JSON.parse(once))).toBe(once);
        }),
      );
    });
  });
});
