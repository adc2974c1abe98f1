import { Webhook } from 'standardwebhooks';
import { WEBHOOK_METRIC, type WebhookMetric } from '../core/metricNames.js';
import { SQS_MAX_DELAY_SECONDS } from '../core/queueLimits.js';
import { LruCache } from '../core/templateCache.js';
import { isLiveSide } from '../core/testSide.js';
import {
  admitWebhookCopy,
  breakerAfterAttempt,
  type CopyAdmission,
  type EndpointBreaker,
} from '../core/webhookEndpointBreaker.js';
import {
  type AttemptResult,
  decideAfterAttempt,
  decideCopyAhead,
  decodeWebhookCopy,
  isCopyOfItsRetry,
  signingSecrets,
  WEBHOOK_DELIVERY_STATUS,
  WEBHOOK_DUE_SLACK_MS,
  WEBHOOK_TIMEOUT_MS,
  type WebhookCopy,
} from '../core/webhooks.js';
import type { Log } from '../ports/Log.js';
import type {
  DeliveryAttempt,
  WebhookEndpoint,
  WebhookHttp,
  WebhookQueue,
  WebhookStore,
} from '../ports/Webhooks.js';

/**
 * How long a warm delivery function may use an endpoint it read (its URL and secrets) before reading
 * it again: every delivery needs it, and one consistent read per delivery put the whole tenant's
 * endpoint partition (`WHEP#{tenant}`) on every attempt of every event (DESIGN §4, "No hot
 * partitions"). So a removed endpoint receives nothing more after this bound, and a rotated secret
 * signs every delivery after it (the old one still signs beside it for a day: DESIGN §11). At
 * 10,000 messages/s and 1,000 warm functions, one endpoint is read 200 times a second
 * (docs/capacity.md).
 */
export const WEBHOOK_ENDPOINT_MAX_AGE_MS = 5_000;

/** Endpoints one warm delivery function keeps (a tenant has at most WEBHOOK_LIMITS.maxEndpoints). */
const ENDPOINT_CACHE_ENTRIES = 1_000;

/** A warm function's endpoints, each at most WEBHOOK_ENDPOINT_MAX_AGE_MS old; a removed one is not kept. */
export function recentEndpoints(
  store: Pick<WebhookStore, 'getEndpoint'>,
  now: () => Date,
  maxAgeMs: number = WEBHOOK_ENDPOINT_MAX_AGE_MS,
): (tenant: string, id: string) => Promise<WebhookEndpoint | null> {
  const cache = new LruCache<WebhookEndpoint>(ENDPOINT_CACHE_ENTRIES, {
    maxAgeMs,
    now: () => now().getTime(),
  });
  return async (tenant, id) =>
    (await cache.getOrLoad(
      `${tenant}\u0000${id}`,
      async () => (await store.getEndpoint(tenant, id)) ?? undefined,
    )) ?? null;
}

/** Endpoints one warm delivery function keeps a breaker for (only those that stalled; a closed one is dropped). */
const BREAKER_ENTRIES = 1_000;

/**
 * The breakers of the endpoints this warm function saw stall (core/webhookEndpointBreaker.ts decides;
 * this keeps the state). Its own view only: another function learns from its own first stall, so a
 * stalled endpoint costs each function at most one timeout per interval. Past BREAKER_ENTRIES the
 * oldest is forgotten, which costs one more probe.
 */
export interface EndpointBreakers {
  /** POST a copy for `endpointId` now, defer it, or end its delivery (admitWebhookCopy). */
  admit(endpointId: string, now: Date, windowEndMs: number): CopyAdmission;
  /**
   * A POST to `endpointId` ended: the breaker it opened or lengthened, if it did (undefined: it closed
   * the breaker or left it as it was, e.g. a POST already in flight when the breaker opened).
   */
  settle(
    endpointId: string,
    attempt: { result: AttemptResult; durationMs: number },
    now: Date,
  ): EndpointBreaker | undefined;
}

export function endpointBreakers(random: () => number): EndpointBreakers {
  const open = new Map<string, EndpointBreaker>();
  const keep = (endpointId: string, breaker: EndpointBreaker | undefined): void => {
    open.delete(endpointId);
    if (breaker === undefined) return;
    open.set(endpointId, breaker);
    const oldest = open.size > BREAKER_ENTRIES ? open.keys().next().value : undefined;
    if (oldest !== undefined) open.delete(oldest);
  };
  return {
    admit(endpointId, now, windowEndMs) {
      const breaker = open.get(endpointId);
      const admission = admitWebhookCopy({ breaker, nowMs: now.getTime(), windowEndMs, random });
      if (admission.breaker !== breaker) keep(endpointId, admission.breaker);
      return admission;
    },
    settle(endpointId, attempt, now) {
      const before = open.get(endpointId);
      const breaker = breakerAfterAttempt(before, attempt, now.getTime(), random);
      if (breaker === before) return undefined;
      keep(endpointId, breaker);
      return breaker;
    },
  };
}

/** What the last attempt of a delivery that ends while its endpoint still stalls is decided as. */
const DEFERRED: AttemptResult = { kind: 'timeout' };

