/**
 * How every listing of the API reads its query (decisions 0247, 0250, 0254): the parameters it
 * takes and no other, a `limit` in its bounds, and a `cursor` only from the listing that issued it.
 *
 * A cursor is base64url of `{"v":1,"t":mark,…}`: `t` marks the tenant id it was issued for (a hash,
 * so the cursor names no tenant; `acme` and `acme.test`, the two sides of test mode, differ), the
 * rest is the listing's own (its filters and where to go on). Another tenant's cursor, or the other
 * side's, is refused rather than taken as a place to start; one without `t` (issued before the
 * mark) is taken, since the tenant itself always comes from the authorizer. Only the exact string
 * issued is taken.
 */

import { createHash } from 'node:crypto';
import type { FieldError } from './problem.js';

type Query = Readonly<Record<string, string | undefined>>;

/**
 * One error per query parameter a route does not take, naming it: a filter the route does not have
 * (`since`, `tags.kind`) or a misspelt one is refused, as an unknown body field is, rather than
 * silently answered as if it had not been given.
 */
export function unknownParameters(query: Query, known: readonly string[]): FieldError[] {
  const message =
    known.length === 0
      ? 'is not a parameter of this route (it takes none)'
      : `is not a parameter of this route (it takes ${known.join(', ')})`;
  return Object.keys(query)
    .filter((name) => !known.includes(name))
    .map((name) => ({ field: PARAMETER_NAME.test(name) ? name : 'query', message }));
}

/**
 * What may be named back (and logged, as `fields`): a name shaped like a parameter's. Anything else
 * (an address or a value a script put in the query by mistake) is `query`, never repeated.
 */
const PARAMETER_NAME = /^[A-Za-z][A-Za-z0-9_.[\]-]{0,63}$/;

/**
 * A listing's `limit`: the default when absent or empty (`?limit=` from a script's empty variable),
 * else a whole number in the bounds.
 */
export function readLimit(
  value: string | undefined,
  bounds: { readonly default: number; readonly min: number; readonly max: number },
): { readonly ok: true; readonly limit: number } | { readonly ok: false; readonly error: FieldError } {
  if (value === undefined || value === '') return { ok: true, limit: bounds.default };
  const limit = /^\d{1,4}$/.test(value) ? Number(value) : Number.NaN;
  if (limit >= bounds.min && limit <= bounds.max) return { ok: true, limit };
  return {
    ok: false,
    error: { field: 'limit', message: `must be a whole number from ${bounds.min} to ${bounds.max}` },
  };
}

/** The cursor of `tenant`'s listing, carrying `fields` (the listing's filters and position). */
export function encodeCursor(tenant: string, fields: Readonly<Record<string, unknown>>): string {
  return Buffer.from(JSON.stringify({ v: 1, t: tenantMark(tenant), ...fields }), 'utf8').toString(
    'base64url',
  );
}

/**
 * The fields of a cursor issued to `tenant` (or before the mark); null when it is not one we issued
 * for them. The listing checks its own fields.
 */
export function decodeCursor(cursor: string, tenant: string): Readonly<Record<string, unknown>> | null {
  if (!/^[A-Za-z0-9_-]{1,4096}$/.test(cursor)) return null;
  const bytes = Buffer.from(cursor, 'base64url');
  // Node's decoder skips a stray trailing character; only the exact string issued is taken.
  if (bytes.toString('base64url') !== cursor) return null;
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const { v, t, ...fields } = value as Record<string, unknown>;
  // No `t`: issued before the mark (decision 0247), to a script that may be paging through the deploy;
  // the tenant comes from the authorizer, so it pages only the caller's own (decision 0250).
  if (v !== 1 || (t !== undefined && t !== tenantMark(tenant))) return null;
  return fields;
}

function tenantMark(tenant: string): string {
  return createHash('sha256').update(tenant, 'utf8').digest('base64url').slice(0, 16);
}
