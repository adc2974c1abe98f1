/**
 * The sending gate (DESIGN §5, "An outage is not the message's fault"), as pure decisions: the relay
 * circuit breaker that every sender shares — its state is one item in the table, written only with a
 * condition on the version the writer read — and the operator's pause (all, or one `tags.kind`).
 *
 * - **closed**: copies are sent. A failure that is the relay's (the `outage` origin of
 *   lambdas/core/classifySmtpError.ts, decided in sendDecision.ts) opens it: {@link opened}.
 * - **open**: copies are handed back unclaimed (no attempt). The first sender that finds the probe
 *   due wins the conditional write of {@link probeClaimed} and becomes the only prober until
 *   `probe_until`; everyone else waits.
 * - **half-open**: one sender probes. Success closes it ({@link probeSucceeded}); failure opens it
 *   again with the next probe one interval after the claim ({@link probeFailed}). A prober that died
 *   lets the next sender claim once `probe_until` has passed.
 *
 * - **throttled** (any state): the relay said it is throttling us (SES's `454 Throttling failure`).
 *   {@link throttled} halves the fleet's rate factor and holds every sender for a moment; the factor
 *   climbs back by itself, additively, as time passes after the hold without another throttle
 *   ({@link rateFactor}): multiplicative decrease, additive increase, read by every sender with the
 *   gate. A daily quota reply holds the fleet for minutes at the lowest factor (decision 0193).
 *
 * Every transition answers the state to write, or undefined when there is nothing to write (the
 * event does not apply to the state seen). The writer adds one to `version` and writes only if the
 * item still has the version it read: two senders racing on the same state, one of them wins.
 * Nothing here reads a clock or a random source: `now` and new tokens are arguments.
 */

import type { ThrottleKind } from './classifySmtpError.js';

export const BREAKER_STATE = { closed: 'closed', open: 'open', halfOpen: 'half-open' } as const;
export type BreakerStateName = (typeof BREAKER_STATE)[keyof typeof BREAKER_STATE];

/** The breaker as stored. Times are ISO-8601 UTC with milliseconds (they compare as strings). */
export interface BreakerState {
  readonly state: BreakerStateName;
  /** Bumped by every write; 0 for a breaker never written. */
  readonly version: number;
  /** Open and half-open: since when the relay is unavailable. */
  readonly opened_at?: string;
  /** Open and half-open: why (the classification's code and reason, no reply text, no address). */
  readonly reason?: string;
  /** Open and half-open: the earliest time the next probe may start. */
  readonly probe_at?: string;
  /** Half-open: the sender that probes, and until when its claim holds. */
  readonly probe_owner?: string;
  readonly probe_until?: string;
  /**
   * Open and half-open: the id of the one probe token copy that may probe when no copy arrives (a
   * copy on the send queue delayed by the interval). A token whose id is not this one is dropped.
   */
  readonly token?: string;
  /** Closed after an outage: when it closed. */
  readonly closed_at?: string;
  /** Probes that failed during this outage. */
  readonly failed_probes?: number;
  /**
   * The fleet's share of its send rate after the relay last throttled us, in (0, 1], as written
   * then; {@link rateFactor} adds what time has given back since. Absent: 1.
   */
  readonly rate_factor?: number;
  /** When the relay last throttled a sender. */
  readonly throttled_at?: string;
  /**
   * No sender starts a send before this (a moment after a throttle, longer the lower the factor;
   * THROTTLE.quotaHoldMs after a daily quota reply).
   */
  readonly throttled_until?: string;
  /**
   * The end of the hold a daily quota reply started: until then the relay's quota is spent, and
   * with several relays its copies leave through the next (core/relays.ts `failoverDecision`).
   */
  readonly quota_until?: string;
}

export const NEVER_OPENED: BreakerState = { state: BREAKER_STATE.closed, version: 0 };

/**
 * The probe token's copy on the send queue: a dispatch payload `{v: 1, id: PROBE_TOKEN_ID, rev:
 * token}`. No message has this id (ids are ULIDs or 26 lower-case base-32 characters, never `_`).
 */
