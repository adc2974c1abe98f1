import { randomInt, randomUUID } from 'node:crypto';
import type { SmtpErrorClassification } from '../core/classifySmtpError.js';
import { errorForLog } from '../core/errorForLog.js';
import { SENDER_METRIC } from '../core/metricNames.js';
import {
  type BreakerSettings,
  type BreakerState,
  type GateWaitCause,
  gateDecision,
  opened,
  PROBE_TOKEN_ID,
  probeClaimed,
  probeFailed,
  probeSucceeded,
  type SendingGateState,
  throttled,
  tokenArrival,
  tokenReplaced,
} from '../core/relayBreaker.js';
import type { FleetSignal } from '../core/sendDecision.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { Log } from '../ports/Log.js';
import type { SenderMetrics } from '../ports/SenderMetrics.js';
import type { RelayProbe, SendingGateStore } from '../ports/SendingGate.js';
import { countFailureClass } from './failureMetrics.js';

/**
 * Whether, and how fast, any copy may go to the relay now: the sending gate and the send rate, as
 * one sender container uses them. `RelayGate.admit` answers before each claim, `tokenBucket` then
 * waits for the rate, scaled by the gate's rate factor (processCopy.ts calls both).
 *
 * The sending gate (DESIGN §5, "An outage is not the message's fault"): the decisions are
 * core/relayBreaker.ts's, the state is the table's (store/sendingGate.ts), and this only runs the
 * steps between them — read the gate (a read is reused until it is `cacheMs` old), claim
 * and run the probe, open the breaker after a relay failure and put the probe token on the queue,
 * slow the fleet down after the relay throttled us.
 *
 * The one thing a container keeps for itself is what it saw last: after its own relay failure it
 * treats the breaker as open at once (without waiting for a read), so its other copies do not try the
 * relay while the write is on its way. The table stays the only truth: the next read replaces it.
 */

/** Conditional writes of one transition before it gives up (each loss means a fresh read first). */
const MAX_TRANSITION_WRITES = 4;

/**
 * How long a sender reuses its read of the gate, its relays' gates one read between them: a drain,
 * an enable or a pause reaches every sender within this (runbook §5a, "within about a second").
 */
export const GATE_READ_REUSE_MS = 1000;

export interface RelayGateOptions {
  readonly store: SendingGateStore;
  readonly probe: RelayProbe;
  /** Where the probe token goes (the send queue). */
  readonly queue: DispatchQueue;
  readonly settings: BreakerSettings;
  readonly now: () => Date;
  readonly random: () => number;
  /** A read of the gate is reused this long. @default GATE_READ_REUSE_MS */
  readonly cacheMs?: number;
  readonly log: Log;
  readonly metrics: SenderMetrics;
  /** The relay's name, for its metrics (DESIGN §15: metrics per relay). */
  readonly relay?: string;
}

export type GateAdmission =
  /** Send, at `rateFactor` of the send rate (the fleet's slow-down after the relay throttled us). */
  | { readonly kind: 'send'; readonly rateFactor: number }
  | { readonly kind: 'wait'; readonly seconds: number; readonly cause: GateWaitCause };

/** What the gate logs and keeps of the failure behind a fleet signal (no reply text, no address). */
export type FleetFailure = Pick<SmtpErrorClassification, 'code' | 'class' | 'reason'>;

export type TokenOutcome =
  | { readonly kind: 'done'; readonly reason: string }
  /** The token could not be replaced: keep this copy, visible again after `seconds`. */
  | { readonly kind: 'keep'; readonly seconds: number };

export class RelayGate {
  private cached: { readonly gate: SendingGateState; readonly readAtMs: number } | undefined;
  /** The cached read under way: copies of one batch that find the cache stale together share it. */
  private reading: Promise<SendingGateState> | undefined;
  /** The probe this sender is claiming or running ({@link RelayGate.probeWhenDue}): its lanes share it. */
  private probing: Promise<boolean> | undefined;
  /** The refusals told so far ({@link RelayGate.signal}): the next waits for them. */
  private telling: Promise<void> = Promise.resolve();

