/** POST /v1/messages/{id}/retry: a manual retry of a `failed`, `dead` or `unknown` message, sent now. */
import { isMessageId } from '../../core/ids.js';
import type { RouteDependencies, RouteHandler } from '../route.js';
import { notFound, transitionResult } from '../route.js';

export function retryMessageRoute(deps: Pick<RouteDependencies, 'store' | 'now'>): RouteHandler {
  return async function retryMessage({ tenant, params }) {
    const id = params.id ?? '';
    if (!isMessageId(id)) return notFound();
    return transitionResult(await deps.store.retry({ tenant, id, now: deps.now() }), 202, 'retried');
  };
}