export const PROBE_TOKEN_ID = '_relay-probe';

export interface BreakerSettings {
  /** POSTDATE_RELAY_PROBE_SECONDS in milliseconds: at most one probe per interval, fleet-wide. */
  readonly probeIntervalMs: number;
  /** How long a probe may take before another sender may claim the probe (the prober died). */
  readonly probeTimeoutMs: number;
  /**
   * After a throttle every sender holds this long divided by the new rate factor (2 s at ½, 64 s at
   * the floor: a daily quota is not met again in a second). @default THROTTLE.holdMs
   */
  readonly throttleHoldMs?: number;
  /** After a daily quota reply every sender holds this long. @default THROTTLE.quotaHoldMs */
  readonly quotaHoldMs?: number;
}

/**
 * The fleet's slow-down (docs/decisions/0049-throttle.md): each throttle halves the rate factor (never
 * below `minFactor`); throttles within `debounceMs` of the last one are the same wave and halve it
 * once; the factor climbs back by `recoveryPerSecond` per second once the hold is over. A daily quota
 * (decision 0193) does not come back in seconds — SES counts it over a rolling 24 hours, so it comes
 * back only as the day's sends age out: the fleet holds `quotaHoldMs` at the lowest factor, so the
 * relay meets one small wave of sends every five minutes while the quota lasts, and sending resumes
 * within minutes of it coming back.
 */
export const THROTTLE = {
  minFactor: 1 / 64,
  recoveryPerSecond: 0.05,
  debounceMs: 1000,
  holdMs: 1000,
  quotaHoldMs: 300_000,
} as const;

/**
 * The breaker's timing from the configuration: one probe per POSTDATE_RELAY_PROBE_SECONDS; a probe
 * (connect, greeting, EHLO, STARTTLS, login: a few SMTP steps) holds its claim for three SMTP timeouts.
 */
export function relayBreakerSettings(config: {
  readonly relayProbeSeconds: number;
  readonly smtpTimeoutSeconds: number;
}): BreakerSettings {
  return {
    probeIntervalMs: config.relayProbeSeconds * 1000,
    probeTimeoutMs: 3 * config.smtpTimeoutSeconds * 1000,
  };
}

/** A pause an operator set: why and since when. */
export interface PauseEntry {
  readonly reason: string;
  readonly at: string;
}

/**
 * The operator's pauses: everything (`all`, with the kinds resumed one by one since: `except`), and
 * single kinds. A copy waits when its kind is paused, or everything is and its kind is not excepted.
 */
export interface PauseState {
  readonly version: number;
  readonly all?: PauseEntry & { readonly except: readonly string[] };
  readonly kinds: Readonly<Record<string, PauseEntry>>;
}

export const NOT_PAUSED: PauseState = { version: 0, kinds: {} };

export interface SendingGateState {
  readonly breaker: BreakerState;
  readonly pause: PauseState;
  /**
   * The operator disabled this relay (DESIGN §15, `postdate relays disable NAME`): why and since
   * when. Stored beside the relay's breaker and read with it; absent, the relay is enabled.
   */
  readonly disabled?: PauseEntry | undefined;
}

export type GateDecision =
  /** Send, at `rateFactor` of the send rate (the fleet's slow-down after a throttle, {@link rateFactor}). */
  | { readonly kind: 'send'; readonly rateFactor: number }
  /** Open and the probe is due: try to claim it ({@link probeClaimed}); the winner probes. */
  | { readonly kind: 'probe' }
  /** Hand the copy back unclaimed, visible again after `seconds`; no attempt. */
  | { readonly kind: 'wait'; readonly seconds: number; readonly cause: GateWaitCause };

/**
 * Why a copy may not go to this relay now. `relay-unavailable` (breaker open), `relay-disabled`
 * (the operator's drain) and `quota-held` (its daily quota is spent, decision 0198) pass the copy to
 * the next relay (core/relays.ts `failoverDecision`); `paused` and `throttled` hold it.
 */
export type GateWaitCause = 'relay-unavailable' | 'relay-disabled' | 'quota-held' | 'paused' | 'throttled';