export interface DeliveryDeps {
  readonly store: WebhookStore;
  readonly queue: WebhookQueue;
  readonly http: WebhookHttp;
  readonly now: () => Date;
  readonly random: () => number;
  /** POSTDATE_WEBHOOK_RETRY_HOURS. */
  readonly retryHours: number;
  /** The retry backoff's base; a test passes a short one. @default WEBHOOK_BACKOFF.baseMs (5 s) */
  readonly retryBaseMs?: number | undefined;
  /** @default WEBHOOK_TIMEOUT_MS (10 s, DESIGN §11) */
  readonly timeoutMs?: number;
  readonly log?: Log;
  /** Publishes a metric; only a live tenant's deliveries are counted (decision 0155). */
  readonly count?: (metric: WebhookMetric) => void;
  /** The endpoint of a delivery: the handler passes its warm cache (recentEndpoints). @default a read each time */
  readonly endpoint?: (tenant: string, id: string) => Promise<WebhookEndpoint | null>;
  /** The warm function's endpoint breakers (the handler passes them). @default every copy is POSTed */
  readonly breakers?: EndpointBreakers;
}

export type CopyOutcome =
  | 'delivered'
  | 'retry'
  /** Not POSTed: its endpoint stalled lately (the breaker is open); put back, no attempt. */
  | 'deferred'
  | 'failed'
  /** Another revision, another attempt count, or not pending any more: nothing to do. */
  | 'stale'
  /** Arrived before its time (SQS delays at most 15 minutes): put back with the rest of the wait. */
  | 'redelayed'
  /** The endpoint was removed: the delivery stops. */
  | 'endpoint-gone'
  /** Not a copy this function can read: the handler fails it, so the redrive policy dead-letters it. */
  | 'malformed';

/**
 * One copy from the webhook queue, as a short list of steps: read the delivery; put back a copy that
 * came before its own write (a while, then it is stale); drop a stale copy; put back an early one; read the endpoint (gone: stop); sign and POST once, unless the endpoint's breaker defers it; write the outcome if the
 * copy is still current; queue the next attempt. Throws only when the copy must come back (a read, a
 * write or the queue failed): the handler reports it as a batch item failure, as it does a copy it
 * cannot decode.
 *
 * One delivery's copy never waits for another's: each delivery is its own SQS message with its own
 * delay, so a failing endpoint holds up only its own deliveries. A stalled one would still hold the
 * batch, and its slot, for a timeout per POST: after it stalled, this function puts its copies back
 * unsent (no attempt) and POSTs one probe per interval (core/webhookEndpointBreaker.ts).
 */
