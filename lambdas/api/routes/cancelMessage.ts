/** DELETE /v1/messages/{id}: cancels a `scheduled` or `retrying` message (409 when sending or final). */
import { isMessageId } from '../../core/ids.js';
import { expiresAtAfter } from '../../store/messageRecord.js';
import type { RouteDependencies, RouteHandler } from '../route.js';
import { notFound, transitionResult } from '../route.js';

export function cancelMessageRoute(deps: Pick<RouteDependencies, 'store' | 'config' | 'now'>): RouteHandler {
  return async function cancelMessage({ tenant, params }) {
    const id = params.id ?? '';
    if (!isMessageId(id)) return notFound();
    const now = deps.now();
    const expiresAt = expiresAtAfter(now, deps.config.retentionDays);
    return transitionResult(await deps.store.cancel({ tenant, id, now, expiresAt }), 200, 'cancelled');
  };
}