/**
 * May a copy of a message of this kind be sent now? The pause first (it needs no probe), then
 * whether the operator disabled the relay (a disabled relay is never sent to nor probed), then the
 * breaker. A copy that waits comes back when the next probe may have closed the breaker, spread over
 * one interval (`spread` in [0, 1)) so that the backlog does not return in one wave.
 */
export function gateDecision(
  gate: SendingGateState,
  kind: string | undefined,
  now: Date,
  settings: BreakerSettings,
  spread = 0,
): GateDecision {
  const intervalSeconds = Math.max(1, Math.ceil(settings.probeIntervalMs / 1000));
  const jitter = Math.floor(unit(spread) * intervalSeconds);
  if (isPaused(gate.pause, kind)) {
    return { kind: 'wait', seconds: intervalSeconds + jitter, cause: 'paused' };
  }
  if (gate.disabled !== undefined) {
    return { kind: 'wait', seconds: intervalSeconds + jitter, cause: 'relay-disabled' };
  }
  const { breaker } = gate;
  if (breaker.state === BREAKER_STATE.closed) {
    const heldUntil =
      breaker.throttled_until === undefined ? Number.NaN : Date.parse(breaker.throttled_until);
    if (heldUntil > now.getTime()) {
      const seconds = Math.max(1, Math.ceil((heldUntil - now.getTime()) / 1000));
      const cause = quotaHeldUntil(breaker, now) === undefined ? 'throttled' : 'quota-held';
      return { kind: 'wait', seconds: seconds + Math.floor(unit(spread) * seconds), cause };
    }
    return { kind: 'send', rateFactor: rateFactor(breaker, now) };
  }
  if (mayClaimProbe(breaker, now)) return { kind: 'probe' };
  const untilProbe = Math.max(1, Math.ceil((nextProbeTime(breaker, now) - now.getTime()) / 1000));
  return {
    kind: 'wait',
    seconds: Math.min(untilProbe, intervalSeconds) + jitter,
    cause: 'relay-unavailable',
  };
}

/**
 * When a held copy should look again. Open: when the probe is due. Half-open (a probe in flight):
 * when the next probe may start if this one fails (`probe_at`), or, once that has passed, when a
 * prober that died may be replaced (`probe_until`) — never the claim's end while the probe is young:
 * the claim (three SMTP timeouts) outlasts the interval, and a probe ends in well under a second.
 */
function nextProbeTime(breaker: BreakerState, now: Date): number {
  const probeAt = timeOf(breaker.probe_at, now);
  if (breaker.state !== BREAKER_STATE.halfOpen || probeAt > now.getTime()) return probeAt;
  return timeOf(breaker.probe_until, now);
}

/**
 * The fleet's share of its send rate now: the factor written at the last throttle plus what the
 * time since its hold ended has given back (THROTTLE.recoveryPerSecond a second), at most 1. A hold
 * sends nothing, so it gives nothing back: after a long one the fleet starts again slowly.
 */
export function rateFactor(breaker: BreakerState, now: Date): number {
  const written = breaker.rate_factor;
  if (written === undefined || !Number.isFinite(written)) return 1;
  const times = [timeOrNaN(breaker.throttled_at), timeOrNaN(breaker.throttled_until)].filter(Number.isFinite);
  const seconds =
    times.length === 0 ? Number.POSITIVE_INFINITY : Math.max(0, (now.getTime() - Math.max(...times)) / 1000);
  return Math.min(1, Math.max(THROTTLE.minFactor, written) + THROTTLE.recoveryPerSecond * seconds);
}

/**
 * The relay throttled a sender. Its rate (`kind` `rate`): the rate factor halves (never below the
 * floor) and every sender holds for `throttleHoldMs / factor`; undefined (nothing to write) when the
 * last throttle was within the debounce: one wave of replies to sends already under way slows the
 * fleet once. Its daily quota: the factor drops to the floor and every sender holds `quotaHoldMs`;
 * undefined when a hold that long is already on. No throttle shortens a hold already on.
 */
