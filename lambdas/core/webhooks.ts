/**
 * Webhooks (DESIGN §11), the pure part: the ids of endpoints and deliveries, the copy that travels
 * on the webhook queue, and the decision after an attempt (delivered, retry at a time drawn with
 * backoff and full jitter, or `failed` once the retry window is spent). No clock and no random
 * source of its own: both are arguments. The body of `POST /v1/webhooks` is requestSchemas.ts's.
 */
import { createHash } from 'node:crypto';
import { encodeTime } from 'ulid';
import { backoffCeilingSeconds } from './backoff.js';
import type { EventType } from './messageEvents.js';

/** An attempt that has no 2xx answer within this is a failed attempt (DESIGN §11). */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/** The endpoint's signing secret: `whsec_` + base64 of 32 random bytes (Standard Webhooks). */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
export const WEBHOOK_SECRET_BYTES = 32;

/** After a rotation the secret it retires keeps signing beside the new one this long (DESIGN §3). */
export const WEBHOOK_SECRET_OVERLAP_MS = 24 * 3_600_000;

/**
 * Retired secrets that sign at once, at most: each rotation retires one for a day, so only a sixth
 * rotation within a day retires the oldest before its day is over (decision 0183). Bounds the
 * `webhook-signature` header (about 48 characters a signature) and the HMACs an attempt computes.
 */
export const WEBHOOK_RETIRED_SECRETS_MAX = 5;

/** A secret a rotation retired: it signs beside the current one until `until` (ISO). */
export interface RetiredSecret {
  readonly secret: string;
  readonly until: string;
}

const signsAt = (retired: RetiredSecret, now: Date): boolean => now.getTime() < Date.parse(retired.until);

/**
 * The secrets a delivery is signed with at `now`: the current one, and each retired one whose day
 * is not over (Standard Webhooks: several space-separated signatures, a receiver holding any of
 * them verifies).
 */
export function signingSecrets(
  endpoint: { readonly secret: string; readonly retiredSecrets: readonly RetiredSecret[] },
  now: Date,
): string[] {
  return [
    endpoint.secret,
    ...endpoint.retiredSecrets.filter((retired) => signsAt(retired, now)).map((retired) => retired.secret),
  ];
}

/**
 * The retired secrets after a rotation at `now`, newest first: the current secret for
 * WEBHOOK_SECRET_OVERLAP_MS, then those retired before whose day is not over, each keeping its own
 * end (DESIGN §3: the old one keeps signing for 24 h, however soon another rotation follows), at most
 * WEBHOOK_RETIRED_SECRETS_MAX.
 */
export function retireOnRotation(
  endpoint: { readonly secret: string; readonly retiredSecrets: readonly RetiredSecret[] },
  now: Date,
): RetiredSecret[] {
  const until = new Date(now.getTime() + WEBHOOK_SECRET_OVERLAP_MS).toISOString();
  return [
    { secret: endpoint.secret, until },
    ...endpoint.retiredSecrets.filter((retired) => signsAt(retired, now)),
  ].slice(0, WEBHOOK_RETIRED_SECRETS_MAX);
}

export const WEBHOOK_LIMITS = {
  maxUrlLength: 2048,
  maxDescriptionLength: 256,
  /** Endpoints per tenant: fan-out reads them all for every event. */
  maxEndpointsPerTenant: 20,
  /** Attempts kept on a delivery (newest last); the count goes on. */
  maxHistory: 20,
  listDefault: 20,
  listMax: 100,
} as const;

export const WEBHOOK_DELIVERY_STATUS = {
  pending: 'pending',
  delivered: 'delivered',
  failed: 'failed',
} as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUS)[keyof typeof WEBHOOK_DELIVERY_STATUS];
export const WEBHOOK_DELIVERY_STATUSES: readonly WebhookDeliveryStatus[] =
  Object.values(WEBHOOK_DELIVERY_STATUS);

export function isWebhookDeliveryStatus(value: unknown): value is WebhookDeliveryStatus {
  return typeof value === 'string' && (WEBHOOK_DELIVERY_STATUSES as readonly string[]).includes(value);
}

/** The retry schedule: full jitter over `min(cap, base · 2^n)`. */
export const WEBHOOK_BACKOFF = { baseMs: 5_000, capMs: 3_600_000 } as const;