  constructor(private readonly options: RelayGateOptions) {}

  /** Before a claim: may a copy of a message of `kind` go to the relay now? Probes when it is due. */
  async admit(kind: string | undefined): Promise<GateAdmission> {
    const { settings, now, random } = this.options;
    const gate = await this.read(false);
    const decision = gateDecision(gate, kind, now(), settings, random());
    if (decision.kind !== 'probe') return decision;
    // A lane of this sender claims or runs it already: this copy goes on as after a lost claim.
    const closed = this.probing === undefined ? await this.probeWhenDue() : false;
    if (closed) return { kind: 'send', rateFactor: 1 };
    const again = gateDecision(await this.read(false), kind, now(), settings, random());
    return again.kind === 'wait'
      ? again
      : { kind: 'wait', seconds: Math.ceil(settings.probeIntervalMs / 1000), cause: 'relay-unavailable' };
  }

  /**
   * After an attempt whose decision (core/sendDecision.ts) has a word for every sender: the relay is
   * unavailable — the breaker opens (the winner of the write puts the probe token on the queue) — or
   * it throttles us — the fleet's rate factor halves and every sender holds a moment, or, its daily
   * quota spent, holds for minutes. The winner of a throttle's write counts it (one per wave).
   */
  async signal(signal: FleetSignal, failure: FleetFailure): Promise<void> {
    // One at a time: the lanes refused together tell it once (DESIGN §4; docs/capacity.md, the gate).
    const told = this.telling.then(() => this.tell(signal, failure));
    this.telling = told.catch(() => {});
    return told;
  }

  /**
   * What a refusal changes, decided first on what this sender last read (at most `cacheMs` old, as
   * every decision of the gate): a breaker it already sees open, a wave of throttles it already sees
   * written, needs no request. Only a write that is due reads afresh, so a wave costs a sender one
   * consistent read of the gate key, not one per copy it had in flight. The throttle's times only
   * grow, so a write the older read finds not due is not due now either.
   */
  private async tell(signal: FleetSignal, failure: FleetFailure): Promise<void> {
    if (signal === 'relay-unavailable') return this.open(failure);
    const { settings, now, log, metrics } = this.options;
    const kind = signal === 'quota-exhausted' ? 'quota' : 'rate';
    if (throttled((await this.read(false)).breaker, now(), settings, kind) === undefined) return;
    const written = await this.transition((await this.read(true)).breaker, (breaker) =>
      throttled(breaker, now(), settings, kind),
    );
    if (written === undefined) return;
    metrics.count(SENDER_METRIC.relayThrottled, 1, this.options.relay);
    log.warn('the relay is throttling us: every sender slows down', {
      code: failure.code,
      limit: kind,
      rateFactor: written.rate_factor,
      heldUntil: written.throttled_until,
    });
  }

  /** How long a copy that failed on the relay waits: one probe interval. */
  waitSeconds(): number {
    return Math.max(1, Math.ceil(this.options.settings.probeIntervalMs / 1000));
  }

  /** Whether `token` is this relay's current probe token (with several relays, which gate it is for). */
  async holdsToken(token: number): Promise<boolean> {
    return (await this.read(true)).breaker.token === String(token);
  }

  /** The probe token's copy arrived (`token` is its rev). */
  async onToken(token: number): Promise<TokenOutcome> {
    const { now } = this.options;
    const gate = await this.read(true);
    // A disabled relay is never probed (DESIGN §15): its token ends; once enabled, the copies that
    // find its probe due probe it, and the sweeper re-arms a token found lost.
    if (gate.disabled !== undefined) return { kind: 'done', reason: 'the relay is disabled' };
    const decision = tokenArrival(gate.breaker, String(token), now());
    if (decision.kind === 'drop') return { kind: 'done', reason: decision.reason };
    let breaker = gate.breaker;
    if (decision.kind === 'probe') {
      if (await this.probe(breaker)) return { kind: 'done', reason: 'probe succeeded; the breaker closed' };
      breaker = (await this.read(true)).breaker;
      if (breaker.state === 'closed') return { kind: 'done', reason: 'the breaker closed' };
    }
    const next = tokenArrival(breaker, breaker.token ?? '', now());
    const delaySeconds = next.kind === 'rearm' ? next.delaySeconds : 1;
    return this.rearm(breaker, String(token), delaySeconds);
  }