export function throttled(
  breaker: BreakerState,
  now: Date,
  settings: BreakerSettings,
  kind: ThrottleKind = 'rate',
): BreakerState | undefined {
  const nowMs = now.getTime();
  const heldUntil = timeOrNaN(breaker.throttled_until);
  let factor: number;
  let holdMs: number;
  if (kind === 'quota') {
    holdMs = settings.quotaHoldMs ?? THROTTLE.quotaHoldMs;
    if (heldUntil >= nowMs + holdMs - THROTTLE.debounceMs) return undefined;
    factor = THROTTLE.minFactor;
  } else {
    const last = timeOrNaN(breaker.throttled_at);
    if (nowMs - last < THROTTLE.debounceMs) return undefined;
    factor = Math.max(THROTTLE.minFactor, rateFactor(breaker, now) / 2);
    holdMs = (settings.throttleHoldMs ?? THROTTLE.holdMs) / factor;
  }
  const until = Number.isFinite(heldUntil) ? Math.max(heldUntil, nowMs + holdMs) : nowMs + holdMs;
  return {
    ...breaker,
    version: breaker.version + 1,
    rate_factor: factor,
    throttled_at: now.toISOString(),
    throttled_until: new Date(until).toISOString(),
    ...(kind === 'quota' ? { quota_until: new Date(until).toISOString() } : {}),
  };
}

/**
 * The end of the hold a daily quota reply put on the relay (decision 0198), while it lasts: until
 * then its copies pass to the next relay (`quota-held`, {@link gateDecision}), though its breaker is
 * closed. Undefined when no quota hold is on. The senders' rule, and what `relays status` shows.
 */
export function quotaHeldUntil(breaker: BreakerState, now: Date): string | undefined {
  if (breaker.state !== BREAKER_STATE.closed) return undefined;
  const nowMs = now.getTime();
  if (!(timeOrNaN(breaker.throttled_until) > nowMs) || !(timeOrNaN(breaker.quota_until) > nowMs))
    return undefined;
  return breaker.throttled_until;
}

/**
 * When the relay's next probe may start, as the operator is shown it (`relays status`, `sending
 * status`): its breaker's `probe_at` while the breaker is not closed and the relay enabled. Undefined
 * while closed, and while disabled: a drained relay is never probed ({@link gateDecision} passes its
 * copies on before any probe), so its breaker keeps the time of a probe that does not come until the
 * relay is enabled.
 */
export function nextProbeAt(gate: Pick<SendingGateState, 'breaker' | 'disabled'>): string | undefined {
  if (gate.disabled !== undefined || gate.breaker.state === BREAKER_STATE.closed) return undefined;
  return gate.breaker.probe_at;
}

/** A stored time in epoch milliseconds; NaN when absent or unreadable (every comparison with it is false). */
function timeOrNaN(iso: string | undefined): number {
  return iso === undefined ? Number.NaN : Date.parse(iso);
}

/** The throttle fields, carried across the breaker's own transitions. */
function throttleOf(breaker: BreakerState): Partial<BreakerState> {
  return {
    ...(breaker.rate_factor === undefined ? {} : { rate_factor: breaker.rate_factor }),
    ...(breaker.throttled_at === undefined ? {} : { throttled_at: breaker.throttled_at }),
    ...(breaker.throttled_until === undefined ? {} : { throttled_until: breaker.throttled_until }),
    ...(breaker.quota_until === undefined ? {} : { quota_until: breaker.quota_until }),
  };
}

/** Whether copies of this kind (undefined: a message without `tags.kind`) must wait for a resume. */
export function isPaused(pause: PauseState, kind: string | undefined): boolean {
  if (kind !== undefined && Object.hasOwn(pause.kinds, kind)) return true;
  if (pause.all === undefined) return false;
  return kind === undefined || !pause.all.except.includes(kind);
}

/**
 * A relay failure was seen: a closed breaker opens, the first probe one interval from now, with a
 * new token. An open or half-open one stays as it is (nothing to write).
 */
