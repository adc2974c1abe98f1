/**
 * GET /v1/messages: the tenant's messages, newest first, optionally of one status, a page at a
 * time (`limit`, and the opaque `cursor` of the previous page).
 */

import { isMessageStatus, type MessageStatus } from '../../core/messageStatus.js';
import type { FieldError } from '../../core/problem.js';
import { validationProblem } from '../../core/problem.js';
import type { ShardPosition } from '../../ports/ApiStore.js';
import { shardCount } from '../../store/apiStore.js';
import { messageView } from '../../store/messageView.js';
import { decodeListCursor, encodeListCursor } from '../listCursor.js';
import type { RouteDependencies, RouteHandler } from '../route.js';
import { jsonResult, problemResult } from '../route.js';

export const LIST_LIMIT = { default: 20, min: 1, max: 100 } as const;

export function listMessagesRoute(deps: Pick<RouteDependencies, 'store'>): RouteHandler {
  return async function listMessages({ tenant, event }) {
    const query: Readonly<Record<string, string | undefined>> = event.queryStringParameters ?? {};
    const errors: FieldError[] = [];
    let status: MessageStatus | null = null;
    if (query.status !== undefined && query.status !== '') {
      if (isMessageStatus(query.status)) status = query.status;
      else errors.push({ field: 'status', message: 'must be a message status' });
    }
    let limit: number = LIST_LIMIT.default;
    if (query.limit !== undefined) {
      const value = /^\d{1,4}$/.test(query.limit) ? Number(query.limit) : Number.NaN;
      if (!(value >= LIST_LIMIT.min && value <= LIST_LIMIT.max))
        errors.push({
          field: 'limit',
          message: `must be a whole number from ${LIST_LIMIT.min} to ${LIST_LIMIT.max}`,
        });
      else limit = value;
    }
    const shards = shardCount(status);
    let positions: ShardPosition[] = Array.from({ length: shards }, () => ({ kind: 'start' }));
    if (query.cursor !== undefined && query.cursor !== '' && errors.length === 0) {
      const decoded = decodeListCursor(query.cursor, status, shards);
      if (decoded === null) errors.push({ field: 'cursor', message: 'is not a cursor from this listing' });
      else positions = decoded;
    }
    if (errors.length > 0) return problemResult(validationProblem(errors));
    const page = await deps.store.listMessages({ tenant, status, limit, positions });
    return jsonResult(
      200,
      {
        items: page.items.map((state) => messageView(state, { withHistory: false })),
        next_cursor: encodeListCursor(status, page.positions),
      },
      {},
      { count: page.items.length },
    );
  };
}