  /** Opens a closed breaker (the winner arms the token); an open one is left as it is. */
  private async open(failure: FleetFailure): Promise<void> {
    const { settings, now, log, metrics } = this.options;
    const reason = `${failure.code ?? 'no code'}: ${failure.reason}`;
    const token = this.newToken();
    if (opened((await this.read(false)).breaker, { reason }, now(), settings, token) === undefined) return;
    const current = await this.read(true);
    // Whatever the write does, this container holds its copies from now on.
    const next = opened(current.breaker, { reason }, now(), settings, token);
    this.remember({ ...current, breaker: next ?? current.breaker });
    const written = await this.transition(current.breaker, (breaker) =>
      opened(breaker, { reason }, now(), settings, token),
    );
    if (written === undefined) return;
    metrics.count(SENDER_METRIC.relayUnavailable, 1, this.options.relay);
    log.warn('the relay is unavailable: the breaker opened for every sender', {
      code: failure.code,
      class: failure.class,
      probeAt: written.probe_at,
    });
    await this.enqueueToken(written, Math.ceil(settings.probeIntervalMs / 1000));
  }

  /**
   * A probe this sender's read found due: claimed on a fresh read, by one lane at a time. The whole
   * fleet finds it due at the same moment, every interval of an outage: a claim written on each
   * sender's older read would be a conditional write from each lane, lost by all but one, on the one
   * item (DESIGN §4; docs/capacity.md, the gate). A read tells the others it is taken; only the
   * sender that still finds it due writes.
   */
  private probeWhenDue(): Promise<boolean> {
    this.probing ??= this.read(true)
      .then(({ breaker }) => this.probe(breaker))
      .finally(() => {
        this.probing = undefined;
      });
    return this.probing;
  }

  /** Claims the probe and runs it; answers whether the breaker closed (by this probe). */
  private async probe(observed: BreakerState): Promise<boolean> {
    const { probe, settings, now, log } = this.options;
    const owner = `probe-${randomUUID()}`;
    const claim = await this.transition(observed, (breaker) => probeClaimed(breaker, owner, now(), settings));
    if (claim === undefined) return false;
    const result = await probe.probe();
    if (result.ok) {
      // The claim is this prober's until the result is written, whoever moved the version meanwhile.
      const closed = await this.transition(claim, (breaker) => probeSucceeded(breaker, owner, now()));
      if (closed === undefined) return false;
      log.info('the relay answered the probe: the breaker closed', {
        outageMs: now().getTime() - Date.parse(observed.opened_at ?? now().toISOString()),
        probeMs: result.durationMs,
      });
      return true;
    }
    const reason = `${result.failure.code ?? 'no code'}: ${result.failure.reason}`;
    await this.transition(claim, (breaker) => probeFailed(breaker, owner, { reason }, now(), settings));
    this.options.metrics.count(SENDER_METRIC.relayUnavailable, 1, this.options.relay);
    // A login or TLS refusal counts as a live attempt's would: the config alarm stays on (failureMetrics.ts).
    countFailureClass(this.options.metrics, result.failure, this.options.relay);
    log.info('the relay did not answer the probe: the breaker stays open', {
      code: result.failure.code,
      class: result.failure.class,
      probeMs: result.durationMs,
    });
    return false;
  }

