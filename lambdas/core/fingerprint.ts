/**
 * The fingerprint of a request body (DESIGN §4): SHA-256 of its canonical JSON, so the same body
 * with keys in another order or other whitespace is recognised as a replay.
 */
import { createHash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted by UTF-16 code units (as RFC 8785 does), recursively; arrays
 * in order; no whitespace. Values follow JSON.stringify's rules: `toJSON` is honoured, `undefined`,
 * functions and symbols are dropped from objects and become `null` in arrays, non-finite numbers
 * become `null`; a top-level value with no JSON form gives `null`.
 *
 * @throws TypeError on a BigInt or a cycle, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  return serialize(value, new Set()) ?? 'null';
}

/** SHA-256 hex of canonicalJson(value). */
export function fingerprint(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex');
}

function serialize(input: unknown, ancestors: Set<object>): string | undefined {
  const value = withToJson(input);
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('canonicalJson: a BigInt has no JSON form');
    case 'object':
      return serializeObject(value, ancestors);
    default:
      return undefined;
  }
}

function serializeObject(value: object, ancestors: Set<object>): string {
  if (ancestors.has(value)) throw new TypeError('canonicalJson: the value contains a cycle');
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      return `[${value.map((item: unknown) => serialize(item, ancestors) ?? 'null').join(',')}]`;
    }
    const record = value as Record<string, unknown>;
    const members: string[] = [];
    for (const key of Object.keys(record).sort()) {
      const serialized = serialize(record[key], ancestors);
      if (serialized !== undefined) members.push(`${JSON.stringify(key)}:${serialized}`);
    }
    return `{${members.join(',')}}`;
  } finally {
    ancestors.delete(value);
  }
}

function withToJson(value: unknown): unknown {
  if (typeof value === 'object' && value !== null && 'toJSON' in value) {
    const toJson = (value as { toJSON: unknown }).toJSON;
    if (typeof toJson === 'function') return toJson.call(value);
  }
  return value;
}
