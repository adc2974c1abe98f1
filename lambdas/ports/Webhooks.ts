/**
 * The ports of events and webhooks (DESIGN §11), in our words: the endpoints and deliveries kept in
 * the table, the queue of delivery copies, the HTTP attempt, and the account's event bus.
 */
import type { EventType, PostdateEvent } from '../core/messageEvents.js';
import type { AttemptResult, RetiredSecret, WebhookCopy, WebhookDeliveryStatus } from '../core/webhooks.js';

/** A tenant's subscribed endpoint. `secret` is read only by the delivery function. */
export interface WebhookEndpoint {
  readonly id: string;
  readonly tenant: string;
  readonly url: string;
  /** `null`: every event type. */
  readonly events: readonly EventType[] | null;
  readonly description: string | null;
  readonly secret: string;
  /** Secrets retired by rotations, newest first, each signing beside `secret` until its `until`. */
  readonly retiredSecrets: readonly RetiredSecret[];
  readonly createdAt: string;
}

/** One attempt of a delivery, as listed. Never the response body (it is the receiver's, not ours). */
export interface DeliveryAttempt {
  readonly at: string;
  readonly statusCode: number | null;
  /**
   * `null` for an answer; else `timeout`, `refused: …` or `network: …`; or `deferred: …` for the last
   * entry of a delivery whose window ended while its endpoint was deferred (no POST, decision 0132).
   */
  readonly error: string | null;
  readonly durationMs: number;
}

/** One event on its way to one endpoint. */
export interface WebhookDelivery {
  readonly id: string;
  readonly endpointId: string;
  readonly tenant: string;
  readonly eventId: string;
  readonly eventType: EventType;
  /** The event's JSON, exactly the bytes that are signed and sent. */
  readonly payload: string;
  readonly status: WebhookDeliveryStatus;
  /** Bumped by a manual retry; a copy of another rev is stale. */
  readonly rev: number;
  /** The id of the manual retry that wrote the current rev (its copies carry it); absent before any. */
  readonly retryId?: string | null;
  /** Attempts made so far (all windows). */
  readonly attempts: number;
  readonly history: readonly DeliveryAttempt[];
  /** When the current retry window began (the first attempt, or a manual retry); null before any. */
  readonly windowStartedAt: string | null;
  /** When the next attempt is due (pending only). */
  readonly nextAttemptAt: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly deliveredAt: string | null;
  /** TTL, epoch seconds. */
  readonly expiresAt: number;
}

/**
 * An endpoint's delivery counts, each a bounded read: `failed` every failed delivery kept (up to
 * WEBHOOK_FAILED_COUNT_CAP); `pending` and `delivered` among the `recent` newest deliveries, the
 * newest of each shard.
 */
export interface DeliveryCounts {
  readonly pending: number;
  readonly delivered: number;
  readonly failed: number;
  readonly recent: number;
}

export interface DeliveryPage {
  readonly items: readonly WebhookDelivery[];
  /** Opaque: the next page's start, or null. */
  readonly nextCursor: string | null;
}

/** The outcome of an attempt, to be written only if the copy is still current (`rev`, `seq`). */
export interface AttemptWrite {
  readonly endpointId: string;
  readonly deliveryId: string;
  readonly rev: number;
  /** The attempt count the copy was for; the write sets it + 1. */
  readonly seq: number;
  readonly attempt: DeliveryAttempt;
  readonly windowStartedAt: string;
  readonly next:
    | { readonly kind: 'delivered'; readonly at: string }
    | { readonly kind: 'retry'; readonly at: string }
    | { readonly kind: 'failed'; readonly at: string };
}

export interface WebhookStore {
  /** `limit`: refused when the tenant has that many endpoints already. */
  createEndpoint(endpoint: WebhookEndpoint, limit: number): Promise<'created' | 'limit'>;
  listEndpoints(tenant: string): Promise<readonly WebhookEndpoint[]>;
  getEndpoint(tenant: string, id: string): Promise<WebhookEndpoint | null>;
  deleteEndpoint(tenant: string, id: string): Promise<'deleted' | 'not-found'>;
  /**
   * A new `secret` at `now`; the current one joins `retiredSecrets` (retireOnRotation), in one write
   * conditional on the secret it retires.
   */
  rotateSecret(rotation: {
    readonly tenant: string;
    readonly id: string;
    readonly secret: string;
    readonly now: Date;
  }): Promise<WebhookEndpoint | 'not-found'>;
  countDeliveries(endpointId: string): Promise<DeliveryCounts>;
  /** Writes a new delivery; an existing one (a replay) is returned as it is. */
  putDelivery(
    delivery: WebhookDelivery,
  ): Promise<{ readonly kind: 'created' | 'exists'; readonly delivery: WebhookDelivery }>;
  getDelivery(endpointId: string, deliveryId: string): Promise<WebhookDelivery | null>;
  listDeliveries(query: {
    readonly endpointId: string;
    readonly status: WebhookDeliveryStatus | null;
    readonly limit: number;
    readonly cursor: string | null;
  }): Promise<DeliveryPage>;
  /** `conflict`: the record moved on (another copy wrote, a manual retry, a removal). */
  recordAttempt(write: AttemptWrite): Promise<'updated' | 'conflict'>;
  /**
   * A `failed` delivery, or a `pending` one long overdue (mayRetryDelivery), back to `pending`,
   * rev + 1, a new window from `now`; only while its rev and attempts are still `seen`.
   */
  retryDelivery(input: DeliveryRetry): Promise<DeliveryRetryResult>;
}

export interface QueuedWebhookCopy {
  readonly copy: WebhookCopy;
  /** 0–900 whole seconds (SQS's limit: a longer wait is re-delayed when the copy comes back early). */
  readonly delaySeconds: number;
}

export interface WebhookQueue {
  /** Resolves with the copies that could not be sent (never throws for one copy). */
  send(
    copies: readonly QueuedWebhookCopy[],
  ): Promise<{ readonly failed: readonly QueuedWebhookCopy[]; readonly error?: unknown }>;
}

/** One signed POST; the adapter enforces the timeout and the address policy. */
export interface WebhookHttp {
  post(request: {
    readonly url: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly body: string;
    readonly timeoutMs: number;
  }): Promise<AttemptResult>;
}

/** The account's event bus (AWS: EventBridge, `source: postdate`, `detail-type` = the type). */
export interface EventBus {
  /** Resolves with the events that could not be put. */
  publish(
    events: readonly PostdateEvent[],
  ): Promise<{ readonly failed: readonly PostdateEvent[]; readonly error?: unknown }>;
}

/** A manual retry (POST …/deliveries/{id}/retry) of a `failed` or stalled `pending` delivery. */
export interface DeliveryRetry {
  readonly endpointId: string;
  readonly deliveryId: string;
  /** The revision and attempt count the route read (and queued the copy for). */
  readonly seen: { readonly rev: number; readonly attempts: number };
  /** This retry's id, on the copy it queued (isCopyOfItsRetry). */
  readonly retryId: string;
  readonly now: string;
  /** The new TTL: the new window and the retention from now. */
  readonly expiresAt: number;
}

export type DeliveryRetryResult =
  | { readonly kind: 'updated'; readonly delivery: WebhookDelivery }
  | { readonly kind: 'not-found' }
  | { readonly kind: 'conflict'; readonly current: WebhookDelivery };
