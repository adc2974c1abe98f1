import { randomInt, randomUUID } from 'node:crypto';
import { isRelayUnavailable, type SmtpErrorClassification } from '../core/classifySmtpError.js';
import { errorForLog } from '../core/errorForLog.js';
import { SENDER_METRIC } from '../core/metricNames.js';
import {
  type BreakerSettings,
  type BreakerState,
  gateDecision,
  opened,
  PROBE_TOKEN_ID,
  probeClaimed,
  probeFailed,
  probeSucceeded,
  type SendingGateState,
  tokenArrival,
  tokenReplaced,
} from '../core/relayBreaker.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { Log } from '../ports/Log.js';
import type { SendOutcome } from '../ports/Mailer.js';
import type { SenderMetrics } from '../ports/SenderMetrics.js';
import type { RelayProbe, SendingGateStore } from '../ports/SendingGate.js';

/**
 * The sending gate as one sender container uses it (DESIGN §5, "An outage is not the message's
 * fault"): the decisions are core/relayBreaker.ts's, the state is the table's (store/sendingGate.ts),
 * and this only runs the steps between them — read the gate (a read is reused for `cacheMs`), claim
 * and run the probe, open the breaker after a relay failure and put the probe token on the queue.
 *
 * The one thing a container keeps for itself is what it saw last: after its own relay failure it
 * treats the breaker as open at once (without waiting for a read), so its other copies do not try the
 * relay while the write is on its way. The table stays the only truth: the next read replaces it.
 */

export { PROBE_TOKEN_ID } from '../core/relayBreaker.js';

export interface RelayGateOptions {
  readonly store: SendingGateStore;
  readonly probe: RelayProbe;
  /** Where the probe token goes (the send queue). */
  readonly queue: DispatchQueue;
  readonly settings: BreakerSettings;
  readonly now: () => Date;
  readonly random: () => number;
  /** A read of the gate is reused this long. @default 1000 */
  readonly cacheMs?: number;
  readonly log: Log;
  readonly metrics: SenderMetrics;
}

export type GateAdmission =
  | { readonly kind: 'send' }
  | { readonly kind: 'wait'; readonly seconds: number; readonly cause: 'relay-unavailable' | 'paused' };

export type TokenOutcome =
  | { readonly kind: 'done'; readonly reason: string }
  /** The token could not be replaced: keep this copy, visible again after `seconds`. */
  | { readonly kind: 'keep'; readonly seconds: number };

export class RelayGate {
  private cached: { readonly gate: SendingGateState; readonly readAtMs: number } | undefined;

  constructor(private readonly options: RelayGateOptions) {}

  /** Before a claim: may a copy of a message of `kind` go to the relay now? Probes when it is due. */
  async admit(kind: string | undefined): Promise<GateAdmission> {
    const { settings, now, random } = this.options;
    const gate = await this.read(false);
    const decision = gateDecision(gate, kind, now(), settings, random());
    if (decision.kind !== 'probe') return decision;
    const closed = await this.probe(gate.breaker);
    if (closed) return { kind: 'send' };
    const again = gateDecision(await this.read(false), kind, now(), settings, random());
    return again.kind === 'wait'
      ? again
      : { kind: 'wait', seconds: Math.ceil(settings.probeIntervalMs / 1000), cause: 'relay-unavailable' };
  }

  /**
   * After an attempt: a failure that is the relay's opens the breaker for every sender (the winner of
   * the write puts the probe token on the queue). Answers whether the relay was unavailable.
   */
  async afterAttempt(outcome: SendOutcome): Promise<boolean> {
    if (outcome.delivered || !isRelayUnavailable(outcome.failure, outcome.reachedRelay)) return false;
    await this.open(outcome.failure);
    return true;
  }

  /** How long a copy that failed on the relay waits: one probe interval. */
  waitSeconds(): number {
    return Math.max(1, Math.ceil(this.options.settings.probeIntervalMs / 1000));
  }

  /** The probe token's copy arrived (`token` is its rev). */
  async onToken(token: number): Promise<TokenOutcome> {
    const { now } = this.options;
    const gate = await this.read(true);
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
    return this.rearm(breaker, delaySeconds);
  }

