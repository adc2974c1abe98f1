/** PATCH /v1/messages/{id}: a new send time for a scheduled message, before its not_after. */
import { isMessageId } from '../../core/ids.js';
import { validationProblem } from '../../core/problem.js';
import { validateRescheduleRequest } from '../../core/rescheduleRequest.js';
import { readJsonBody } from '../requestBody.js';
import type { RouteDependencies, RouteHandler } from '../route.js';
import { notFound, problemResult, transitionResult } from '../route.js';

export function rescheduleMessageRoute(
  deps: Pick<RouteDependencies, 'store' | 'config' | 'now'>,
): RouteHandler {
  return async function rescheduleMessage({ tenant, params, event }) {
    const id = params.id ?? '';
    if (!isMessageId(id)) return notFound();
    const body = readJsonBody(event);
    if (!body.ok) return problemResult(body.problem);
    const now = deps.now();
    const parsed = validateRescheduleRequest(body.value, { now, maxHorizonDays: deps.config.maxHorizonDays });
    if (!parsed.ok) return problemResult(validationProblem(parsed.errors));
    const sendAt = parsed.value.send_at;
    const result = await deps.store.reschedule({ tenant, id, now, sendAt });
    if (result.kind === 'past-deadline') {
      return problemResult(
        validationProblem([{ field: '/send_at', message: "must be before the message's not_after" }]),
        {},
        { message_id: id },
      );
    }
    return transitionResult(result, 200, 'rescheduled');
  };
}