export function opened(
  breaker: BreakerState,
  failure: { readonly reason: string },
  now: Date,
  settings: BreakerSettings,
  token: string,
): BreakerState | undefined {
  if (breaker.state !== BREAKER_STATE.closed) return undefined;
  return {
    ...throttleOf(breaker),
    state: BREAKER_STATE.open,
    version: breaker.version + 1,
    opened_at: now.toISOString(),
    reason: failure.reason,
    probe_at: new Date(now.getTime() + settings.probeIntervalMs).toISOString(),
    token,
    failed_probes: 0,
  };
}

/** Open with the probe due, or half-open with a prober that ran out of time. */
export function mayClaimProbe(breaker: BreakerState, now: Date): boolean {
  if (breaker.state === BREAKER_STATE.open) return timeOf(breaker.probe_at, now) <= now.getTime();
  if (breaker.state === BREAKER_STATE.halfOpen) {
    // The prober ran out of time (it died): the next may claim, but never within the interval.
    return timeOf(breaker.probe_until, now) < now.getTime() && timeOf(breaker.probe_at, now) <= now.getTime();
  }
  return false;
}

/**
 * `owner` claims the probe: half-open, its claim held for the probe timeout, and the probe after it
 * no sooner than one interval from now, whatever this one's result — so probes are at least one
 * interval apart however many senders race.
 */
export function probeClaimed(
  breaker: BreakerState,
  owner: string,
  now: Date,
  settings: BreakerSettings,
): BreakerState | undefined {
  if (!mayClaimProbe(breaker, now)) return undefined;
  return {
    ...breaker,
    state: BREAKER_STATE.halfOpen,
    version: breaker.version + 1,
    probe_owner: owner,
    probe_until: new Date(now.getTime() + settings.probeTimeoutMs).toISOString(),
    probe_at: new Date(now.getTime() + settings.probeIntervalMs).toISOString(),
  };
}

/** The relay answered `owner`'s probe: closed; the backlog drains. */
export function probeSucceeded(breaker: BreakerState, owner: string, now: Date): BreakerState | undefined {
  if (breaker.state !== BREAKER_STATE.halfOpen || breaker.probe_owner !== owner) return undefined;
  return {
    ...throttleOf(breaker),
    state: BREAKER_STATE.closed,
    version: breaker.version + 1,
    closed_at: now.toISOString(),
  };
}

/**
 * `owner`'s probe failed: open again, the next probe one interval after this failure (never sooner
 * than the claim put it). The probe connected between its claim and now, so the relay sees our
 * connections at least an interval apart (RFC 5321 §4.5.4.1, counted where the relay counts them);
 * counting from the claim alone let two probes arrive a claim-to-connect delay short of it.
 */
export function probeFailed(
  breaker: BreakerState,
  owner: string,
  failure: { readonly reason: string },
  now: Date,
  settings: BreakerSettings,
): BreakerState | undefined {
  if (breaker.state !== BREAKER_STATE.halfOpen || breaker.probe_owner !== owner) return undefined;
  const { probe_owner: _owner, probe_until: _until, ...rest } = breaker;
  const next = Math.max(timeOf(breaker.probe_at, now), now.getTime() + settings.probeIntervalMs);
  return {
    ...rest,
    state: BREAKER_STATE.open,
    version: breaker.version + 1,
    reason: failure.reason,
    probe_at: new Date(next).toISOString(),
    failed_probes: (breaker.failed_probes ?? 0) + 1,
  };
}

export type TokenDecision =
  /** Not the breaker's token, or the breaker is closed: delete it. */
  | { readonly kind: 'drop'; readonly reason: string }
  /** The probe is due: try to claim it. */
  | { readonly kind: 'probe' }
  /** Too early (a copy probed meanwhile): put a fresh token on the queue for the next probe. */
  | { readonly kind: 'rearm'; readonly delaySeconds: number };

/** A probe token copy arrived. */
export function tokenArrival(breaker: BreakerState, token: string, now: Date): TokenDecision {
  if (breaker.state === BREAKER_STATE.closed) return { kind: 'drop', reason: 'the breaker is closed' };
  if (breaker.token !== token) return { kind: 'drop', reason: 'not the current token' };
  if (mayClaimProbe(breaker, now)) return { kind: 'probe' };
  const next = nextProbeTime(breaker, now);
  return { kind: 'rearm', delaySeconds: Math.max(1, Math.ceil((next - now.getTime()) / 1000)) };
}