/**
 * How early a copy may make its attempt: one due within this much is POSTed now, not put back for
 * the rest (lambdas/webhooks/deliverCopy.ts). So a window with less than this left is spent: its
 * last try, due at the end, may already have been this one (decideAfterAttempt).
 */
export const WEBHOOK_DUE_SLACK_MS = 1_000;

const ENDPOINT_ID = /^whe_[0-9A-HJKMNP-TV-Z]{26}$/;
const DELIVERY_ID = /^dlv_[0-9A-HJKMNP-TV-Z]{10}[0-9a-f]{20}$/;

export const isWebhookEndpointId = (value: string): boolean => ENDPOINT_ID.test(value);
export const isWebhookDeliveryId = (value: string): boolean => DELIVERY_ID.test(value);

/** `whe_` + a ULID (given by the caller, which owns the clock and the random source). */
export const webhookEndpointId = (ulid: string): string => `whe_${ulid}`;

/**
 * A delivery's id: `dlv_` + the event's time (10 ULID characters, so ids sort by time and a listing
 * is newest first) + 20 hex characters of SHA-256(endpoint, event id). The same event to the same
 * endpoint always has the same delivery, so a replayed stream batch creates nothing new.
 */
export function webhookDeliveryId(endpointId: string, eventId: string, eventTimeMs: number): string {
  const digest = createHash('sha256').update(`${endpointId}\0${eventId}`, 'utf8').digest('hex');
  const time = Math.min(Math.max(0, Math.floor(eventTimeMs)), 2 ** 48 - 1);
  return `dlv_${encodeTime(time, 10)}${digest.slice(0, 20)}`;
}

/** Whether an endpoint that subscribed to `events` receives an event of `type`. */
export function isSubscribed(events: readonly string[] | null, type: EventType): boolean {
  return events === null || events.includes(type);
}

/**
 * What the webhook queue carries: which delivery, its revision (bumped by a manual retry) and the
 * attempt count the copy is for. A copy whose `rev` or `seq` is not the record's is stale and is
 * dropped, so a duplicate copy never starts a second retry chain.
 */
export interface WebhookCopy {
  readonly v: 1;
  readonly endpoint: string;
  readonly delivery: string;
  readonly rev: number;
  readonly seq: number;
  /**
   * Set only on a copy queued BEFORE the write it is for (the test event, a manual retry): when it
   * was queued (epoch ms). Such a copy may arrive before its write lands; it waits for it a bounded
   * time (decideCopyAhead).
   */
  readonly issued_at?: number;
  /**
   * Set only on a manual retry's copy: that retry's own id (WEBHOOK_RETRY_ID), which its write
   * stores on the delivery. Two retries that read the delivery alike queue a copy of the same
   * revision each, and only one write lands: the other's copy is stale (isCopyOfItsRetry).
   */
  readonly retry?: string;
}

/** A manual retry's id: 32 hex digits (16 random bytes). */
export const WEBHOOK_RETRY_ID = /^[0-9a-f]{32}$/;

/**
 * Whether a copy of the delivery's current revision is the one its last manual retry queued: a
 * delivery no retry wrote an id on takes any copy (its chain's); one a retry wrote takes only the
 * copies that carry that retry's id. So of two retries at once, whose copies have the same revision
 * and attempt count, only the one whose write landed reaches the endpoint.
 */
export function isCopyOfItsRetry(copy: Pick<WebhookCopy, 'retry'>, retryId: string | null): boolean {
  return retryId === null || copy.retry === retryId;
}

/**
 * How long a copy queued before its write waits for that write. The routes that queue first run in
 * the api function (10 s timeout, lib/constructs/Api.ts); a write that has not landed a minute after
 * its copy was queued never will (its function is gone).
 */
export const WEBHOOK_COPY_AHEAD_WAIT_MS = 60_000;

export type CopyAheadDecision =
  | { readonly kind: 'wait'; readonly delaySeconds: number }
  | { readonly kind: 'stale' };

/**
 * A copy for a record that is not there yet, or for a revision the record does not have yet. A
 * copy queued before its write (`issued_at`) comes back shortly while the write may still land, and
 * is stale after WEBHOOK_COPY_AHEAD_WAIT_MS (its write failed: the route answered an error, nothing
 * changed). Any other copy is only ever queued after its write, so a record behind it moved on
 * (removed, expired): stale.
 */
