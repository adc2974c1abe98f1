/**
 * The HTTP API (DESIGN §3) as a function of its dependencies: API Gateway HTTP API payload 2.0 in,
 * structured result out. Parses and validates, calls the store, maps the outcome; every error is
 * `application/problem+json`. The tenant comes only from the Lambda authorizer's context.
 *
 * Logs carry the route, the status, the tenant, the message id and problem types: never an
 * address, a subject, a body, a header value or the Idempotency-Key.
 */
import type {
  APIGatewayProxyEventV2WithLambdaAuthorizer,
  APIGatewayProxyStructuredResultV2,
} from 'aws-lambda';
import type { Config } from '../core/config.js';
import { errorForLog } from '../core/errorForLog.js';
import { TENANT_PATTERN } from '../core/identifiers.js';
import { isMessageId, messageIdFor } from '../core/ids.js';
import {
  parseEnqueueRequest,
  parseGroupKey,
  parseGroupVersionRequest,
  parseRescheduleRequest,
} from '../core/messageSchema.js';
import { isMessageStatus, type MessageStatus } from '../core/messageStatus.js';
import { requestFingerprint } from '../outbox/outboxItems.js';
import type { Log } from '../ports/Log.js';
import { type ApiStore, type ShardPosition, shardCount, type TransitionResult } from '../store/apiStore.js';
import { bodyExpiresAtAfter, expiresAtAfter, type MessageStateRecord } from '../store/messageRecord.js';
import { type ApiRoute, resolveRoute } from './apiRoutes.js';
import { EnqueueContentionError, enqueueMessage } from './enqueueMessage.js';
import { readIdempotencyKey } from './idempotencyKeyHeader.js';
import { decodeListCursor, encodeListCursor } from './listCursor.js';
import { messageView } from './messageView.js';
import { buildOpenApiDocument } from './openapi.js';
import { PROBLEM_CONTENT_TYPE, type ProblemDetails, problem, validationProblem } from './problem.js';
import { headerValue, readJsonBody } from './requestBody.js';

/** What the Lambda authorizer puts in `requestContext.authorizer.lambda`. */
export interface AuthorizerContext {
  readonly tenant: string;
  readonly key_id: string;
}

export type ApiEvent = APIGatewayProxyEventV2WithLambdaAuthorizer<AuthorizerContext>;
export type ApiResult = APIGatewayProxyStructuredResultV2;

/** The few logger methods the handler uses (Powertools Logger satisfies it). */
export type ApiLogger = Log;

export interface ApiHandlerDependencies {
  readonly store: ApiStore;
  readonly config: Pick<Config, 'allowedFrom' | 'defaultFrom' | 'maxHorizonDays' | 'retentionDays'>;
  readonly now: () => Date;
  readonly random: () => number;
  readonly logger: ApiLogger;
  /** Waits between enqueue attempts after a contended transaction; defaults to a timer. */
  readonly sleep?: (milliseconds: number) => Promise<void>;
}

const LIST_LIMIT = { default: 20, min: 1, max: 100 } as const;

