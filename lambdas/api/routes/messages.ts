/**
 * The routes of one message and its group (DESIGN §3): read one, list them a page at a time,
 * reschedule, cancel, retry, raise a group's version. Each is a factory over the dependencies it
 * reads; the enqueue has its own file (enqueue.ts).
 */

import { attachmentsGoneProblem } from '../../core/attachments.js';
import { ConfigError } from '../../core/config.js';
import { RESOURCE_SETTINGS } from '../../core/configSpec.js';
import { isMessageId } from '../../core/ids.js';
import type { ShardPosition } from '../../core/listPages.js';
import { decodeCursor, encodeCursor, readLimit, unknownParameters } from '../../core/listQuery.js';
import {
  validateGroupKey,
  validateGroupVersionRequest,
  validateRescheduleRequest,
} from '../../core/messageSchema.js';
import { isMessageStatus, type MessageStatus } from '../../core/messageStatus.js';
import { type FieldError, type ProblemDetails, problem, validationProblem } from '../../core/problem.js';
import { isRefused, type RecordRefusal } from '../../core/recordLayout.js';
import { LIST_LIMIT } from '../../core/requestLimits.js';
import type { ApiStore, TransitionResult } from '../../ports/ApiStore.js';
import type { AttachmentStore } from '../../ports/AttachmentStore.js';
import { fromStatuses, shardCount } from '../../store/apiStore.js';
import { expiresAtAfter, type MessageStateRecord } from '../../store/messageRecord.js';
import { messageView } from '../../store/messageView.js';
import {
  jsonResult,
  notFound,
  problemResult,
  type RouteDependencies,
  type RouteHandler,
  readJsonBody,
  transitionResult,
} from '../route.js';

/** GET /v1/messages/{id}: one message of the tenant, with its history. */
export function getMessageRoute(deps: Pick<RouteDependencies, 'store' | 'now'>): RouteHandler {
  return async function getMessage({ tenant, params }) {
    const id = params.id ?? '';
    if (!isMessageId(id)) return notFound();
    // One past its retention is gone, whenever DynamoDB's deleter runs (decision 0205).
    const state = await deps.store.showMessage(tenant, id, deps.now());
    if (!state) return notFound();
    // It exists: not a 404, and not shown by rules that are not its writer's (decision 0166).
    if (isRefused(state)) return problemResult(newerWriterProblem(state.refusal), {}, { message_id: id });
    return jsonResult(200, messageView(state, { withHistory: true }), {}, { message_id: id });
  };
}

/** What GET answers for a message this stack refuses: the stack, not the request, must change. */
function newerWriterProblem(refusal: RecordRefusal): ProblemDetails {
  return problem(
    'newerWriter',
    `This message was written by a newer outbox helper than this stack can read (${refusal.reason}); it waits, unsent, until the stack is upgraded. Upgrade the stack before the application.`,
  );
}

/**
 * GET /v1/messages: the tenant's messages, newest first, optionally of one status, a page at a
 * time (`limit`, and the opaque `cursor` of the previous page).
 */
export function listMessagesRoute(deps: Pick<RouteDependencies, 'store' | 'now'>): RouteHandler {
  return async function listMessages({ tenant, event }) {
    const query: Readonly<Record<string, string | undefined>> = event.queryStringParameters ?? {};
    // A filter this listing does not have (a time range, a tag) would otherwise list everything.
    const errors: FieldError[] = unknownParameters(query, LIST_PARAMETERS);
    let status: MessageStatus | null = null;
    if (query.status !== undefined && query.status !== '') {
      if (isMessageStatus(query.status)) status = query.status;
      else errors.push({ field: 'status', message: 'must be a message status' });
    }
    const limit = readLimit(query.limit, LIST_LIMIT);
    if (!limit.ok) errors.push(limit.error);
    const shards = shardCount(status);
    const listing = { tenant, status };
    let positions: ShardPosition[] = Array.from({ length: shards }, () => ({ kind: 'start' }));
    if (query.cursor !== undefined && query.cursor !== '' && errors.length === 0) {
      const decoded = decodeListCursor(query.cursor, listing, shards);
      if (decoded === null)
        errors.push({
          field: 'cursor',
          message: 'is not a next_cursor of this listing (the same key and status)',
        });
      else positions = decoded;
    }
    if (errors.length > 0) return problemResult(validationProblem(errors));
    const page = await deps.store.listMessages({
      tenant,
      status,
      limit: limit.ok ? limit.limit : LIST_LIMIT.default,
      positions,
      now: deps.now(),
    });
    return jsonResult(
      200,
      {
        items: page.items.map((state) => messageView(state, { withHistory: false })),
        next_cursor: encodeListCursor(listing, page.positions),
      },
      {},
      { count: page.items.length },
    );
  };
}

/** The query parameters of GET /v1/messages (DESIGN §3). */
const LIST_PARAMETERS = ['status', 'limit', 'cursor'] as const;

/** One listing: whose (the tenant id, a test side's own) and of which status. */
export interface MessageListing {
  readonly tenant: string;
  readonly status: MessageStatus | null;
}

/**
 * The opaque `cursor` of GET /v1/messages (lambdas/core/listQuery.ts): `{"s":status|null,"p":[…]}`,
 * one entry of `p` per index shard: `null` (not started), a sort key `{created_at}#{id}` (continue
 * after it) or `0` (exhausted).
 */
const SORT_KEY = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z#[0-9A-Za-z_-]{1,32}$/;

