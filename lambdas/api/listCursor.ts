/**
 * The opaque `cursor` of GET /v1/messages: base64url of `{"v":1,"s":status|null,"p":[…]}`, one entry
 * per index shard: `null` (not started), a sort key `{created_at}#{id}` (continue after it) or `0`
 * (exhausted). It carries no tenant: the tenant always comes from the authorizer.
 */
import type { MessageStatus } from '../core/messageStatus.js';
import type { ShardPosition } from '../ports/ApiStore.js';

const SORT_KEY = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z#[0-9A-Za-z_-]{1,32}$/;

export function encodeListCursor(
  status: MessageStatus | null,
  positions: readonly ShardPosition[],
): string | null {
  if (positions.every((position) => position.kind === 'done')) return null;
  const p = positions.map((position) =>
    position.kind === 'start' ? null : position.kind === 'done' ? 0 : position.sortKey,
  );
  return Buffer.from(JSON.stringify({ v: 1, s: status, p }), 'utf8').toString('base64url');
}

/** Decodes a cursor for this status and shard count; null when it is not one we issued for them. */
export function decodeListCursor(
  cursor: string,
  status: MessageStatus | null,
  shards: number,
): ShardPosition[] | null {
  if (!/^[A-Za-z0-9_-]{1,4096}$/.test(cursor)) return null;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { v, s, p } = value as Record<string, unknown>;
  if (v !== 1 || s !== status || !Array.isArray(p) || p.length !== shards) return null;
  const positions: ShardPosition[] = [];
  for (const entry of p) {
    if (entry === null) positions.push({ kind: 'start' });
    else if (entry === 0) positions.push({ kind: 'done' });
    else if (typeof entry === 'string' && SORT_KEY.test(entry))
      positions.push({ kind: 'after', sortKey: entry });
    else return null;
  }
  return positions;
}