export function createApiHandler(deps: ApiHandlerDependencies): (event: ApiEvent) => Promise<ApiResult> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let openApi: string | undefined;

  return async function handleApiRequest(event: ApiEvent): Promise<ApiResult> {
    const method = event.requestContext?.http?.method ?? 'GET';
    const resolution = resolveRoute({
      method,
      routeKey: event.routeKey,
      path: event.rawPath ?? event.requestContext?.http?.path ?? '/',
      pathParameters: event.pathParameters,
    });
    if (resolution.kind === 'not-found') {
      return answer(null, null, problemResult(problem('notFound', 'No such route.')));
    }
    if (resolution.kind === 'method-not-allowed') {
      const allow = resolution.allow.join(', ');
      return answer(
        null,
        null,
        problemResult(problem('methodNotAllowed', `This path accepts ${allow}.`), { allow }),
      );
    }
    const { route, params } = resolution;
    const tenant = tenantOf(event);
    if (route.authorized && tenant === null) {
      return answer(route, null, problemResult(problem('unauthorized', 'A valid API key is required.')));
    }
    try {
      const result = await dispatch(route, params, tenant ?? '', event);
      return answer(route, tenant, result);
    } catch (error) {
      if (error instanceof EnqueueContentionError) {
        return answer(
          route,
          tenant,
          problemResult(problem('unavailable', 'Too much contention on this key; retry shortly.'), {
            'retry-after': '1',
          }),
        );
      }
      deps.logger.error('request failed', {
        route: route.name,
        tenant,
        error: errorForLog(error),
      });
      return answer(route, tenant, problemResult(problem('internal', 'Something went wrong on our side.')));
    }
  };

  function answer(route: ApiRoute | null, tenant: string | null, result: Outcome): ApiResult {
    deps.logger.info('request', {
      route: route?.name ?? 'unmatched',
      tenant,
      status: result.statusCode,
      ...result.log,
    });
    return result.response;
  }

  async function dispatch(
    route: ApiRoute,
    params: Readonly<Record<string, string>>,
    tenant: string,
    event: ApiEvent,
  ): Promise<Outcome> {
    switch (route.name) {
      case 'health':
        return jsonResult(200, { status: 'ok' });
      case 'openapi':
        openApi ??= JSON.stringify(buildOpenApiDocument());
        return rawJsonResult(200, openApi);
      case 'enqueue':
        return enqueue(tenant, event);
      case 'get':
        return getMessage(tenant, params.id ?? '');
      case 'list':
        return listMessages(tenant, event.queryStringParameters ?? {});
      case 'reschedule':
        return reschedule(tenant, params.id ?? '', event);
      case 'cancel': {
        if (!isMessageId(params.id ?? '')) return notFound();
        const now = deps.now();
        const expiresAt = expiresAtAfter(now, deps.config.retentionDays);
        return transitionResult(
          await deps.store.cancel({ tenant, id: params.id ?? '', now, expiresAt }),
          200,
          'cancelled',
        );
      }
      case 'retry': {
        if (!isMessageId(params.id ?? '')) return notFound();
        const now = deps.now();
        // It is sent now: its body must live the retention and the redrive window from now.
        const bodyExpiresAt = bodyExpiresAtAfter(now, deps.config.retentionDays);
        return transitionResult(
          await deps.store.retry({ tenant, id: params.id ?? '', now, bodyExpiresAt }),
          202,
          'retried',
        );
      }
      case 'raiseGroup':
        return raiseGroup(tenant, params.key ?? '', event);
    }
  }

  async function enqueue(tenant: string, event: ApiEvent): Promise<Outcome> {
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
    const parsed = parseEnqueueRequest(body.value, { ...validation, now });
    if (!parsed.ok) {
      // Time bounds judge a new message, not a replay: a request whose original exists (its
      // `not_after` since passed, say) is answered with it, so the client learns what happened.
      const original = await deps.store.getMessage(tenant, messageIdFor(tenant, key.key));
      if (original?.fingerprint !== undefined) {
        const asOriginal = parseEnqueueRequest(body.value, {
          ...validation,
          now: new Date(original.created_at),
        });
        if (asOriginal.ok && requestFingerprint(asOriginal.value) === original.fingerprint) {
          return replayedResult(original);
        }
      }
      return problemResult(parsed.problem);
    }
    const outcome = await enqueueMessage(
      { store: deps.store, sleep },
      {
        tenant,
        idempotencyKey: key.key,
        request: parsed.value,
        now,
        random: deps.random,
        retentionDays: deps.config.retentionDays,
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
    const view = messageView(outcome.state, { withHistory: false });
    const location = `/v1/messages/${outcome.state.id}`;
    return jsonResult(
      202,
      view,
      { location },
      { message_id: outcome.state.id, message_status: outcome.state.status },
    );
  }

  function replayedResult(state: MessageStateRecord): Outcome {
    return jsonResult(
      200,
      messageView(state, { withHistory: false }),
      { 'idempotent-replayed': 'true', location: `/v1/messages/${state.id}` },
      { message_id: state.id, replayed: true },
    );
  }

  async function getMessage(tenant: string, id: string): Promise<Outcome> {
    if (!isMessageId(id)) return notFound();
    const state = await deps.store.getMessage(tenant, id);
    if (!state) return notFound();
    return jsonResult(200, messageView(state, { withHistory: true }), {}, { message_id: id });
  }

  async function listMessages(
    tenant: string,
    query: Readonly<Record<string, string | undefined>>,
  ): Promise<Outcome> {
    const errors: { field: string; message: string }[] = [];
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
  }

  async function reschedule(tenant: string, id: string, event: ApiEvent): Promise<Outcome> {
    if (!isMessageId(id)) return notFound();
    const body = readJsonBody(event);
    if (!body.ok) return problemResult(body.problem);
    const now = deps.now();
    const parsed = parseRescheduleRequest(body.value, { now, maxHorizonDays: deps.config.maxHorizonDays });
    if (!parsed.ok) return problemResult(parsed.problem);
    const sendAt = parsed.value.send_at;
    const bodyExpiresAt = bodyExpiresAtAfter(new Date(sendAt), deps.config.retentionDays);
    const result = await deps.store.reschedule({ tenant, id, now, sendAt, bodyExpiresAt });
    if (result.kind === 'past-deadline') {
      return problemResult(
        validationProblem([{ field: '/send_at', message: "must be before the message's not_after" }]),
        {},
        { message_id: id },
      );
    }
    return transitionResult(result, 200, 'rescheduled');
  }

  async function raiseGroup(tenant: string, rawKey: string, event: ApiEvent): Promise<Outcome> {
    const key = parseGroupKey(rawKey);
    if (!key.ok) return problemResult(key.problem);
    const body = readJsonBody(event);
    if (!body.ok) return problemResult(body.problem);
    const parsed = parseGroupVersionRequest(body.value);
    if (!parsed.ok) return problemResult(parsed.problem);
    const head = await deps.store.raiseGroup({
      tenant,
      groupKey: key.value,
      version: parsed.value.version,
      now: deps.now(),
    });
    return jsonResult(200, { key: key.value, version: head.version, updated_at: head.updated_at });
  }
}

// ─── Results ────────────────────────────────────────────────────────────────────────────────────

interface Outcome {
  readonly statusCode: number;
  readonly response: ApiResult;
  /** Safe attributes for the request's log line. */
  readonly log: Readonly<Record<string, unknown>>;
}

const COMMON_HEADERS = { 'cache-control': 'no-store' } as const;

function rawJsonResult(statusCode: number, body: string): Outcome {
  return {
    statusCode,
    response: { statusCode, headers: { ...COMMON_HEADERS, 'content-type': 'application/json' }, body },
    log: {},
  };
}

function jsonResult(
  statusCode: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
  log: Readonly<Record<string, unknown>> = {},
): Outcome {
  return {
    statusCode,
    response: {
      statusCode,
      headers: { ...COMMON_HEADERS, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    },
    log,
  };
}

function problemResult(
  details: ProblemDetails,
  headers: Readonly<Record<string, string>> = {},
  log: Readonly<Record<string, unknown>> = {},
): Outcome {
  return {
    statusCode: details.status,
    response: {
      statusCode: details.status,
      headers: { ...COMMON_HEADERS, 'content-type': PROBLEM_CONTENT_TYPE, ...headers },
      body: JSON.stringify(details),
    },
    // Problem types and field names are safe to log; details and messages never echo values either.
    log: { ...log, problem: details.type, fields: details.errors?.map((error) => error.field) },
  };
}

function notFound(): Outcome {
  return problemResult(
    problem('notFound', 'No message with this id.', { errors: [{ field: 'id', message: 'not found' }] }),
  );
}

function transitionResult(result: TransitionResult, okStatus: number, verb: string): Outcome {
  switch (result.kind) {
    case 'updated':
      return jsonResult(
        okStatus,
        messageView(result.state, { withHistory: false }),
        {},
        {
          message_id: result.state.id,
          message_status: result.state.status,
        },
      );
    case 'not-found':
      return notFound();
    case 'conflict':
    case 'past-deadline':
      return problemResult(
        problem('conflict', `The message is ${result.current.status}; it cannot be ${verb} now.`, {
          extensions: { current_status: result.current.status },
        }),
        {},
        { message_id: result.current.id, message_status: result.current.status },
      );
  }
}

/** The tenant from the authorizer's context, or null when absent or malformed. */
function tenantOf(event: ApiEvent): string | null {
  const context: Partial<AuthorizerContext> | undefined = event.requestContext?.authorizer?.lambda;
  const tenant = context?.tenant;
  return typeof tenant === 'string' && TENANT_PATTERN.test(tenant) ? tenant : null;
}