  /** Opens a closed breaker (the winner arms the token); an open one is left as it is. */
  private async open(failure: SmtpErrorClassification): Promise<void> {
    const { store, settings, now, log, metrics } = this.options;
    const reason = `${failure.code ?? 'no code'}: ${failure.reason}`;
    const current = await this.read(true);
    const token = this.newToken();
    const next = opened(current.breaker, { reason }, now(), settings, token);
    // Whatever the write does, this container holds its copies from now on.
    this.remember({ ...current, breaker: next ?? current.breaker });
    if (next === undefined) return;
    if ((await store.writeBreaker(current.breaker, next)) === 'conflict') {
      this.cached = undefined;
      return;
    }
    metrics.count(SENDER_METRIC.relayUnavailable);
    log.warn('the relay is unavailable: the breaker opened for every sender', {
      code: failure.code,
      class: failure.class,
      probeAt: next.probe_at,
    });
    await this.enqueueToken(next, Math.ceil(settings.probeIntervalMs / 1000));
  }

  /** Claims the probe and runs it; answers whether the breaker closed (by this probe). */
  private async probe(observed: BreakerState): Promise<boolean> {
    const { store, probe, settings, now, log } = this.options;
    const owner = `probe-${randomUUID()}`;
    const claim = probeClaimed(observed, owner, now(), settings);
    if (claim === undefined || (await store.writeBreaker(observed, claim)) === 'conflict') {
      this.cached = undefined;
      return false;
    }
    this.remember({ ...(this.cached?.gate ?? (await this.read(true))), breaker: claim });
    const result = await probe.probe();
    if (result.ok) {
      const closed = probeSucceeded(claim, owner, now());
      if (closed !== undefined && (await store.writeBreaker(claim, closed)) === 'written') {
        this.remember({ ...(this.cached?.gate ?? (await this.read(true))), breaker: closed });
        log.info('the relay answered the probe: the breaker closed', {
          outageMs: now().getTime() - Date.parse(observed.opened_at ?? now().toISOString()),
          probeMs: result.durationMs,
        });
        return true;
      }
      this.cached = undefined;
      return false;
    }
    const reopened = probeFailed(claim, owner, {
      reason: `${result.failure.code ?? 'no code'}: ${result.failure.reason}`,
    });
    if (reopened !== undefined && (await store.writeBreaker(claim, reopened)) === 'written') {
      this.remember({ ...(this.cached?.gate ?? (await this.read(true))), breaker: reopened });
    } else {
      this.cached = undefined;
    }
    this.options.metrics.count(SENDER_METRIC.relayUnavailable);
    log.info('the relay did not answer the probe: the breaker stays open', {
      code: result.failure.code,
      class: result.failure.class,
      probeMs: result.durationMs,
    });
    return false;
  }

  /** Replaces the token with a new one, delayed until the next probe; keeps the copy if it cannot. */
  private async rearm(observed: BreakerState, delaySeconds: number): Promise<TokenOutcome> {
    const next = tokenReplaced(observed, this.newToken());
    if (next === undefined) return { kind: 'done', reason: 'the breaker closed' };
    if ((await this.options.store.writeBreaker(observed, next)) === 'conflict') {
      // Someone else moved the breaker (a probe, another token): the next arrival decides again.
      return { kind: 'keep', seconds: delaySeconds };
    }
    this.remember({ ...(this.cached?.gate ?? (await this.read(true))), breaker: next });
    // A token that does not reach the queue is found lost by the sweeper, which arms a new one.
    await this.enqueueToken(next, delaySeconds);
    return { kind: 'done', reason: 'token re-armed for the next probe' };
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
    const cacheMs = this.options.cacheMs ?? 1000;
    if (!fresh && this.cached !== undefined && nowMs - this.cached.readAtMs < cacheMs) {
      return this.cached.gate;
    }
    const gate = await this.options.store.read();
    this.remember(gate);
    return gate;
  }

  private remember(gate: SendingGateState): void {
    this.cached = { gate, readAtMs: this.options.now().getTime() };
  }

  /** A token id: a positive whole number, carried as the token copy's rev. */
  private newToken(): string {
    return String(randomInt(1, 2 ** 31));
  }
}