export function decideCopyAhead(copy: WebhookCopy, now: Date): CopyAheadDecision {
  if (copy.issued_at === undefined) return { kind: 'stale' };
  const age = now.getTime() - copy.issued_at;
  if (age >= WEBHOOK_COPY_AHEAD_WAIT_MS) return { kind: 'stale' };
  return { kind: 'wait', delaySeconds: age < 5_000 ? 1 : 5 };
}

export function encodeWebhookCopy(copy: WebhookCopy): string {
  return JSON.stringify(copy);
}

const COPY_FIELDS: ReadonlySet<string> = new Set([
  'v',
  'endpoint',
  'delivery',
  'rev',
  'seq',
  'issued_at',
  'retry',
]);

/** A safe integer of at least `min`: what a count or an epoch time in a copy must be. */
const isWholeFrom = (value: unknown, min: number): value is number =>
  Number.isSafeInteger(value) && (value as number) >= min;

/**
 * A copy read off the queue, or null when it is not one: JSON, an object of exactly the copy's
 * fields (no other key), version 1, ids of their own forms, `rev` ≥ 1, `seq` ≥ 0 and `issued_at`
 * (absent, or ≥ 0) safe integers, `retry` absent or a retry's id. Decoded by hand, not by a schema library: the webhooks function
 * reads nothing else, and its cold start loads no more than it runs (decision 0131).
 */
export function decodeWebhookCopy(body: string): WebhookCopy | null {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const fields = value as Readonly<Record<string, unknown>>;
  if (Object.keys(fields).some((key) => !COPY_FIELDS.has(key))) return null;
  const { v, endpoint, delivery, rev, seq, issued_at, retry } = fields;
  if (v !== 1 || typeof endpoint !== 'string' || !ENDPOINT_ID.test(endpoint)) return null;
  if (typeof delivery !== 'string' || !DELIVERY_ID.test(delivery)) return null;
  if (!isWholeFrom(rev, 1) || !isWholeFrom(seq, 0)) return null;
  if (issued_at !== undefined && !isWholeFrom(issued_at, 0)) return null;
  if (retry !== undefined && (typeof retry !== 'string' || !WEBHOOK_RETRY_ID.test(retry))) return null;
  return {
    v,
    endpoint,
    delivery,
    rev,
    seq,
    ...(issued_at === undefined ? {} : { issued_at }),
    ...(retry === undefined ? {} : { retry }),
  };
}

/** How one attempt ended, as the HTTP adapter reports it. */
export type AttemptResult =
  | {
      readonly kind: 'response';
      readonly statusCode: number;
      /** The answer's `Retry-After` header as it came, if any (retryAfterMs reads it). */
      readonly retryAfter?: string;
    }
  | { readonly kind: 'timeout' }
  /** The URL's address is one the policy refuses (loopback, private, metadata…), or its scheme. */
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'network'; readonly reason: string };

export const isDelivered = (result: AttemptResult): boolean =>
  result.kind === 'response' && result.statusCode >= 200 && result.statusCode < 300;

/**
 * The delay before retry `n` (n = attempts made so far, from 1): uniform in [0, min(cap, base · 2^(n−1))].
 * `baseMs` is WEBHOOK_BACKOFF's in every wiring; a test of real queues passes a shorter one (decision 0273).
 */
export function webhookRetryDelayMs(
  attempts: number,
  random: () => number,
  baseMs: number = WEBHOOK_BACKOFF.baseMs,
): number {
  const n = Number.isFinite(attempts) ? Math.max(1, Math.floor(attempts)) : 1;
  const ceiling = Math.min(WEBHOOK_BACKOFF.capMs, baseMs * 2 ** Math.min(n - 1, 40));
  const draw = random();
  const unit = Number.isFinite(draw) ? Math.min(Math.max(draw, 0), 1) : 0;
  return Math.floor(unit * ceiling);
}

