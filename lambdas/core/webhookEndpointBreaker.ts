/**
 * A webhook endpoint's breaker, kept by each warm delivery function (DESIGN §11: "one endpoint's
 * failures never delay another's"). An attempt holds its batch, and so one slot of the delivery
 * function, until its slowest copy is done: a copy POSTed to an endpoint that accepts the connection
 * and never answers holds it for the whole 10 s. An endpoint that just did that is expected to do it
 * again, so its other copies are not POSTed for a while: each is put back on the queue until the
 * interval is over, no attempt and no write (a deferral is not a try of the endpoint; the retry
 * schedule and its backoff stay those of the POSTs). One copy, the probe, is POSTed when the interval
 * is over; if it stalls too, the next interval is twice as long, up to the cap. A stalled endpoint
 * then costs a function at most one timeout per interval. A delivery whose window ends while its
 * endpoint still stalls ends `failed` then, with a deferral as its last recorded attempt.
 *
 * - **closed** (no state kept): every copy is POSTed.
 * - **open** (`now < openUntilMs`): every copy is deferred.
 * - **half-open** (the interval is over): the first copy is the probe, the others are deferred
 *   while it is in flight. The probe's end decides: a stall opens the next interval, anything else
 *   (a 2xx, or any answer or failure that came fast) closes the breaker.
 *
 * Only a failure that held the slot opens it (a timeout, or any failure slower than
 * `slowFailureMs`): a refusal, a reset or a fast 5xx costs the slot no more than a 2xx does, and
 * its retries already wait out their backoff. A slow 2xx is a delivery, never a reason to defer.
 * Nothing here reads a clock or a random source: both are arguments.
 */
import { type AttemptResult, isDelivered, WEBHOOK_TIMEOUT_MS } from './webhooks.js';

export const ENDPOINT_BREAKER = {
  /** A failed attempt that took at least this long held its slot: a stall, like a timeout. */
  slowFailureMs: 2_000,
  /** Open for min(cap, base · 2^(stalls − 1)), the upper half drawn at random (functions apart). */
  baseOpenMs: 20_000,
  capOpenMs: 600_000,
  /**
   * A probe in flight longer than this ended without being settled (it cannot: the HTTP adapter
   * settles every attempt within its timeout, but a breaker must never defer for ever on a lost
   * answer): the next copy probes.
   */
  probeGiveUpMs: 2 * WEBHOOK_TIMEOUT_MS,
  /** A deferred copy comes back within this after the endpoint may be POSTed again. */
  deferSpreadMs: 5_000,
} as const;

/** An endpoint's breaker after one or more stalls in a row; a closed breaker is `undefined`. */
export interface EndpointBreaker {
  /** Stalls in a row, from 1. */
  readonly stalls: number;
  /** No copy of the endpoint is POSTed before this (epoch ms). */
  readonly openUntilMs: number;
  /** When the probe in flight started (epoch ms); null when none is. */
  readonly probeStartedMs: number | null;
}

export type CopyAdmission =
  | { readonly verdict: 'post'; readonly breaker: EndpointBreaker | undefined }
  /** Not POSTed and no attempt: the same copy comes back at `retryAtMs`, when a POST may go again. */
  | { readonly verdict: 'defer'; readonly breaker: EndpointBreaker; readonly retryAtMs: number }
  /** Not POSTed, and the delivery's retry window is over: it ends `failed`. */
  | { readonly verdict: 'fail'; readonly breaker: EndpointBreaker };

/**
 * POST this copy now, defer it, or end its delivery: the one rule. `breaker` is the endpoint's
 * state before the copy; the answer carries the state after it (a probe marks itself in flight).
 * A deferred copy comes back once the interval is over (or the probe in flight has had its
 * timeout), spread over `DEFER_SPREAD_MS` so the deferred copies do not all come back together. A
 * delivery is never ended before `windowEndMs` (DESIGN §11: retried for the whole window); a copy
 * deferred past it comes back at its end.
 */
export function admitWebhookCopy(input: {
  readonly breaker: EndpointBreaker | undefined;
  readonly nowMs: number;
  /** When the delivery's retry window ends (its start + POSTDATE_WEBHOOK_RETRY_HOURS). */
  readonly windowEndMs: number;
  readonly random: () => number;
}): CopyAdmission {
  const { breaker, nowMs } = input;
  if (breaker === undefined) return { verdict: 'post', breaker };
  const probing =
    breaker.probeStartedMs !== null && nowMs < breaker.probeStartedMs + ENDPOINT_BREAKER.probeGiveUpMs;
  if (nowMs >= breaker.openUntilMs && !probing)
    return { verdict: 'post', breaker: { ...breaker, probeStartedMs: nowMs } };
  if (nowMs >= input.windowEndMs) return { verdict: 'fail', breaker };
  const free = probing ? (breaker.probeStartedMs ?? nowMs) + WEBHOOK_TIMEOUT_MS : breaker.openUntilMs;
  const draw = input.random();
  const unit = Number.isFinite(draw) ? Math.min(Math.max(draw, 0), 1) : 0;
  const retryAtMs = Math.max(free, nowMs) + Math.floor(unit * ENDPOINT_BREAKER.deferSpreadMs);
  return { verdict: 'defer', breaker, retryAtMs: Math.min(retryAtMs, input.windowEndMs) };
}

/** Whether a finished attempt held its slot as a stall does: it failed, and slowly (a timeout always). */
export function isStall(result: AttemptResult, durationMs: number): boolean {
  if (isDelivered(result)) return false;
  return result.kind === 'timeout' || durationMs >= ENDPOINT_BREAKER.slowFailureMs;
}

/** How long the breaker stays open after `stalls` stalls in a row: upper half of min(cap, base · 2^(n−1)). */
export function openIntervalMs(stalls: number, random: () => number): number {
  const n = Number.isFinite(stalls) ? Math.max(1, Math.floor(stalls)) : 1;
  const ceiling = Math.min(
    ENDPOINT_BREAKER.capOpenMs,
    ENDPOINT_BREAKER.baseOpenMs * 2 ** Math.min(n - 1, 40),
  );
  const draw = random();
  const unit = Number.isFinite(draw) ? Math.min(Math.max(draw, 0), 1) : 0;
  return Math.floor(ceiling / 2 + (unit * ceiling) / 2);
}

/**
 * The endpoint's breaker after a POST to it ended at `nowMs`: a stall opens it (one more in a row),
 * anything else closes it. Any POST's end counts, the probe's or one admitted while closed; but
 * while it is open only the probe's stall is one more in a row: a POST that started before the probe
 * (in flight when the breaker opened) stalls within the same interval and leaves it as it is, or a
 * burst of POSTs would open it for the cap at its first stall.
 */
export function breakerAfterAttempt(
  breaker: EndpointBreaker | undefined,
  attempt: { readonly result: AttemptResult; readonly durationMs: number },
  nowMs: number,
  random: () => number,
): EndpointBreaker | undefined {
  if (!isStall(attempt.result, attempt.durationMs)) return undefined;
  const startedMs = nowMs - Math.max(0, attempt.durationMs);
  if (breaker && (breaker.probeStartedMs === null || startedMs < breaker.probeStartedMs)) return breaker;
  const stalls = (breaker?.stalls ?? 0) + 1;
  return { stalls, openUntilMs: nowMs + openIntervalMs(stalls, random), probeStartedMs: null };
}
