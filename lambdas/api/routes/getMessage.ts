/** GET /v1/messages/{id}: one message of the tenant, with its history. */
import { isMessageId } from '../../core/ids.js';
import { messageView } from '../../store/messageView.js';
import type { RouteDependencies, RouteHandler } from '../route.js';
import { jsonResult, notFound } from '../route.js';

export function getMessageRoute(deps: Pick<RouteDependencies, 'store'>): RouteHandler {
  return async function getMessage({ tenant, params }) {
    const id = params.id ?? '';
    if (!isMessageId(id)) return notFound();
    const state = await deps.store.getMessage(tenant, id);
    if (!state) return notFound();
    return jsonResult(200, messageView(state, { withHistory: true }), {}, { message_id: id });
  };
}
