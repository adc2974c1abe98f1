/**
 * The webhook routes (DESIGN §3, §11): a tenant's endpoints, their deliveries, a test event and the
 * manual retry of a failed delivery (or of a pending one whose copy is not coming: mayRetryDelivery),
 * the rotation of a secret. An endpoint is found only under the
 * caller's tenant, so another tenant's id answers 404. A signing secret is in the answer to the POST
 * that creates or rotates it and never again (nor in any log line). The steps the CLI shares
 * (`postdate webhooks create | show | test | retry`) are exported below the handlers.
 */
import { randomBytes } from 'node:crypto';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SqsWebhookQueue } from '../../adapters/SqsWebhookQueue.js';
import { checkNewWebhookUrl } from '../../adapters/webhookAddressPolicy.js';
import type { WebhookRouteName } from '../../core/apiRoutes.js';
import type { Config, ResourceNames } from '../../core/config.js';
import { newMessageId } from '../../core/ids.js';
import { decodeCursor, encodeCursor, readLimit, unknownParameters } from '../../core/listQuery.js';
import { type PostdateEvent, WEBHOOK_TEST_EVENT_TYPE } from '../../core/messageEvents.js';
import { type FieldError, problem, validationProblem } from '../../core/problem.js';
import { validateCreateWebhook } from '../../core/requestSchemas.js';
import { isTestSide, publicTenant } from '../../core/testSide.js';
import { mayRetryDelivery, stalledRetryFrom, WEBHOOK_STALLED_AFTER_MS } from '../../core/webhookOperator.js';
import {
  isWebhookDeliveryId,
  isWebhookDeliveryStatus,
  isWebhookEndpointId,
  WEBHOOK_LIMITS,
  WEBHOOK_SECRET_BYTES,
  WEBHOOK_SECRET_PREFIX,
  type WebhookDeliveryStatus,
  webhookEndpointId,
} from '../../core/webhooks.js';
import type { WebhookDelivery, WebhookEndpoint, WebhookQueue, WebhookStore } from '../../ports/Webhooks.js';
import { DynamoWebhookStore, deliveryExpiresAt, newDelivery } from '../../store/webhookStore.js';
import { jsonResult, type Outcome, problemResult, type RouteHandler, readJsonBody } from '../route.js';

/** What the webhook routes need; absent, they answer 404 (the stack has no webhook queue). */
export interface WebhookRouteDependencies {
  readonly store: WebhookStore;
  readonly queue: WebhookQueue;
  /**
   * Checks a URL at creation (scheme, literal addresses, the addresses its name resolves to now:
   * checkNewWebhookUrl); each delivery checks again the address it connects to.
   */
  readonly checkUrl: (
    url: string,
  ) => Promise<{ readonly ok: true } | { readonly ok: false; readonly reason: string }>;
  readonly retryHours: number;
  readonly retentionDays: number;
  readonly now: () => Date;
  readonly random: () => number;
  /** @default `whsec_` + base64 of 32 bytes from the CSPRNG */
  readonly newSecret?: () => string;
}