/**
 * When a copy the delivery function keeps after a failure of its own (a read, a write or the queue
 * failed; never the endpoint's answer, which has the schedule above) becomes visible again: 5 s
 * doubling with each receive up to the queue's visibility timeout (six times the function's, 360 s),
 * the upper half drawn at random so copies kept together do not come back together. A passing
 * throttle then costs seconds instead of the six minutes SQS would wait, and an outage still takes
 * `WEBHOOK_QUEUE.maxReceiveCount` receives (about an hour) before the DLQ (lib/webhookLayout.ts).
 */
export const KEPT_COPY_BACKOFF = { baseSeconds: 5, capSeconds: 360 } as const;

export function keptCopyVisibilitySeconds(receiveCount: number, random: () => number): number {
  const n = Number.isFinite(receiveCount) ? Math.max(1, Math.floor(receiveCount)) : 1;
  const ceiling = backoffCeilingSeconds(n - 1, KEPT_COPY_BACKOFF);
  const draw = random();
  const unit = Number.isFinite(draw) ? Math.min(Math.max(draw, 0), 1) : 0;
  return Math.ceil(ceiling / 2 + (unit * ceiling) / 2);
}

/** HTTP-date's IMF-fixdate and obsolete RFC 850 form (both in GMT), and asctime's (RFC 9110 §5.6.7). */
const HTTP_DATE_GMT = /^[A-Za-z]{3,9}, \d{2}[ -][A-Za-z]{3}[ -]\d{2,4} \d{2}:\d{2}:\d{2} GMT$/;
const HTTP_DATE_ASCTIME = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

/**
 * How long an answer's `Retry-After` asks to wait from `now` (RFC 9110 §10.2.3: whole seconds, or an
 * HTTP-date in any of its three forms), at most the backoff's cap (WEBHOOK_BACKOFF.capMs), so a
 * receiver can ask for a pause but never park a delivery longer than the backoff itself would; a date
 * already past is no wait. Undefined for no header or one that is neither form.
 */
export function retryAfterMs(header: string | undefined, now: Date): number | undefined {
  const value = header?.trim() ?? '';
  let waitMs: number;
  if (/^\d+$/.test(value)) waitMs = Number(value) * 1000;
  else if (HTTP_DATE_GMT.test(value)) waitMs = Date.parse(value) - now.getTime();
  else if (HTTP_DATE_ASCTIME.test(value)) waitMs = Date.parse(`${value} GMT`) - now.getTime();
  else return undefined;
  if (Number.isNaN(waitMs)) return undefined;
  return Math.min(Math.max(0, waitMs), WEBHOOK_BACKOFF.capMs);
}

export type AttemptDecision =
  | { readonly kind: 'delivered' }
  | { readonly kind: 'retry'; readonly at: Date }
  | { readonly kind: 'failed' };

/**
 * After an attempt: a 2xx is delivered; anything else is retried at now + a jittered delay, for up
 * to the retry window (`retryHours` from the window's start: the first attempt, or a manual retry,
 * DESIGN §11). A wait that would end past the window ends at its end, one last try, and the delivery
 * is `failed` only once its window is spent ({@link WEBHOOK_DUE_SLACK_MS}; decision 0325, as a
 * message's retry meets its `not_after`, 0317). An answer's `Retry-After` (a 503's, a 429's) is a
 * floor on that wait, as Standard Webhooks asks senders to take it into account (decision 0243),
 * within the window alike.
 */
export function decideAfterAttempt(input: {
  readonly result: AttemptResult;
  /** Attempts made, this one included. */
  readonly attempts: number;
  readonly windowStartedAt: Date;
  readonly now: Date;
  readonly retryHours: number;
  readonly random: () => number;
  /** @default WEBHOOK_BACKOFF.baseMs */
  readonly retryBaseMs?: number | undefined;
}): AttemptDecision {
  if (isDelivered(input.result)) return { kind: 'delivered' };
  const now = input.now.getTime();
  const backoff = now + webhookRetryDelayMs(input.attempts, input.random, input.retryBaseMs);
  const windowEnd = input.windowStartedAt.getTime() + input.retryHours * 3_600_000;
  if (windowEnd - now < WEBHOOK_DUE_SLACK_MS) return { kind: 'failed' };
  const asked =
    input.result.kind === 'response' ? retryAfterMs(input.result.retryAfter, input.now) : undefined;
  return { kind: 'retry', at: new Date(Math.min(Math.max(backoff, now + (asked ?? 0)), windowEnd)) };
}
