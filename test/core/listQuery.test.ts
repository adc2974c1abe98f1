import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, readLimit, unknownParameters } from '../../lambdas/core/listQuery.js';

/** The one rule every listing reads its query by (decisions 0247, 0250, 0254). */
describe('a cursor', () => {
  const cursor = encodeCursor('acme', { s: 'scheduled', p: [null, 0] });

  it("is taken back by its tenant's listing only, with the listing's own fields", () => {
    expect(decodeCursor(cursor, 'acme')).toEqual({ s: 'scheduled', p: [null, 0] });
    expect(decodeCursor(cursor, 'globex')).toBeNull();
    // The test side of a tenant is another tenant id, so another listing.
    expect(decodeCursor(cursor, 'acme.test')).toBeNull();
    expect(decodeCursor(encodeCursor('acme.test', {}), 'acme')).toBeNull();
  });

  it('names no tenant', () => {
    expect(Buffer.from(cursor, 'base64url').toString('utf8')).not.toContain('acme');
  });

  it('issued before the mark (no `t`) is taken for the caller', () => {
    const old = Buffer.from(JSON.stringify({ v: 1, a: 'ada@example.com' })).toString('base64url');
    expect(decodeCursor(old, 'globex')).toEqual({ a: 'ada@example.com' });
  });

  it('is refused when it is not the exact string issued, or not one we issue', () => {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const bad of [
      `${cursor}A`,
      cursor.slice(0, -2),
      `${cursor}=`,
      encode({ v: 2 }),
      encode([1]),
      encode('x'),
      encode(null),
      'not a cursor',
      'x'.repeat(5000),
      '',
    ])
      expect(decodeCursor(bad, 'acme'), bad.slice(0, 40)).toBeNull();
  });
});

describe('the parameters of a listing', () => {
  it('names each one the listing does not take, or `query` for a name unlike a parameter', () => {
    expect(unknownParameters({ limit: '1', since: 'x', 'ada@example.com': '' }, ['limit', 'cursor'])).toEqual(
      [
        { field: 'since', message: 'is not a parameter of this route (it takes limit, cursor)' },
        { field: 'query', message: 'is not a parameter of this route (it takes limit, cursor)' },
      ],
    );
    expect(unknownParameters({ limit: '1' }, [])).toEqual([
      { field: 'limit', message: 'is not a parameter of this route (it takes none)' },
    ]);
  });

  it('takes an absent or empty limit as the default, else a whole number in bounds', () => {
    const bounds = { default: 20, min: 1, max: 100 };
    expect(readLimit(undefined, bounds)).toEqual({ ok: true, limit: 20 });
    expect(readLimit('', bounds)).toEqual({ ok: true, limit: 20 });
    expect(readLimit('1', bounds)).toEqual({ ok: true, limit: 1 });
    expect(readLimit('100', bounds)).toEqual({ ok: true, limit: 100 });
    for (const bad of ['0', '101', '-1', '1e2', '2.5', ' 5', '+5', '0x10'])
      expect(readLimit(bad, bounds)).toMatchObject({ ok: false, error: { field: 'limit' } });
  });
});
