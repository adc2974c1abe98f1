/** PUT /v1/groups/{key}: raises a group's version without sending anything. */
import { validateGroupKey, validateGroupVersionRequest } from '../../core/groupRequests.js';
import { validationProblem } from '../../core/problem.js';
import { readJsonBody } from '../requestBody.js';
import type { RouteDependencies, RouteHandler } from '../route.js';
import { jsonResult, problemResult } from '../route.js';

export function raiseGroupRoute(deps: Pick<RouteDependencies, 'store' | 'now'>): RouteHandler {
  return async function raiseGroup({ tenant, params, event }) {
    const key = validateGroupKey(params.key ?? '');
    if (!key.ok) return problemResult(validationProblem(key.errors));
    const body = readJsonBody(event);
    if (!body.ok) return problemResult(body.problem);
    const parsed = validateGroupVersionRequest(body.value);
    if (!parsed.ok) return problemResult(validationProblem(parsed.errors));
    const head = await deps.store.raiseGroup({
      tenant,
      groupKey: key.value,
      version: parsed.value.version,
      now: deps.now(),
    });
    return jsonResult(200, { key: key.value, version: head.version, updated_at: head.updated_at });
  };
}
