/**
 * A template message's `data` is validated as it is stored (DESIGN §10: "what was validated is what
 * is sent"; decision 0156). Its records keep it as JSON and the sender renders what JSON.parse
 * gives back, so the one validation of `data` (TemplateDataSchema) accepts only data that comes
 * back from JSON as it went in: a number JSON cannot carry (Infinity from `1e400`, or NaN from the
 * outbox helper's caller) is refused, naming its path.
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateTemplateRender } from '../../lambdas/core/templateRequests.js';

/** Any JSON-like value, with every double: Infinity, -Infinity, NaN and -0 among them. */
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.double(),
    fc.constantFrom(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, -0),
    fc.string({ maxLength: 4 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd'), tie('value'), { maxKeys: 3 }),
  ),
}));
const dataArb = fc.dictionary(fc.constantFrom('n', 'm', 'items'), value, { maxKeys: 3 });

/** -0 is written as 0 and renders as 0: the same value for a template. */
function withoutNegativeZero(data: unknown): unknown {
  if (typeof data === 'number') return Object.is(data, -0) ? 0 : data;
  if (Array.isArray(data)) return data.map(withoutNegativeZero);
  if (typeof data === 'object' && data !== null)
    return Object.fromEntries(Object.entries(data).map(([key, item]) => [key, withoutNegativeZero(item)]));
  return data;
}

function hasNonFinite(data: unknown): boolean {
  if (typeof data === 'number') return !Number.isFinite(data);
  if (typeof data === 'object' && data !== null) return Object.values(data).some(hasNonFinite);
  return false;
}

describe("a template message's data", () => {
  it('is accepted exactly when JSON gives it back as it is (up to -0), and refused when a number is not finite', () => {
    fc.assert(
      fc.property(dataArb, (data) => {
        const validated = validateTemplateRender({ data });
        const stored = JSON.parse(JSON.stringify(data)) as unknown;
        expect(validated.ok).toBe(!hasNonFinite(data));
        if (validated.ok) expect(isDeepStrictEqual(stored, withoutNegativeZero(data))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('names the first number JSON cannot carry by its path, and why', () => {
    const validated = validateTemplateRender({
      data: { n: 1, items: [{ price: 2 }, { price: Number.NEGATIVE_INFINITY }] },
    });
    expect(validated).toEqual({
      ok: false,
      errors: [{ field: '/data/items/1/price', message: expect.stringMatching(/finite number/) }],
    });
  });
});
