/**
 * POST /v1/messages: validates the body and the Idempotency-Key, enqueues once per key, and answers
 * a replay with the original message (200, `idempotent-replayed: true`).
 */
import { requestFingerprint, validateEnqueueRequest } from '../../core/enqueueRequest.js';
import { problem, validationProblem } from '../../core/problem.js';
import type { MessageStateRecord } from '../../store/messageRecord.js';
import { messageView } from '../../store/messageView.js';
import { enqueueMessage, findReplay } from '../enqueueMessage.js';
import { readIdempotencyKey } from '../idempotencyKeyHeader.js';
import { putImmediateCopy } from '../immediateCopy.js';
import { headerValue, readJsonBody } from '../requestBody.js';
import type { RouteDependencies, RouteHandler } from '../route.js';
import { jsonResult, type Outcome, problemResult } from '../route.js';
import { checkTemplateMessage } from '../templateEnqueue.js';

export function enqueueRoute(deps: RouteDependencies): RouteHandler {
  return async function enqueue({ tenant, event }) {
    const body = readJsonBody(event);
    if (!body.ok) return problemResult(body.problem);
    const key = readIdempotencyKey(headerValue(event.headers, 'idempotency-key'));
    if (!key.ok) return problemResult(key.problem);
    const now = deps.now();
    const validation = {
      allowedFrom: deps.config.allowedFrom,
      defaultFrom: deps.config.defaultFrom,
      maxHorizonDays: deps.config.maxHorizonDays,
    };
    const parsed = validateEnqueueRequest(body.value, { ...validation, now });
    // Time bounds and a template's state judge a new message, not a replay (enqueueMessage.ts).
    const replayOf = async (): Promise<Outcome | undefined> => {
      const original = await findReplay(deps.store, {
        tenant,
        idempotencyKey: key.key,
        fingerprintAt: (createdAt) => {
          const asOriginal = validateEnqueueRequest(body.value, { ...validation, now: createdAt });
          return asOriginal.ok ? requestFingerprint(asOriginal.value) : undefined;
        },
        now,
        retentionDays: deps.config.retentionDays,
      });
      return original === undefined ? undefined : replayedResult(original);
    };
    if (!parsed.ok) return (await replayOf()) ?? problemResult(validationProblem(parsed.errors));
    let templateVersion: number | undefined;
    if (parsed.value.template != null) {
      const checked = await checkTemplateMessage(deps, tenant, parsed.value);
      if (!checked.ok) return (await replayOf()) ?? problemResult(checked.problem);
      templateVersion = checked.version;
    }
    const outcome = await enqueueMessage(
      { store: deps.store, sleep: deps.sleep },
      {
        tenant,
        idempotencyKey: key.key,
        request: parsed.value,
        now,
        random: deps.random,
        retentionDays: deps.config.retentionDays,
        ...(templateVersion === undefined ? {} : { templateVersion }),
        ...(deps.immediateCopies === undefined ? {} : { apiCopy: true }),
      },
    );
    if (outcome.kind === 'key-reused') {
      return problemResult(
        problem(
          'idempotencyKeyReused',
          'This Idempotency-Key was used for a different request body; use a new key for a new message.',
          { errors: [{ field: 'Idempotency-Key', message: 'was already used with a different body' }] },
        ),
      );
    }
    if (outcome.kind === 'replayed') return replayedResult(outcome.state);
    const immediateCopy = await putImmediateCopy(deps.immediateCopies, outcome.state);
    const view = messageView(outcome.state, { withHistory: false });
    const location = `/v1/messages/${outcome.state.id}`;
    return jsonResult(
      202,
      view,
      { location },
      {
        message_id: outcome.state.id,
        message_status: outcome.state.status,
        ...(immediateCopy === undefined ? {} : { immediate_copy: immediateCopy }),
      },
    );
  };
}

function replayedResult(state: MessageStateRecord): Outcome {
  return jsonResult(
    200,
    messageView(state, { withHistory: false }),
    { 'idempotent-replayed': 'true', location: `/v1/messages/${state.id}` },
    { message_id: state.id, replayed: true },
  );
}