export function webhookRouteHandlers(
  deps: WebhookRouteDependencies | undefined,
): Readonly<Record<WebhookRouteName, RouteHandler>> {
  if (deps === undefined) {
    const unavailable: RouteHandler = async () =>
      problemResult(problem('notFound', 'Webhooks are not set up on this deployment.'));
    return {
      createWebhook: unavailable,
      listWebhooks: unavailable,
      getWebhook: unavailable,
      deleteWebhook: unavailable,
      testWebhook: unavailable,
      rotateWebhookSecret: unavailable,
      listWebhookDeliveries: unavailable,
      retryWebhookDelivery: unavailable,
    };
  }
  const newSecret = deps.newSecret ?? newWebhookSecret;
  const findEndpoint = (tenant: string, id: string | undefined) =>
    findWebhookEndpoint(deps.store, tenant, id ?? '');

  return {
    async createWebhook({ tenant, event }) {
      const body = readJsonBody(event);
      if (!body.ok) return problemResult(body.problem);
      const created = await createWebhookEndpoint({ ...deps, newSecret }, tenant, body.value);
      if (created.kind === 'invalid') return problemResult(validationProblem(created.errors));
      if (created.kind === 'limit') {
        return problemResult(
          problem(
            'conflict',
            `A tenant may have at most ${WEBHOOK_LIMITS.maxEndpointsPerTenant} webhook endpoints.`,
          ),
        );
      }
      const { endpoint } = created;
      // The only answer that carries the secret.
      return jsonResult(
        201,
        { ...endpointView(endpoint), secret: endpoint.secret },
        { location: `/v1/webhooks/${endpoint.id}` },
        { webhook_id: endpoint.id },
      );
    },

    async listWebhooks({ tenant, event }) {
      const unknown = unknownParameters(event.queryStringParameters ?? {}, []);
      if (unknown.length > 0) return problemResult(validationProblem(unknown));
      const endpoints = await deps.store.listEndpoints(tenant);
      return jsonResult(200, { items: endpoints.map(endpointView) }, {}, { count: endpoints.length });
    },

    async getWebhook({ tenant, params }) {
      const endpoint = await findEndpoint(tenant, params.id);
      if (!endpoint) return webhookNotFound();
      const deliveries = await deps.store.countDeliveries(endpoint.id);
      return jsonResult(200, { ...endpointView(endpoint), deliveries }, {}, { webhook_id: endpoint.id });
    },

    async deleteWebhook({ tenant, params }) {
      const id = params.id ?? '';
      if ((await deleteWebhookEndpoint(deps.store, tenant, id)) === 'not-found') return webhookNotFound();
      // Deliveries still queued find no endpoint and stop; their records expire with their TTL.
      return jsonResult(200, { id, deleted: true }, {}, { webhook_id: id });
    },

    async testWebhook({ tenant, params }) {
      const tested = await sendTestEvent(deps, tenant, params.id ?? '');
      if (tested.kind === 'not-found') return webhookNotFound();
      if (tested.kind === 'queue-refused') return queueUnavailable('No test event was sent.');
      const { delivery } = tested;
      return jsonResult(
        202,
        deliveryView(delivery),
        {},
        { webhook_id: delivery.endpointId, delivery_id: delivery.id },
      );
    },

    async rotateWebhookSecret({ tenant, params }) {
      const id = params.id ?? '';
      if (!isWebhookEndpointId(id)) return webhookNotFound();
      const rotated = await deps.store.rotateSecret({ tenant, id, secret: newSecret(), now: deps.now() });
      if (rotated === 'not-found') return webhookNotFound();
      // Like the creation's answer, the only one that carries the new secret.
      return jsonResult(
        200,
        {
          ...endpointView(rotated),
          secret: rotated.secret,
          previous_secret_expires_at: retiredUntil(rotated),
        },
        {},
        { webhook_id: rotated.id },
      );
    },

    async listWebhookDeliveries({ tenant, params, event }) {
      const endpoint = await findEndpoint(tenant, params.id);
      if (!endpoint) return webhookNotFound();
      const query: Readonly<Record<string, string | undefined>> = event.queryStringParameters ?? {};
      const errors = unknownParameters(query, ['status', 'limit', 'cursor']);
      let status: WebhookDeliveryStatus | null = null;
      if (query.status !== undefined && query.status !== '') {
        if (isWebhookDeliveryStatus(query.status)) status = query.status;
        else errors.push({ field: 'status', message: 'must be pending, delivered or failed' });
      }
      const limit = readLimit(query.limit, DELIVERY_LIST_LIMIT);
      if (!limit.ok) errors.push(limit.error);
      const listing: DeliveryListing = { tenant, endpointId: endpoint.id, status };
      let cursor: string | null = null;
      if (query.cursor !== undefined && query.cursor !== '' && errors.length === 0) {
        cursor = decodeDeliveryCursor(query.cursor, listing);
        if (cursor === null)
          errors.push({
            field: 'cursor',
            message: 'is not a next_cursor of this listing (the same key, endpoint and status)',
          });
      }
      if (errors.length > 0) return problemResult(validationProblem(errors));
      const page = await deps.store.listDeliveries({
        endpointId: endpoint.id,
        status,
        limit: limit.ok ? limit.limit : DELIVERY_LIST_LIMIT.default,
        cursor,
      });
      const next = page.nextCursor === null ? null : encodeDeliveryCursor(page.nextCursor, listing);
      return jsonResult(
        200,
        { items: page.items.map(deliveryView), next_cursor: next },
        {},
        { webhook_id: endpoint.id, count: page.items.length },
      );
    },

    async retryWebhookDelivery({ tenant, params }) {
      const retried = await retryDelivery(deps, tenant, params.id ?? '', params.delivery ?? '');
      if (retried.kind === 'endpoint-not-found') return webhookNotFound();
      if (retried.kind === 'not-found') return deliveryNotFound();
      if (retried.kind === 'conflict') return deliveryConflict(retried.current);
      if (retried.kind === 'queue-refused')
        return queueUnavailable(`The delivery was not retried; it is still ${retried.current.status}.`);
      const { delivery } = retried;
      return jsonResult(
        202,
        deliveryView(delivery),
        {},
        { webhook_id: delivery.endpointId, delivery_id: delivery.id },
      );
    },
  };
}

