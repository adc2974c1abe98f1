/**
 * The subset of EventBridge filter patterns that Lambda event source mappings accept and Postdate
 * uses: nested objects, arrays of exact values (strings, numbers, booleans, null),
 * `{ "exists": true|false }` and `{ "anything-but": [values] }` (present, and none of them). A list of
 * patterns matches when any one of them does (Lambda's `FilterCriteria.Filters` are OR-ed).
 */

export type FilterPattern = { readonly [key: string]: FilterPattern | readonly FilterValue[] };
type Scalar = string | number | boolean | null;
type FilterValue =
  | Scalar
  | { readonly exists: boolean }
  | { readonly 'anything-but': readonly (string | number)[] };

/** Raised at start for a pattern outside the supported subset, so a typo is not silently a no-match. */
export class UnsupportedFilterError extends Error {
  override readonly name = 'UnsupportedFilterError';
}

export function assertSupportedFilter(pattern: unknown, path = 'filter'): void {
  if (typeof pattern !== 'object' || pattern === null || Array.isArray(pattern)) {
    throw new UnsupportedFilterError(`${path} must be an object`);
  }
  for (const [key, value] of Object.entries(pattern)) {
    const at = `${path}.${key}`;
    if (Array.isArray(value)) {
      for (const item of value) {
        const scalar = item === null || ['string', 'number', 'boolean'].includes(typeof item);
        const exists =
          typeof item === 'object' &&
          item !== null &&
          Object.keys(item).length === 1 &&
          typeof (item as { exists?: unknown }).exists === 'boolean';
        const anythingBut = (item as { 'anything-but'?: unknown } | null)?.['anything-but'];
        const excluding =
          typeof item === 'object' &&
          item !== null &&
          Object.keys(item).length === 1 &&
          Array.isArray(anythingBut) &&
          anythingBut.every((value) => typeof value === 'string' || typeof value === 'number');
        if (!scalar && !exists && !excluding) {
          throw new UnsupportedFilterError(
            `${at}: only exact values, {exists} and {anything-but: [values]} are supported locally`,
          );
        }
      }
    } else {
      assertSupportedFilter(value, at);
    }
  }
}

/** True when `event` matches `pattern` (or any pattern of a list). */
export function matchesFilter(pattern: FilterPattern | readonly FilterPattern[], event: unknown): boolean {
  if (Array.isArray(pattern)) return pattern.some((one) => matchesFilter(one as FilterPattern, event));
  const record = asRecord(event);
  return Object.entries(pattern as FilterPattern).every(([key, expected]) => {
    const present = record !== undefined && Object.hasOwn(record, key);
    const actual = record?.[key];
    if (Array.isArray(expected))
      return (expected as readonly FilterValue[]).some((value) => matchesValue(value, present, actual));
    return present && matchesFilter(expected as FilterPattern, actual);
  });
}

function matchesValue(expected: FilterValue, present: boolean, actual: unknown): boolean {
  if (typeof expected === 'object' && expected !== null) {
    if ('exists' in expected) return expected.exists === present;
    // Present, and none of the values (an absent field matches no anything-but).
    const excluded: readonly unknown[] = expected['anything-but'];
    return present && (Array.isArray(actual) ? actual : [actual]).some((item) => !excluded.includes(item));
  }
  if (!present) return false;
  if (Array.isArray(actual)) return actual.some((item) => item === expected);
  return actual === expected;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