/**
 * The breaker with a new token (it replaces the one that arrived, or a lost one). `dueSince`, for a
 * lost one: the probe, long due, counts as due from then, so the new token is not found lost at once.
 */
export function tokenReplaced(
  breaker: BreakerState,
  token: string,
  dueSince?: Date,
): BreakerState | undefined {
  if (breaker.state === BREAKER_STATE.closed) return undefined;
  return {
    ...breaker,
    version: breaker.version + 1,
    token,
    ...(dueSince === undefined ? {} : { probe_at: dueSince.toISOString() }),
  };
}

/**
 * The sweeper's safety net: an open breaker whose probe has been due for two intervals with nobody
 * probing has lost its token (its copy was lost, or the sender holding it died): it gets a new one.
 */
export function tokenLost(breaker: BreakerState, now: Date, settings: BreakerSettings): boolean {
  if (breaker.state === BREAKER_STATE.closed) return false;
  const claimEnd = breaker.probe_until === undefined ? 0 : timeOf(breaker.probe_until, now);
  const due = Math.max(timeOf(breaker.probe_at, now), claimEnd);
  return due + 2 * settings.probeIntervalMs < now.getTime();
}

export type PauseCommand =
  | { readonly action: 'pause'; readonly kind?: string | undefined; readonly reason: string }
  | { readonly action: 'resume'; readonly kind?: string | undefined };

/**
 * Whether an operator's command changes what waits. A resume of what is not paused (a kind never
 * paused, or misspelt) and a pause of what waits already (a paused kind, any kind under a pause of
 * everything that excepts it not, everything twice) change nothing: the CLI writes nothing, so the
 * pause's time and reason stand and a script may run either twice (decision 0260).
 */
export function pauseChanges(pause: PauseState, command: PauseCommand): boolean {
  if (command.kind !== undefined) return isPaused(pause, command.kind) === (command.action === 'resume');
  if (command.action === 'resume') return pause.all !== undefined || Object.keys(pause.kinds).length > 0;
  return pause.all === undefined || pause.all.except.length > 0;
}

/**
 * The pauses after an operator's command:
 * - `pause` (all): everything waits, earlier exceptions forgotten;
 * - `pause --kind K`: K waits;
 * - `resume` (all): nothing waits any more;
 * - `resume --kind K`: K flows again — its own pause lifted, and excepted from a pause of all (the
 *   roll-out: pause all, then resume the kinds one at a time).
 */
export function pauseAfter(pause: PauseState, command: PauseCommand, now: Date): PauseState {
  const at = now.toISOString();
  const version = pause.version + 1;
  if (command.action === 'pause') {
    if (command.kind === undefined) {
      return { version, kinds: pause.kinds, all: { reason: command.reason, at, except: [] } };
    }
    const all =
      pause.all === undefined
        ? undefined
        : { ...pause.all, except: pause.all.except.filter((kind) => kind !== command.kind) };
    return {
      version,
      kinds: { ...pause.kinds, [command.kind]: { reason: command.reason, at } },
      ...(all === undefined ? {} : { all }),
    };
  }
  if (command.kind === undefined) return { version, kinds: {} };
  const { [command.kind]: _lifted, ...kinds } = pause.kinds;
  const resumed = command.kind;
  const all =
    pause.all === undefined
      ? undefined
      : { ...pause.all, except: [...new Set([...pause.all.except, resumed])].sort() };
  return { version, kinds, ...(all === undefined ? {} : { all }) };
}

function timeOf(iso: string | undefined, now: Date): number {
  const parsed = iso === undefined ? Number.NaN : Date.parse(iso);
  return Number.isFinite(parsed) ? parsed : now.getTime();
}

function unit(value: number): number {
  return Number.isFinite(value) && value >= 0 && value < 1 ? value : 0;
}
