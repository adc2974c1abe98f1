/**
 * The opaque `cursor` of GET /v1/suppressions: base64url of `{"v":1,"a":address}`, the last address
 * of the previous page (the listing is in address order). It carries no tenant: the tenant always
 * comes from the authorizer, so a cursor from another tenant's listing only says where to start.
 */
import { validateSuppressionAddress } from '../core/suppressions.js';

export function encodeSuppressionCursor(lastAddress: string): string {
  return Buffer.from(JSON.stringify({ v: 1, a: lastAddress }), 'utf8').toString('base64url');
}

/** The address to continue after; null when the cursor is not one we issued. */
export function decodeSuppressionCursor(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,1024}$/.test(cursor)) return null;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { v, a } = value as Record<string, unknown>;
  if (v !== 1 || typeof a !== 'string') return null;
  const address = validateSuppressionAddress(a);
  return address.ok && address.value === a ? a : null;
}