  /** Replaces the token with a new one, delayed until the next probe; keeps the copy if it cannot. */
  private async rearm(observed: BreakerState, arrived: string, delaySeconds: number): Promise<TokenOutcome> {
    const token = this.newToken();
    const next = await this.transition(observed, (breaker) =>
      // A duplicate of the same token copy, or a token the sweeper replaced, re-arms nothing.
      breaker.token === arrived ? tokenReplaced(breaker, token) : undefined,
    );
    if (next === undefined) {
      const { breaker } = await this.read(true);
      if (breaker.state === 'closed') return { kind: 'done', reason: 'the breaker closed' };
      if (breaker.token !== arrived) return { kind: 'done', reason: 'not the current token' };
      // The breaker kept moving under every write: the next arrival of this copy decides again.
      return { kind: 'keep', seconds: delaySeconds };
    }
    // A token that does not reach the queue is found lost by the sweeper, which arms a new one.
    await this.enqueueToken(next, delaySeconds);
    return { kind: 'done', reason: 'token re-armed for the next probe' };
  }

  /**
   * Writes one transition of the breaker, decided on the state seen: first on `observed`, then, when
   * another writer moved the breaker meanwhile (a token re-armed, another sender's write), again on
   * a fresh read — the transition decides anew and answers undefined when it no longer applies.
   * Answers the state written, and remembers it; undefined when nothing was written.
   */
  private async transition(
    observed: BreakerState,
    next: (breaker: BreakerState) => BreakerState | undefined,
  ): Promise<BreakerState | undefined> {
    let seen = observed;
    for (let write = 0; write < MAX_TRANSITION_WRITES; write++) {
      const state = next(seen);
      if (state === undefined) break;
      if ((await this.options.store.writeBreaker(seen, state)) === 'written') {
        this.remember({ ...(this.cached?.gate ?? (await this.read(true))), breaker: state });
        return state;
      }
      seen = (await this.read(true)).breaker;
    }
    this.cached = undefined;
    return undefined;
  }

  private async enqueueToken(breaker: BreakerState, delaySeconds: number): Promise<void> {
    const rev = Number(breaker.token);
    if (!Number.isInteger(rev) || rev < 1) return;
    const { failed, error } = await this.options.queue.enqueue([
      { payload: { id: PROBE_TOKEN_ID, rev }, delaySeconds },
    ]);
    if (failed.length > 0) {
      this.options.log.warn('the probe token could not be queued; the sweeper will arm a new one', {
        ...(error === undefined ? {} : { error: errorForLog(error) }),
      });
    }
  }

  private async read(fresh: boolean): Promise<SendingGateState> {
    const nowMs = this.options.now().getTime();
    const cacheMs = this.options.cacheMs ?? GATE_READ_REUSE_MS;
    if (!fresh && this.cached !== undefined && nowMs - this.cached.readAtMs < cacheMs) {
      return this.cached.gate;
    }
    if (fresh) {
      const gate = await this.options.store.read();
      this.remember(gate);
      return gate;
    }
    // One read a second per warm sender, not one per lane or relay: the lanes that miss the cache
    // together wait on the same read, and the relays' gates share the store's (docs/capacity.md, the
    // gate's load at 10,000/s). The cache counts from the read's own time, so what a gate decides on
    // is at most `cacheMs` old, however its relays' gates shared it.
    this.reading ??= this.options.store.readRecent(cacheMs).then(
      ({ gate, ageMs }) => {
        this.reading = undefined;
        this.remember(gate, ageMs);
        return gate;
      },
      (error: unknown) => {
        this.reading = undefined;
        throw error;
      },
    );
    return this.reading;
  }

  /** What this container saw last, read `ageMs` ago (0: now, or what it wrote itself). */
  private remember(gate: SendingGateState, ageMs = 0): void {
    this.cached = { gate, readAtMs: this.options.now().getTime() - ageMs };
  }

  /** A token id: a positive whole number, carried as the token copy's rev. */
  private newToken(): string {
    return String(randomInt(1, 2 ** 31));
  }
}

