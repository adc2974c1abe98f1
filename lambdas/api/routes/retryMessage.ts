/** POST /v1/messages/{id}/retry: a manual retry of a `failed`, `dead` or `unknown` message, sent now. */
import { isMessageId } from '../../core/ids.js';
import { bodyExpiresAtAfter } from '../../store/messageRecord.js';
import { notFound, transitionResult } from '../routeOutcome.js';
import type { RouteDependencies, RouteHandler } from './route.js';

export function retryMessageRoute(deps: Pick<RouteDependencies, 'store' | 'config' | 'now'>): RouteHandler {
  return async function retryMessage({ tenant, params }) {
    const id = params.id ?? '';
    if (!isMessageId(id)) return notFound();
    const now = deps.now();
    // It is sent now: its body must live the retention and the redrive window from now.
    const bodyExpiresAt = bodyExpiresAtAfter(now, deps.config.retentionDays);
    return transitionResult(await deps.store.retry({ tenant, id, now, bodyExpiresAt }), 202, 'retried');
  };
}
