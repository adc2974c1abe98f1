/**
 * What a schema cannot see: values that JSON allows but that would vanish or break on the way to
 * DynamoDB. Each is a field error, never a silent change.
 */
import { type FieldError, jsonPointer } from './fieldErrors.js';

/**
 * `{"headers": {"__proto__": "x"}}` parses to an own `__proto__` key that a record copy silently
 * drops; a dropped header must be an error, not a surprise.
 */
export function prototypeKeyErrors(body: unknown): FieldError[] {
  if (typeof body !== 'object' || body === null) return [];
  const errors: FieldError[] = [];
  for (const field of ['headers', 'tags', 'metadata'] as const) {
    const map = (body as Record<string, unknown>)[field];
    if (typeof map === 'object' && map !== null && Object.hasOwn(map, '__proto__')) {
      errors.push({ field: jsonPointer([field, '__proto__']), message: 'is not an allowed name' });
    }
  }
  return errors;
}

/** A UTF-16 surrogate without its pair: valid in JSON (`"\\ud800"`), not Unicode, refused by DynamoDB. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MAX_WALK_DEPTH = 8;

/** Every string (value or name) in the body that is not well-formed Unicode, by its JSON Pointer. */
export function illFormedStringErrors(body: unknown, path: (string | number)[] = []): FieldError[] {
  if (typeof body === 'string') {
    return LONE_SURROGATE.test(body)
      ? [{ field: jsonPointer(path), message: 'must be well-formed Unicode' }]
      : [];
  }
  if (typeof body !== 'object' || body === null || path.length >= MAX_WALK_DEPTH) return [];
  const entries: [string | number, unknown][] = Array.isArray(body)
    ? body.map((item, index): [number, unknown] => [index, item])
    : Object.entries(body);
  return entries.flatMap(([name, value]) =>
    typeof name === 'string' && LONE_SURROGATE.test(name)
      ? [{ field: jsonPointer(path), message: 'has a field name that is not well-formed Unicode' }]
      : illFormedStringErrors(value, [...path, name]),
  );
}