/**
 * How fast the sender may start SMTP sends (POSTDATE_MAX_SEND_RATE, DESIGN §5 "Rate"): counted in
 * recipients, as SES counts its rate, and scaled by the fleet's rate factor that every sender reads
 * with the sending gate (core/relayBreaker.ts `rateFactor`: halved when the relay throttles us,
 * climbing back with time). The token bucket below implements it per warm container.
 */
export interface SendRateLimiter {
  /**
   * Resolves `granted` when a send to `recipients` recipients (default 1) may start at `rateFactor`
   * (in (0, 1], default 1) of the configured rate; at once, taking nothing, with the turn's distance
   * when that turn comes after `startBy` (ms on the limiter's clock): no time to wait for it.
   */
  acquire(recipients?: number, rateFactor?: number, startBy?: number): Promise<RateTurn>;
}

/** A send's turn at the rate: now, or too late for the caller (`inMs` from now). */
export type RateTurn = { readonly granted: true } | { readonly granted: false; readonly inMs: number };

const GRANTED: RateTurn = { granted: true };

/** No limit. */
export const UNLIMITED: SendRateLimiter = { acquire: async () => GRANTED };

/**
 * POSTDATE_MAX_SEND_RATE: a token bucket per warm container, in recipients (DESIGN §5, "Rate": SES
 * counts its sending rate in recipients). The configured rate is this sender's share of the relay's
 * rate; the fleet's rate factor from the sending gate scales it (halved after a throttle, climbing
 * back additively, core/relayBreaker.ts), so every sender slows down together. Tokens refill
 * continuously at `rate × factor` per second up to `burst`; a send takes one per recipient (a
 * message with more recipients than the burst goes, alone, with the burst in hand and the rest
 * owed), waiting for them when the bucket is short — unless they come after the caller's `startBy`:
 * then it waits not at all. The clock and the wait are injected, so tests never sleep.
 */
export interface TokenBucketOptions {
  /** Recipients per second, this sender's share. */
  readonly rate: number;
  /** Largest burst; default max(1, rate). */
  readonly burst?: number;
  /** Milliseconds, monotonic. */
  readonly now: () => number;
  readonly sleep: (milliseconds: number) => Promise<void>;
}

/** The lowest factor the bucket applies: a factor that is not a number in (0, 1] reads as 1. */
const MIN_FACTOR = 1 / 1024;

export function tokenBucket(options: TokenBucketOptions): SendRateLimiter {
  const burst = Math.max(1, options.burst ?? options.rate);
  let tokens = burst;
  let last = options.now();
  // Callers queue in order, so a waiting send is never overtaken by a later one.
  let queue: Promise<RateTurn> = Promise.resolve(GRANTED);

  const refill = (rate: number) => {
    const now = options.now();
    tokens = Math.min(burst, tokens + ((now - last) / 1000) * rate);
    last = now;
  };

  const take = async (recipients: number, factor: number, startBy: number) => {
    const rate = options.rate * factor;
    // A send starts with a burst's worth at most in hand, and spends every recipient: those past the
    // burst are owed (the bucket goes below zero), so the next send waits for them.
    const need = Math.min(burst, recipients);
    refill(rate);
    const inMs = Math.max(0, Math.ceil(((need - tokens) / rate) * 1000));
    if (options.now() + inMs > startBy) return { granted: false, inMs };
    while (tokens < need) {
      await options.sleep(Math.ceil(((need - tokens) / rate) * 1000));
      refill(rate);
    }
    tokens -= recipients;
    return GRANTED;
  };

  return {
    acquire(recipients = 1, rateFactor = 1, startBy = Number.POSITIVE_INFINITY) {
      const cost = Number.isFinite(recipients) && recipients >= 1 ? Math.floor(recipients) : 1;
      const factor =
        Number.isFinite(rateFactor) && rateFactor > 0 ? Math.max(MIN_FACTOR, Math.min(1, rateFactor)) : 1;
      const by = Number.isNaN(startBy) ? Number.POSITIVE_INFINITY : startBy;
      const turn = queue.then(() => take(cost, factor, by));
      queue = turn.catch(() => GRANTED);
      return turn;
    },
  };
}