export function encodeListCursor(
  listing: MessageListing,
  positions: readonly ShardPosition[],
): string | null {
  if (positions.every((position) => position.kind === 'done')) return null;
  const p = positions.map((position) =>
    position.kind === 'start' ? null : position.kind === 'done' ? 0 : position.sortKey,
  );
  return encodeCursor(listing.tenant, { s: listing.status, p });
}

/** Decodes a cursor for this listing and shard count; null when it is not one we issued for them. */
export function decodeListCursor(
  cursor: string,
  listing: MessageListing,
  shards: number,
): ShardPosition[] | null {
  const fields = decodeCursor(cursor, listing.tenant);
  if (fields === null || fields.s !== listing.status) return null;
  const { p } = fields;
  if (!Array.isArray(p) || p.length !== shards) return null;
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

/** PATCH /v1/messages/{id}: a new send time for a scheduled message, before its not_after. */
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
    const {
      send_at: sendAt,
      send_at_local: local,
      time_zone: timeZone,
      quiet_hours: quietHours,
    } = parsed.value;
    const result = await deps.store.reschedule({
      tenant,
      id,
      now,
      sendAt,
      ...(timeZone === undefined ? {} : { timeZone }),
      ...(quietHours === undefined ? {} : { quietHours }),
    });
    if (result.kind === 'past-deadline') {
      const field = local === undefined ? '/send_at' : '/send_at_local';
      return problemResult(
        validationProblem([{ field, message: "must be before the message's not_after" }]),
        {},
        { message_id: id },
      );
    }
    return transitionResult(result, 200, 'rescheduled');
  };
}

/** DELETE /v1/messages/{id}: cancels a `scheduled` or `retrying` message (409 when sending or final). */
export function cancelMessageRoute(deps: Pick<RouteDependencies, 'store' | 'config' | 'now'>): RouteHandler {
  return async function cancelMessage({ tenant, params }) {
    const id = params.id ?? '';
    if (!isMessageId(id)) return notFound();
    const now = deps.now();
    const expiresAt = expiresAtAfter(now, deps.config.retentionDays);
    return transitionResult(await deps.store.cancel({ tenant, id, now, expiresAt }), 200, 'cancelled');
  };
}

/**
 * POST /v1/messages/{id}/retry: a manual retry of a `failed`, `dead` or `unknown` message, sent now;
 * 409 `attachments-gone` when its attachments are no longer all stored (retryMessage). The stack
 * gives the api its attachments' bucket; an api without one cannot check them, and answers 500
 * (a ConfigError) rather than retry unchecked.
 */
export function retryMessageRoute(
  deps: Pick<RouteDependencies, 'store' | 'attachments' | 'config' | 'now'>,
): RouteHandler {
  return async function retryMessageNow({ tenant, params }) {
    const id = params.id ?? '';
    if (!isMessageId(id)) return notFound();
    const retry = { tenant, id, now: deps.now(), maxAttempts: deps.config.maxAttempts };
    const result = await retryMessage(deps, retry);
    if (result.kind === 'attachments-unchecked') {
      throw new ConfigError(
        RESOURCE_SETTINGS.attachmentBucket.variable,
        'unset, so the attachments of a message to retry cannot be checked',
      );
    }
    if (result.kind === 'attachments-gone') {
      const { current } = result;
      return problemResult(
        attachmentsGoneProblem(current.status, result.gone),
        {},
        { message_id: current.id, message_status: current.status, attachments_gone: result.gone.length },
      );
    }
    return transitionResult(result, 202, 'retried');
  };
}

/**
 * A retry's outcome: the transition's, or nothing changed because attachments (positions `gone`) are
 * no longer stored, or because there was no bucket to check them in.
 */
export type RetryResult =
  | TransitionResult
  | {
      readonly kind: 'attachments-gone';
      readonly current: MessageStateRecord;
      readonly gone: readonly number[];
    }
  | { readonly kind: 'attachments-unchecked'; readonly current: MessageStateRecord };

/**
 * A manual retry (DESIGN §3) of a message whose attachments are all still in the bucket; otherwise
 * nothing changes and the answer names the ones gone (decision 0130). An ended message's
 * files expire (a retention after its end, decision 0191) or are deleted, and the sender fails a message
 * whose file is missing for good, so a retry that found them gone would only fail it again. Only a
 * message the retry would take is checked (one HEAD per attachment); the status conflict comes
 * first. Without a bucket (a CLI that knows none) such a message is not retried unchecked:
 * `attachments-unchecked`. Shared by the api and the CLI (`postdate messages retry`).
 */
export async function retryMessage(
  deps: { readonly store: ApiStore; readonly attachments?: AttachmentStore | undefined },
  input: { tenant: string; id: string; now: Date; maxAttempts: number },
): Promise<RetryResult> {
  const attachments = deps.attachments;
  const current = await deps.store.getMessage(input.tenant, input.id, input.now);
  if (current === null) return { kind: 'not-found' };
  const held = current.attachments ?? [];
  if (held.length > 0 && fromStatuses('manual-retry').includes(current.status)) {
    if (attachments === undefined) return { kind: 'attachments-unchecked', current };
    const found = await Promise.all(held.map((attachment) => attachments.describe(attachment.key)));
    const gone = found.flatMap((object, position) => (object === undefined ? [position] : []));
    if (gone.length > 0) return { kind: 'attachments-gone', current, gone };
  }
  return deps.store.retry(input);
}

/** PUT /v1/groups/{key}: raises a group's version without sending anything. */
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