/** A new signing secret: `whsec_` + base64 of 32 bytes from the CSPRNG (DESIGN §11). */
export function newWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(WEBHOOK_SECRET_BYTES).toString('base64')}`;
}

/** When the secret a rotation just retired stops signing (its answer's `previous_secret_expires_at`). */
export function retiredUntil(rotated: WebhookEndpoint): string {
  const [retired] = rotated.retiredSecrets;
  if (retired === undefined) throw new Error('a rotated endpoint has no retired secret');
  return retired.until;
}

/** The tenant's endpoint of this id; null for none, another tenant's, or no endpoint id at all. */
export async function findWebhookEndpoint(
  store: WebhookStore,
  tenant: string,
  id: string,
): Promise<WebhookEndpoint | null> {
  return isWebhookEndpointId(id) ? store.getEndpoint(tenant, id) : null;
}

/**
 * Deletes the tenant's endpoint of this id (`DELETE /v1/webhooks/{id}`); `not-found` for none,
 * another tenant's, or no endpoint id at all. Shared by the api and the CLI (`postdate webhooks delete`).
 */
export async function deleteWebhookEndpoint(
  store: WebhookStore,
  tenant: string,
  id: string,
): Promise<'deleted' | 'not-found'> {
  return isWebhookEndpointId(id) ? store.deleteEndpoint(tenant, id) : 'not-found';
}

export type CreateEndpointResult =
  | { readonly kind: 'created'; readonly endpoint: WebhookEndpoint }
  | { readonly kind: 'invalid'; readonly errors: readonly FieldError[] }
  /** The tenant has WEBHOOK_LIMITS.maxEndpointsPerTenant endpoints already. */
  | { readonly kind: 'limit' };

/**
 * A new endpoint from a `POST /v1/webhooks` body: the body's rules (the event types) and the URL's
 * policy (`checkUrl`), every fault named at once, then the write under the tenant's limit; nothing is
 * written unless all pass.
 * Shared by the api and the CLI (`postdate webhooks create`). The endpoint holds its secret: the
 * caller shows it this once and logs it never.
 */
export async function createWebhookEndpoint(
  deps: Pick<WebhookRouteDependencies, 'store' | 'checkUrl' | 'now' | 'random' | 'newSecret'>,
  tenant: string,
  body: unknown,
): Promise<CreateEndpointResult> {
  const parsed = validateCreateWebhook(body);
  // The URL's policy is told beside the body's other faults, so one answer names every field at fault.
  const schemaErrors = parsed.ok ? [] : parsed.errors;
  const url = schemaErrors.some((error) => error.field === '/url')
    ? undefined
    : await urlProblem(deps.checkUrl, (body as { readonly url?: unknown } | null)?.url);
  const errors = url ? [...schemaErrors, url] : schemaErrors;
  if (!parsed.ok || errors.length > 0) return { kind: 'invalid', errors };
  const now = deps.now();
  const endpoint: WebhookEndpoint = {
    id: webhookEndpointId(newMessageId(now.getTime(), deps.random)),
    tenant,
    url: parsed.value.url,
    events: parsed.value.events,
    description: parsed.value.description,
    secret: (deps.newSecret ?? newWebhookSecret)(),
    retiredSecrets: [],
    createdAt: now.toISOString(),
  };
  const created = await deps.store.createEndpoint(endpoint, WEBHOOK_LIMITS.maxEndpointsPerTenant);
  return created === 'limit' ? { kind: 'limit' } : { kind: 'created', endpoint };
}

/** The URL policy's refusal of a body's `url`, or none (nor for a `url` that is no string: the schema's). */
async function urlProblem(
  checkUrl: WebhookRouteDependencies['checkUrl'],
  url: unknown,
): Promise<FieldError | undefined> {
  if (typeof url !== 'string') return undefined;
  const checked = await checkUrl(url);
  return checked.ok ? undefined : { field: '/url', message: checked.reason };
}

export type TestEventResult =
  | { readonly kind: 'queued'; readonly delivery: WebhookDelivery }
  | { readonly kind: 'not-found' }
  /** The webhook queue refused the copy: nothing was recorded. */
  | { readonly kind: 'queue-refused' };

/**
 * A `webhook.test` event for the tenant's endpoint `id`, delivered now (DESIGN §3): its copy on the
 * webhook queue first, then its delivery record, as for a manual retry — a queue failure leaves
 * nothing behind (no delivery pending for good), and a copy whose write never lands waits a while
 * and is dropped. Shared by the api and the CLI (`postdate webhooks test`).
 */
export async function sendTestEvent(
  deps: Pick<WebhookRouteDependencies, 'store' | 'queue' | 'now' | 'retryHours' | 'retentionDays'>,
  tenant: string,
  id: string,
): Promise<TestEventResult> {
  const endpoint = await findWebhookEndpoint(deps.store, tenant, id);
  if (!endpoint) return { kind: 'not-found' };
  const now = deps.now();
  const event: PostdateEvent = {
    id: `evt_${randomBytes(16).toString('hex')}`,
    type: WEBHOOK_TEST_EVENT_TYPE,
    created_at: now.toISOString(),
    tenant: publicTenant(tenant),
    // Which side sent it, as a message event's view says (DESIGN §14): one URL may serve both sides.
    data: { webhook_id: endpoint.id, test: isTestSide(tenant), message: 'A test event from Postdate.' },
  };
  const delivery = newDelivery({
    endpoint,
    event,
    now,
    retryHours: deps.retryHours,
    retentionDays: deps.retentionDays,
  });
  if (await sendCopy(deps.queue, delivery, now)) return { kind: 'queue-refused' };
  await deps.store.putDelivery(delivery);
  return { kind: 'queued', delivery };
}

export type RetryDeliveryResult =
  | { readonly kind: 'retried'; readonly delivery: WebhookDelivery }
  /** No endpoint of this id under the tenant (none, another tenant's, or no endpoint id at all). */
  | { readonly kind: 'endpoint-not-found' }
  | { readonly kind: 'not-found' }
  /** Not to be retried (mayRetryDelivery), or changed meanwhile: `current` is how it is. */
  | { readonly kind: 'conflict'; readonly current: WebhookDelivery }
  /** The webhook queue refused the copy (`error`, its cause): nothing changed. */
  | { readonly kind: 'queue-refused'; readonly current: WebhookDelivery; readonly error: unknown };

/**
 * The manual retry of the tenant's delivery `deliveryId` of endpoint `endpointId` (DESIGN §11): the
 * copy goes first, for the revision the retry is about to write: a copy that arrives before the write
 * is put back until it lands, and one whose write never lands is dropped as stale after a bounded
 * wait (decideCopyAhead). A queue failure changes nothing. Shared by the api
 * (`POST /v1/webhooks/{id}/deliveries/{delivery}/retry`) and the CLI (`postdate webhooks retry`).
 */
export async function retryDelivery(
  deps: Pick<WebhookRouteDependencies, 'store' | 'queue' | 'now' | 'retryHours' | 'retentionDays'>,
  tenant: string,
  endpointId: string,
  deliveryId: string,
): Promise<RetryDeliveryResult> {
  const endpoint = await findWebhookEndpoint(deps.store, tenant, endpointId);
  if (!endpoint) return { kind: 'endpoint-not-found' };
  if (!isWebhookDeliveryId(deliveryId)) return { kind: 'not-found' };
  const current = await deps.store.getDelivery(endpoint.id, deliveryId);
  if (!current || current.tenant !== tenant) return { kind: 'not-found' };
  const now = deps.now();
  if (!mayRetryDelivery(current, now)) return { kind: 'conflict', current };
  const retryId = randomBytes(16).toString('hex');
  const refused = await sendCopy(deps.queue, { ...current, rev: current.rev + 1 }, now, retryId);
  if (refused) return { kind: 'queue-refused', current, error: refused.error };
  const result = await deps.store.retryDelivery({
    endpointId: endpoint.id,
    deliveryId,
    seen: { rev: current.rev, attempts: current.attempts },
    retryId,
    now: now.toISOString(),
    expiresAt: deliveryExpiresAt(now, deps.retryHours, deps.retentionDays),
  });
  if (result.kind === 'not-found') return { kind: 'not-found' };
  if (result.kind === 'conflict') return { kind: 'conflict', current: result.current };
  return { kind: 'retried', delivery: result.delivery };
}

/**
 * Queues the copy of `delivery` for a write still to come (`issued_at`: the delivery function waits
 * for the write a bounded time), a manual retry's with its id (`retry`); the queue's refusal, or
 * undefined when it took the copy.
 */
async function sendCopy(
  queue: WebhookQueue,
  delivery: WebhookDelivery,
  now: Date,
  retryId?: string,
): Promise<{ readonly error: unknown } | undefined> {
  const copy = {
    v: 1,
    endpoint: delivery.endpointId,
    delivery: delivery.id,
    rev: delivery.rev,
    seq: delivery.attempts,
    issued_at: now.getTime(),
    ...(retryId === undefined ? {} : { retry: retryId }),
  } as const;
  const { failed, error } = await queue.send([{ copy, delaySeconds: 0 }]);
  return failed.length === 0
    ? undefined
    : { error: error ?? new Error('the webhook queue refused the copy') };
}

function queueUnavailable(detail: string): Outcome {
  return problemResult(
    problem('unavailable', `The webhook queue is unavailable. ${detail} Try again shortly.`),
    { 'retry-after': '5' },
  );
}

/** An endpoint as the API answers it (never its secret). */
export function endpointView(endpoint: WebhookEndpoint): Record<string, unknown> {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events,
    description: endpoint.description,
    created_at: endpoint.createdAt,
  };
}

/** A delivery as the API answers it: its state and attempts (not the payload). */
export function deliveryView(delivery: WebhookDelivery): Record<string, unknown> {
  return {
    id: delivery.id,
    webhook_id: delivery.endpointId,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    next_attempt_at: delivery.status === 'pending' ? delivery.nextAttemptAt : null,
    created_at: delivery.createdAt,
    updated_at: delivery.updatedAt,
    delivered_at: delivery.deliveredAt,
    history: delivery.history.map((attempt) => ({
      at: attempt.at,
      status_code: attempt.statusCode,
      error: attempt.error,
      duration_ms: attempt.durationMs,
    })),
  };
}

function webhookNotFound(): Outcome {
  return problemResult(
    problem('notFound', 'No webhook endpoint with this id.', {
      errors: [{ field: 'id', message: 'not found' }],
    }),
  );
}

function deliveryNotFound(): Outcome {
  return problemResult(
    problem('notFound', 'No such delivery of this webhook endpoint.', {
      errors: [{ field: 'delivery', message: 'not found' }],
    }),
  );
}

function deliveryConflict(current: WebhookDelivery): Outcome {
  const from = stalledRetryFrom(current);
  const detail =
    from === null
      ? `The delivery is ${current.status}: only a failed delivery, or a pending one whose next attempt is more than ${WEBHOOK_STALLED_AFTER_MS / 3_600_000} hours overdue, can be retried.`
      : `The delivery is pending, its next attempt due at ${current.nextAttemptAt}: its copy may still come (from the webhook queue, or from its dead-letter queue once redriven). Retry it from ${from.toISOString()}, when that attempt is ${WEBHOOK_STALLED_AFTER_MS / 3_600_000} hours overdue.`;
  return problemResult(
    problem('conflict', detail, {
      extensions: { delivery_status: current.status, retryable_at: from?.toISOString() ?? null },
    }),
    {},
    { delivery_id: current.id },
  );
}

/**
 * The webhook routes' real store and queue, when the stack has a webhook queue
 * (`POSTDATE_WEBHOOK_QUEUE_URL`); without one the routes answer 404.
 */
export function wireWebhookRoutes(wiring: {
  readonly config: Config;
  readonly names: ResourceNames;
  readonly documents: DynamoDBDocumentClient;
  /** The api's one SQS client (it also carries the api's immediate copies). */
  readonly sqs: SQSClient;
  readonly random: () => number;
}): WebhookRouteDependencies | undefined {
  const queueUrl = wiring.names.webhookQueueUrl;
  if (queueUrl === undefined) return undefined;
  const policy = wiring.config.webhookAllowPrivateUrls ? 'local' : 'public-https';
  return {
    store: new DynamoWebhookStore(wiring.documents, wiring.names.tableName),
    queue: new SqsWebhookQueue(wiring.sqs, queueUrl),
    checkUrl: (url) => checkNewWebhookUrl(url, policy),
    retryHours: wiring.config.webhookRetryHours,
    retentionDays: wiring.config.retentionDays,
    now: () => new Date(),
    random: wiring.random,
  };
}

/** One endpoint's deliveries, of one status or all, as its tenant lists them. */
interface DeliveryListing {
  readonly tenant: string;
  readonly endpointId: string;
  readonly status: WebhookDeliveryStatus | null;
}

const DELIVERY_LIST_LIMIT = {
  default: WEBHOOK_LIMITS.listDefault,
  min: 1,
  max: WEBHOOK_LIMITS.listMax,
} as const;

/**
 * The opaque `cursor` of GET /v1/webhooks/{id}/deliveries (lambdas/core/listQuery.ts):
 * `{"w":endpoint,"s":status|null,"d":delivery}`, the last delivery of the previous page.
 */
function encodeDeliveryCursor(lastDelivery: string, listing: DeliveryListing): string {
  return encodeCursor(listing.tenant, { w: listing.endpointId, s: listing.status, d: lastDelivery });
}

/** The delivery to continue after; null when the cursor is not one this listing issued. */
function decodeDeliveryCursor(cursor: string, listing: DeliveryListing): string | null {
  // Issued before decision 0254, a cursor was the bare id: taken for the caller's listing (0250).
  if (isWebhookDeliveryId(cursor)) return cursor;
  const fields = decodeCursor(cursor, listing.tenant);
  if (fields === null || fields.w !== listing.endpointId || fields.s !== listing.status) return null;
  return typeof fields.d === 'string' && isWebhookDeliveryId(fields.d) ? fields.d : null;
}