export async function deliverCopy(body: string, deps: DeliveryDeps): Promise<CopyOutcome> {
  const copy = decodeWebhookCopy(body);
  if (copy === null) return 'malformed';
  const delivery = await deps.store.getDelivery(copy.endpoint, copy.delivery);
  if (delivery === null || copy.rev > delivery.rev) {
    const ahead = decideCopyAhead(copy, deps.now());
    if (ahead.kind === 'stale') return 'stale';
    await sendOrThrow(deps.queue, copy, ahead.delaySeconds * 1000);
    return 'redelayed';
  }
  if (delivery.status !== WEBHOOK_DELIVERY_STATUS.pending || copy.rev !== delivery.rev) return 'stale';
  // Of two manual retries at once, the copy of the one whose write did not land.
  if (!isCopyOfItsRetry(copy, delivery.retryId ?? null)) return 'stale';
  const dueMs = Date.parse(delivery.nextAttemptAt ?? '') || 0;
  if (copy.seq === delivery.attempts - 1) {
    // This copy's attempt was written but the next copy could not be queued (the copy came back):
    // queue it now. A duplicate of it costs one extra POST; the attempt write lets one chain go on.
    await sendOrThrow(deps.queue, { ...copy, seq: delivery.attempts }, dueMs - deps.now().getTime());
    return 'redelayed';
  }
  if (copy.seq !== delivery.attempts) return 'stale';
  const waitMs = dueMs - deps.now().getTime();
  if (waitMs > WEBHOOK_DUE_SLACK_MS) {
    await sendOrThrow(deps.queue, copy, waitMs);
    return 'redelayed';
  }
  const endpoint = await (deps.endpoint ?? deps.store.getEndpoint.bind(deps.store))(
    delivery.tenant,
    delivery.endpointId,
  );
  if (endpoint === null) {
    deps.log?.info('webhook endpoint removed; delivery stops', { deliveryId: delivery.id });
    return 'endpoint-gone';
  }

  // The metrics the alarms and the dashboard watch (the alarmed `WebhookDeliveriesFailed`) are the
  // live side's, by the one rule, as the sender's outcome counts are (decision 0135). A test side's
  // deliveries count nowhere: its own API tells their state (listed, failed ones retryable), 0155.
  const count = isLiveSide(delivery.tenant) ? deps.count : undefined;
  const started = deps.now();
  // A delivery never tried yet has its window from its creation, for a deferral's sake only.
  const windowStart = Date.parse(delivery.windowStartedAt ?? delivery.createdAt) || started.getTime();
  const admission = deps.breakers?.admit(endpoint.id, started, windowStart + deps.retryHours * 3_600_000);
  if (admission?.verdict === 'defer') {
    // No attempt and no write: the same copy comes back when the endpoint may be POSTed again.
    await sendOrThrow(deps.queue, copy, admission.retryAtMs - started.getTime());
    return 'deferred';
  }
  const posted = admission?.verdict !== 'fail';
  const result = posted ? await post(endpoint, delivery, started, deps) : DEFERRED;
  const ended = deps.now();
  const durationMs = Math.max(0, ended.getTime() - started.getTime());
  if (posted && deps.breakers) {
    // Counted when this POST opened the breaker or lengthened it (the probe stalled), once an opening.
    const breaker = deps.breakers.settle(endpoint.id, { result, durationMs }, ended);
    if (breaker) {
      count?.(WEBHOOK_METRIC.endpointStalled);
      deps.log?.warn('webhook endpoint stalled; its copies are deferred on this function', {
        endpointId: endpoint.id,
        stalls: breaker.stalls,
        deferSeconds: Math.ceil((breaker.openUntilMs - ended.getTime()) / 1000),
      });
    }
  }
  const windowStartedAt = posted
    ? delivery.windowStartedAt
      ? new Date(delivery.windowStartedAt)
      : started
    : new Date(windowStart);
  const decision = decideAfterAttempt({
    result,
    attempts: delivery.attempts + 1,
    windowStartedAt,
    now: ended,
    retryHours: deps.retryHours,
    random: deps.random,
    retryBaseMs: deps.retryBaseMs,
  });
  const attempt: DeliveryAttempt = {
    at: started.toISOString(),
    statusCode: result.kind === 'response' ? result.statusCode : null,
    error: posted ? attemptError(result) : DEFERRED_ERROR,
    durationMs: posted ? durationMs : 0,
  };
  if (result.kind === 'refused') count?.(WEBHOOK_METRIC.refused);
  const written = await deps.store.recordAttempt({
    endpointId: delivery.endpointId,
    deliveryId: delivery.id,
    rev: copy.rev,
    seq: copy.seq,
    attempt,
    windowStartedAt: windowStartedAt.toISOString(),
    next:
      decision.kind === 'retry'
        ? { kind: 'retry', at: decision.at.toISOString() }
        : { kind: decision.kind, at: ended.toISOString() },
  });
  if (written === 'conflict') return 'stale';
  const logged = {
    deliveryId: delivery.id,
    eventType: delivery.eventType,
    attempts: delivery.attempts + 1,
    statusCode: attempt.statusCode,
    error: attempt.error,
  };
  if (decision.kind === 'delivered') {
    count?.(WEBHOOK_METRIC.delivered);
    return 'delivered';
  }
  if (decision.kind === 'failed') {
    count?.(WEBHOOK_METRIC.failed);
    deps.log?.warn('webhook delivery failed: its retry window is spent', logged);
    return 'failed';
  }
  count?.(WEBHOOK_METRIC.retried);
  deps.log?.info('webhook attempt failed; retrying', { ...logged, nextAttemptAt: decision.at.toISOString() });
  await sendOrThrow(deps.queue, { ...copy, seq: copy.seq + 1 }, decision.at.getTime() - ended.getTime());
  return 'retry';
}

/** The history's error of a deferred copy. */
const DEFERRED_ERROR = 'deferred: the endpoint stalled lately';

/** The signed POST of one attempt. */
function post(
  endpoint: WebhookEndpoint,
  delivery: { readonly eventId: string; readonly payload: string },
  at: Date,
  deps: DeliveryDeps,
): Promise<AttemptResult> {
  return deps.http.post({
    url: endpoint.url,
    headers: signedHeaders(signingSecrets(endpoint, at), delivery.eventId, at, delivery.payload),
    body: delivery.payload,
    timeoutMs: deps.timeoutMs ?? WEBHOOK_TIMEOUT_MS,
  });
}

/** The Standard Webhooks headers, signed with the reference implementation, one signature per secret. */
export function signedHeaders(
  secrets: readonly string[],
  eventId: string,
  at: Date,
  payload: string,
): Record<string, string> {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(eventId, at, payload)).join(' '),
  };
}

function attemptError(result: AttemptResult): string | null {
  switch (result.kind) {
    case 'response':
      return null;
    case 'timeout':
      return 'timeout';
    case 'refused':
      return `refused: ${result.reason}`;
    case 'network':
      return `network: ${result.reason}`;
  }
}

async function sendOrThrow(queue: WebhookQueue, copy: WebhookCopy, waitMs: number): Promise<void> {
  const delaySeconds = Math.min(SQS_MAX_DELAY_SECONDS, Math.max(0, Math.ceil(waitMs / 1000)));
  const { failed, error } = await queue.send([{ copy, delaySeconds }]);
  if (failed.length > 0) throw error ?? new Error('the webhook queue refused a copy');
}
