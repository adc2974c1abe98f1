import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifySmtpError } from '../../lambdas/core/classifySmtpError.js';
import {
  BREAKER_STATE,
  type BreakerSettings,
  type BreakerState,
  gateDecision,
  isPaused,
  NEVER_OPENED,
  NOT_PAUSED,
  nextProbeAt,
  opened,
  type PauseState,
  pauseAfter,
  pauseChanges,
  probeClaimed,
  probeFailed,
  probeSucceeded,
  quotaHeldUntil,
  rateFactor,
  THROTTLE,
  throttled,
  tokenArrival,
  tokenLost,
  tokenReplaced,
} from '../../lambdas/core/relayBreaker.js';

/**
 * DESIGN §5, "An outage is not the message's fault": a breaker shared by every sender through
 * conditional writes; closed → open on a relay failure; open → half-open for exactly one prober per
 * interval; half-open → closed when the relay answers, → open when it does not. The operator's pause
 * holds everything or one `tags.kind`.
 */
const T0 = new Date('2026-12-01T09:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const SETTINGS = { probeIntervalMs: 30_000, probeTimeoutMs: 10_000 };
const FAILURE = { reason: '421: the relay is closing the connection' };
const gate = (breaker: BreakerState, pause: PauseState = NOT_PAUSED) => ({ breaker, pause });

describe('the breaker', () => {
  it('closed lets copies through; a relay failure opens it with the first probe one interval later', () => {
    expect(gateDecision(gate(NEVER_OPENED), undefined, T0, SETTINGS)).toEqual({
      kind: 'send',
      rateFactor: 1,
    });
    const open = opened(NEVER_OPENED, FAILURE, T0, SETTINGS, '7');
    expect(open).toMatchObject({
      state: 'open',
      version: 1,
      opened_at: T0.toISOString(),
      probe_at: at(30).toISOString(),
      token: '7',
    });
    // Already open: nothing to write, whoever else saw the relay fail.
    expect(open && opened(open, FAILURE, at(1), SETTINGS, '8')).toBeUndefined();
  });

  it('open holds every copy until the probe is due, then asks for one probe', () => {
    const open = opened(NEVER_OPENED, FAILURE, T0, SETTINGS, '7') as BreakerState;
    expect(gateDecision(gate(open), 'x', at(10), SETTINGS)).toEqual({
      kind: 'wait',
      seconds: 20,
      cause: 'relay-unavailable',
    });
    expect(gateDecision(gate(open), 'x', at(30), SETTINGS)).toEqual({ kind: 'probe' });
  });

  it('half-open: one prober; success closes, failure reopens with the next probe one interval after the failure', () => {
    const open = opened(NEVER_OPENED, FAILURE, T0, SETTINGS, '7') as BreakerState;
    const half = probeClaimed(open, 'a', at(30), SETTINGS) as BreakerState;
    expect(half).toMatchObject({ state: 'half-open', probe_owner: 'a', version: 2 });
    expect(probeClaimed(half, 'b', at(31), SETTINGS)).toBeUndefined();
    expect(gateDecision(gate(half), undefined, at(31), SETTINGS)).toMatchObject({ kind: 'wait' });
    // Only the prober settles it.
    expect(probeSucceeded(half, 'b', at(32))).toBeUndefined();
    expect(probeSucceeded(half, 'a', at(32))).toMatchObject({ state: 'closed', version: 3 });
    const again = probeFailed(half, 'a', FAILURE, at(31), SETTINGS) as BreakerState;
    // One interval after the failed connection, which came after the claim (RFC 5321 §4.5.4.1 as
    // the relay counts: its connections, not our claims, at least an interval apart).
    expect(again).toMatchObject({ state: 'open', probe_at: at(61).toISOString(), failed_probes: 1 });
    expect(again.probe_owner).toBeUndefined();
  });

  it('a copy that meets a probe in flight waits for the next probe time, not for the claim to run out', () => {
    // In AWS the claim (3 × the SMTP timeout, 60 s) outlasts the interval (30 s), and a probe of a
    // refusing relay ends in well under a second: a copy held until the claim's end would come back a
    // minute after the relay did (a real Postfix run showed it, bench/reports/2026-12-01-postfix-outage.md).
    const settings = { probeIntervalMs: 30_000, probeTimeoutMs: 60_000 };
    const open = opened(NEVER_OPENED, FAILURE, T0, settings, '7') as BreakerState;
    const half = probeClaimed(open, 'a', at(30), settings) as BreakerState;
    expect(gateDecision(gate(half), undefined, at(31), settings)).toEqual({
      kind: 'wait',
      seconds: 29,
      cause: 'relay-unavailable',
    });
    // A prober that died: the copies keep coming back once per interval until the claim runs out.
    expect(gateDecision(gate(half), undefined, at(61), settings)).toEqual({
      kind: 'wait',
      seconds: 29,
      cause: 'relay-unavailable',
    });
    expect(gateDecision(gate(half), undefined, at(91), settings)).toEqual({ kind: 'probe' });
    // The token too: re-armed for the next probe time, so a lone token probes once per interval.
    expect(tokenArrival(half, '7', at(31))).toEqual({ kind: 'rearm', delaySeconds: 29 });
  });

  it('a prober that died is replaced once its claim ran out, never within the interval', () => {
    const open = opened(NEVER_OPENED, FAILURE, T0, SETTINGS, '7') as BreakerState;
    const half = probeClaimed(open, 'a', at(30), SETTINGS) as BreakerState;
    expect(probeClaimed(half, 'b', at(45), SETTINGS)).toBeUndefined(); // claim over, interval not
    expect(probeClaimed(half, 'b', at(60), SETTINGS)).toMatchObject({ probe_owner: 'b' });
  });

  it('the token: dropped when stale or closed, probes when due, re-armed when early; lost after two idle intervals', () => {
    const open = opened(NEVER_OPENED, FAILURE, T0, SETTINGS, '7') as BreakerState;
    expect(tokenArrival(open, '6', at(30))).toMatchObject({ kind: 'drop' });
    expect(tokenArrival(NEVER_OPENED, '7', at(30))).toMatchObject({ kind: 'drop' });
    expect(tokenArrival(open, '7', at(30))).toEqual({ kind: 'probe' });
    expect(tokenArrival(open, '7', at(12))).toEqual({ kind: 'rearm', delaySeconds: 18 });
    expect(tokenReplaced(open, '9')).toMatchObject({ token: '9', version: 2 });
    expect(tokenReplaced(NEVER_OPENED, '9')).toBeUndefined();
    expect(tokenLost(open, at(90), SETTINGS)).toBe(false);
    expect(tokenLost(open, at(91), SETTINGS)).toBe(true);
    expect(tokenLost(NEVER_OPENED, at(1000), SETTINGS)).toBe(false);
  });

  /**
   * Any number of senders, any interleaving, a relay that is up or down at random: model the table
   * as one versioned cell, let every sender decide on a possibly stale read and write conditionally.
   */
  it('races: probes are at least one interval apart, every write bumps the version by one, and it only closes on a probe that succeeded', () => {
    const step = fc.record({
      sender: fc.integer({ min: 0, max: 4 }),
      advanceMs: fc.integer({ min: 0, max: 20_000 }),
      stale: fc.boolean(),
      event: fc.constantFrom('failure', 'copy', 'token', 'probe-result'),
      relayUp: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 80 }), (steps) => {
        let stored: BreakerState = NEVER_OPENED;
        let previousRead: BreakerState = NEVER_OPENED;
        let nowMs = T0.getTime();
        const claims: number[] = [];
        const failedProbes: number[] = [];
        const probing = new Map<number, { owner: string; claim: BreakerState }>();
        const write = (observed: BreakerState, next: BreakerState | undefined): boolean => {
          if (next === undefined || observed.version !== stored.version) return false;
          expect(next.version).toBe(stored.version + 1);
          if (next.state === BREAKER_STATE.closed && stored.state !== BREAKER_STATE.closed) {
            expect(stored.state).toBe(BREAKER_STATE.halfOpen);
          }
          stored = next;
          return true;
        };
        let tokens = 0;
        for (const { sender, advanceMs, stale, event, relayUp } of steps) {
          nowMs += advanceMs;
          const now = new Date(nowMs);
          const seen = stale ? previousRead : stored;
          previousRead = stored;
          if (event === 'failure') {
            write(seen, opened(seen, FAILURE, now, SETTINGS, String(++tokens)));
          } else if (event === 'probe-result') {
            const held = probing.get(sender);
            if (held === undefined) continue;
            probing.delete(sender);
            const next = relayUp
              ? probeSucceeded(stored, held.owner, now)
              : probeFailed(stored, held.owner, FAILURE, now, SETTINGS);
            if (write(stored, next) && !relayUp) failedProbes.push(nowMs);
          } else {
            const decision =
              event === 'token'
                ? tokenArrival(seen, seen.token ?? '', now).kind
                : gateDecision(gate(seen), undefined, now, SETTINGS).kind;
            if (decision === 'send') expect(seen.state).toBe(BREAKER_STATE.closed);
            if (decision !== 'probe') continue;
            const owner = `s${sender}-${nowMs}`;
            const claim = probeClaimed(seen, owner, now, SETTINGS);
            if (write(seen, claim) && claim !== undefined) {
              claims.push(nowMs);
              probing.set(sender, { owner, claim });
            }
          }
        }
        for (let i = 1; i < claims.length; i++) {
          expect((claims[i] ?? 0) - (claims[i - 1] ?? 0)).toBeGreaterThanOrEqual(SETTINGS.probeIntervalMs);
        }
        // A probe's connection lies between its claim and its result: the next claim comes at least
        // an interval after a failed probe's result, so the relay sees its connections that far apart.
        for (const failedAt of failedProbes) {
          const nextClaim = claims.find((claimedAt) => claimedAt > failedAt);
          if (nextClaim !== undefined) {
            expect(nextClaim - failedAt).toBeGreaterThanOrEqual(SETTINGS.probeIntervalMs);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a copy that waits comes back within one interval of the next probe, never sooner than a second', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 120_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (elapsedMs, spread) => {
          const open = opened(NEVER_OPENED, FAILURE, T0, SETTINGS, '1') as BreakerState;
          const now = new Date(T0.getTime() + elapsedMs);
          const decision = gateDecision(gate(open), undefined, now, SETTINGS, spread);
          if (decision.kind !== 'wait') return;
          const untilProbe = Math.ceil((Date.parse(open.probe_at ?? '') - now.getTime()) / 1000);
          expect(decision.seconds).toBeGreaterThanOrEqual(Math.max(1, untilProbe));
          expect(decision.seconds).toBeLessThan(Math.max(1, untilProbe) + 30);
        },
      ),
    );
  });
});

describe('how soon held mail goes after a resume or once the relay answers (decision 0266)', () => {
  const interval = fc.integer({ min: 1, max: 900 });
  const spread = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

  it('the probe schedule does not grow: however many probes failed, however late or slow each, the next is due one interval after the last failure', () => {
    const probe = fc.record({
      lateMs: fc.integer({ min: 0, max: 60_000 }),
      tookMs: fc.integer({ min: 0, max: 20_000 }),
    });
    fc.assert(
      fc.property(interval, fc.array(probe, { minLength: 1, maxLength: 40 }), (seconds, probes) => {
        const settings = { probeIntervalMs: seconds * 1000, probeTimeoutMs: 3 * seconds * 1000 };
        let breaker = opened(NEVER_OPENED, FAILURE, T0, settings, '1') as BreakerState;
        for (const [index, { lateMs, tookMs }] of probes.entries()) {
          const claimAt = new Date(Date.parse(breaker.probe_at ?? '') + lateMs);
          const claimed = probeClaimed(breaker, `p${index}`, claimAt, settings) as BreakerState;
          const failedAt = new Date(claimAt.getTime() + tookMs);
          breaker = probeFailed(claimed, `p${index}`, FAILURE, failedAt, settings) as BreakerState;
          expect(breaker.failed_probes).toBe(index + 1);
          expect(Date.parse(breaker.probe_at ?? '') - failedAt.getTime()).toBe(settings.probeIntervalMs);
          // The token the prober re-arms comes back for that probe, not later.
          expect(tokenArrival(breaker, '1', failedAt)).toEqual({ kind: 'rearm', delaySeconds: seconds });
        }
      }),
    );
  });

  it('a paused copy is back one to two intervals after it was handed back; so after a resume, within two intervals', () => {
    fc.assert(
      fc.property(
        interval,
        spread,
        fc.constantFrom('closed', 'open', 'half-open'),
        fc.integer({ min: 0, max: 3_600_000 }),
        (seconds, share, state, elapsedMs) => {
          const settings = { probeIntervalMs: seconds * 1000, probeTimeoutMs: 3 * seconds * 1000 };
          const open = opened(NEVER_OPENED, FAILURE, T0, settings, '1') as BreakerState;
          const breaker =
            state === 'closed'
              ? NEVER_OPENED
              : state === 'open'
                ? open
                : (probeClaimed(
                    open,
                    'a',
                    new Date(Date.parse(open.probe_at ?? '')),
                    settings,
                  ) as BreakerState);
          const paused = pauseAfter(NOT_PAUSED, { action: 'pause', reason: 'incident 42' }, T0);
          const now = new Date(T0.getTime() + elapsedMs);
          const decision = gateDecision(gate(breaker, paused), 'welcome', now, settings, share);
          expect(decision).toMatchObject({ kind: 'wait', cause: 'paused' });
          const wait = decision.kind === 'wait' ? decision.seconds : Number.NaN;
          expect(wait).toBeGreaterThanOrEqual(seconds);
          expect(wait).toBeLessThanOrEqual(Math.max(1, 2 * seconds - 1));
        },
      ),
    );
  });

  it('a copy the breaker holds is back no sooner than the next probe may have closed it (or one interval), and at most one interval after that', () => {
    fc.assert(
      fc.property(
        interval,
        spread,
        fc.boolean(),
        fc.integer({ min: 0, max: 600_000 }),
        fc.integer({ min: 0, max: 600_000 }),
        (seconds, share, claimed, claimLateMs, elapsedMs) => {
          const settings = { probeIntervalMs: seconds * 1000, probeTimeoutMs: 3 * seconds * 1000 };
          const open = opened(NEVER_OPENED, FAILURE, T0, settings, '1') as BreakerState;
          const claimAt = new Date(Date.parse(open.probe_at ?? '') + claimLateMs);
          const breaker = claimed ? (probeClaimed(open, 'a', claimAt, settings) as BreakerState) : open;
          const now = new Date((claimed ? claimAt.getTime() : T0.getTime()) + elapsedMs);
          const decision = gateDecision(gate(breaker), 'welcome', now, settings, share);
          if (decision.kind === 'probe') return;
          expect(decision).toMatchObject({ kind: 'wait', cause: 'relay-unavailable' });
          const wait = decision.kind === 'wait' ? decision.seconds : Number.NaN;
          const dueMs = Date.parse(breaker.probe_at ?? '');
          const mayProbeMs =
            breaker.state === 'half-open' && dueMs <= now.getTime()
              ? Date.parse(breaker.probe_until ?? '')
              : dueMs;
          const untilProbe = Math.max(1, Math.ceil((mayProbeMs - now.getTime()) / 1000));
          expect(wait).toBeGreaterThanOrEqual(Math.min(untilProbe, seconds));
          expect(wait).toBeLessThanOrEqual(Math.min(untilProbe, seconds) + seconds - 1);
        },
      ),
    );
  });
});

describe('the pause', () => {
  it('pause all holds every kind and messages without one; resume --kind lets that kind through (the roll-out)', () => {
    const all = pauseAfter(NOT_PAUSED, { action: 'pause', reason: 'incident' }, T0);
    expect(isPaused(all, 'welcome')).toBe(true);
    expect(isPaused(all, undefined)).toBe(true);
    const rolled = pauseAfter(all, { action: 'resume', kind: 'welcome' }, at(1));
    expect(isPaused(rolled, 'welcome')).toBe(false);
    expect(isPaused(rolled, 'invoice')).toBe(true);
    expect(isPaused(rolled, undefined)).toBe(true);
    expect(pauseAfter(rolled, { action: 'resume' }, at(2))).toEqual({ version: 3, kinds: {} });
  });

  it('pause --kind holds that kind only; a paused kind waits even while the breaker is closed', () => {
    const one = pauseAfter(NOT_PAUSED, { action: 'pause', kind: 'campaign', reason: 'rollout' }, T0);
    expect(isPaused(one, 'campaign')).toBe(true);
    expect(isPaused(one, 'invoice')).toBe(false);
    expect(isPaused(one, undefined)).toBe(false);
    expect(gateDecision(gate(NEVER_OPENED, one), 'campaign', T0, SETTINGS)).toEqual({
      kind: 'wait',
      seconds: 30,
      cause: 'paused',
    });
    expect(gateDecision(gate(NEVER_OPENED, one), 'invoice', T0, SETTINGS)).toEqual({
      kind: 'send',
      rateFactor: 1,
    });
    const resumed = pauseAfter(one, { action: 'resume', kind: 'campaign' }, at(1));
    expect(isPaused(resumed, 'campaign')).toBe(false);
  });

  it('a command changes what waits exactly when pauseChanges says so (a repeated pause or resume changes nothing)', () => {
    const command = fc.oneof(
      fc.record({
        action: fc.constant('pause' as const),
        kind: fc.constantFrom('a', 'b', undefined),
        reason: fc.constant('r'),
      }),
      fc.record({
        action: fc.constant('resume' as const),
        kind: fc.constantFrom('a', 'b', undefined),
      }),
    );
    const kinds = ['a', 'b', 'never named', undefined];
    fc.assert(
      fc.property(fc.array(command, { maxLength: 6 }), command, (before, next) => {
        const pause = before.reduce((state, step, i) => pauseAfter(state, step, at(i)), NOT_PAUSED);
        const after = pauseAfter(pause, next, at(10));
        const moved = kinds.some((kind) => isPaused(pause, kind) !== isPaused(after, kind));
        expect(pauseChanges(pause, next)).toBe(moved);
      }),
      { numRuns: 500 },
    );
  });

  it('any sequence of commands: a kind is paused exactly as the last command that concerns it says', () => {
    const command = fc.oneof(
      fc.record({
        action: fc.constant('pause' as const),
        kind: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }),
        reason: fc.constant('r'),
      }),
      fc.record({
        action: fc.constant('resume' as const),
        kind: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }),
      }),
    );
    fc.assert(
      fc.property(fc.array(command, { maxLength: 12 }), (commands) => {
        let pause = NOT_PAUSED;
        for (const c of commands) pause = pauseAfter(pause, c, T0);
        for (const kind of ['a', 'b']) {
          const last = [...commands].reverse().find((c) => c.kind === kind || c.kind === undefined);
          expect(isPaused(pause, kind)).toBe(last?.action === 'pause');
        }
        expect(pause.version).toBe(commands.length);
      }),
    );
  });
});

describe('a failure that is the relay’s: the outage origin', () => {
  const error = (fields: Record<string, unknown>) => Object.assign(new Error('smtp'), fields);
  it.each([
    [{ code: 'ECONNREFUSED' }, 'outage'],
    [{ code: 'ETIMEDOUT', timeoutType: 'GREETING_TIMEOUT' }, 'outage'],
    [{ responseCode: 421, command: 'CONN', response: '421 4.3.2 Service not available' }, 'outage'],
    [{ responseCode: 421, command: 'EHLO', response: '421 4.3.2 Shutting down' }, 'outage'],
    [{ code: 'EAUTH', responseCode: 535, command: 'AUTH PLAIN', response: '535 5.7.8 no' }, 'outage'],
    [{ code: 'ETLS', command: 'STARTTLS' }, 'outage'],
    [{ responseCode: 421, command: 'DATA', response: '421 4.4.2 closing' }, 'transaction'],
    [{ responseCode: 421, command: 'MAIL FROM', response: '421 4.4.2 closing' }, 'transaction'],
    [{ responseCode: 451, command: 'DATA', response: '451 4.3.0 later' }, 'transaction'],
    [{ responseCode: 550, command: 'RCPT TO', response: '550 5.1.1 unknown' }, 'transaction'],
    [{ code: 'EENVELOPE', command: 'API' }, 'local'],
    [{ code: 'ECONNECTION', command: 'CONN' }, 'transaction'],
  ] as const)('%j → %s', (fields, expected) => {
    expect(classifySmtpError(error(fields)).origin).toBe(expected);
  });

  it('a refused connect as nodemailer reports it (ESOCKET at CONN, syscall connect) never reached the relay', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      code: 'ESOCKET',
      command: 'CONN',
      errno: -111,
      syscall: 'connect',
    });
    expect(classifySmtpError(refused).origin).toBe('outage');
    // A session that broke later (no connect syscall) may have been mid-transaction: it counts.
    const broken = Object.assign(new Error('Connection closed'), { code: 'ECONNECTION', command: 'CONN' });
    expect(classifySmtpError(broken).origin).toBe('transaction');
    // The same break while the session was being set up is the relay's.
    expect(classifySmtpError(broken, { beforeTransaction: true }).origin).toBe('outage');
  });
});

describe('the fleet’s slow-down after the relay throttled us', () => {
  const SLOW: BreakerSettings = { probeIntervalMs: 30_000, probeTimeoutMs: 60_000, throttleHoldMs: 1000 };
  const at = (ms: number) => new Date(T0.getTime() + ms);
  const gateOf = (breaker: BreakerState) => ({ breaker, pause: NOT_PAUSED });

  it('halves the rate factor on each wave, never below the floor, and holds every sender meanwhile', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 1, maxLength: 12 }), (gaps) => {
        let breaker: BreakerState = NEVER_OPENED;
        let now = 0;
        for (const gap of gaps) {
          now += gap;
          const before = rateFactor(breaker, at(now));
          const next = throttled(breaker, at(now), SLOW);
          if (next === undefined) {
            // The same wave: within the debounce of the last throttle.
            expect(now - Date.parse(breaker.throttled_at ?? '') + T0.getTime()).toBeLessThan(
              THROTTLE.debounceMs,
            );
            continue;
          }
          expect(next.version).toBe(breaker.version + 1);
          expect(next.rate_factor).toBeCloseTo(Math.max(THROTTLE.minFactor, before / 2), 10);
          expect(next.rate_factor).toBeGreaterThanOrEqual(THROTTLE.minFactor);
          const decision = gateDecision(gateOf(next), undefined, at(now), SLOW);
          expect(decision).toMatchObject({ kind: 'wait', cause: 'throttled' });
          breaker = next;
        }
      }),
    );
  });

  it('gives the rate back additively with time after the hold, up to 1, and lets copies through once the hold is over', () => {
    const first = throttled(NEVER_OPENED, T0, SLOW);
    if (first === undefined) throw new Error('a first throttle always writes');
    expect(first.rate_factor).toBe(0.5);
    expect(Date.parse(first.throttled_until ?? '') - T0.getTime()).toBe(2000);
    expect(gateDecision(gateOf(first), undefined, at(1999), SLOW)).toMatchObject({
      kind: 'wait',
      cause: 'throttled',
    });
    const after = gateDecision(gateOf(first), undefined, at(2000), SLOW);
    // Nothing was sent during the hold, so nothing came back during it (decision 0193).
    expect(after.kind === 'send' && after.rateFactor).toBe(0.5);
    expect(rateFactor(first, at(4000))).toBeCloseTo(0.5 + 2 * THROTTLE.recoveryPerSecond, 10);
    fc.assert(
      fc.property(fc.nat(120_000), fc.nat(120_000), (a, b) => {
        const [early, late] = a <= b ? [a, b] : [b, a];
        expect(rateFactor(first, at(early))).toBeLessThanOrEqual(rateFactor(first, at(late)));
        expect(rateFactor(first, at(late))).toBeLessThanOrEqual(1);
      }),
    );
    expect(rateFactor(first, at(12_000))).toBe(1);
  });

  /**
   * Decision 0193: SES's daily quota comes back only as the day's sends age out (a rolling 24 hours),
   * not in a second: a quota reply holds the fleet `quotaHoldMs` at the lowest factor, however the
   * replies and rate throttles interleave; nothing shortens a hold; a quota reply during a quota hold
   * writes nothing, so the fleet's senders answering the same wave make one write.
   */
  it('a daily quota holds every sender for minutes at the lowest factor, and no throttle shortens a hold (property)', () => {
    const QUOTA: BreakerSettings = { ...SLOW, quotaHoldMs: 300_000 };
    const events = fc.array(
      fc.tuple(fc.integer({ min: 0, max: 400_000 }), fc.constantFrom('rate', 'quota')),
      {
        minLength: 1,
        maxLength: 16,
      },
    );
    fc.assert(
      fc.property(events, (steps) => {
        let breaker: BreakerState = NEVER_OPENED;
        let now = 0;
        for (const [gap, kind] of steps) {
          now += gap;
          const heldBefore = Date.parse(breaker.throttled_until ?? '');
          const next = throttled(breaker, at(now), QUOTA, kind);
          if (next === undefined) {
            if (kind === 'quota')
              expect(heldBefore).toBeGreaterThanOrEqual(T0.getTime() + now + 300_000 - 1000);
            continue;
          }
          const heldUntil = Date.parse(next.throttled_until ?? '');
          if (Number.isFinite(heldBefore)) expect(heldUntil).toBeGreaterThanOrEqual(heldBefore);
          if (kind === 'quota') {
            expect(next.rate_factor).toBe(THROTTLE.minFactor);
            expect(heldUntil - (T0.getTime() + now)).toBeGreaterThanOrEqual(300_000);
          }
          // Held to its end, then sending again from the factor written, climbing from there; while a
          // quota's hold is on the relay is quota-held (with several relays, the next one takes the mail).
          const quotaOn = Date.parse(next.quota_until ?? '') > T0.getTime() + now;
          if (kind === 'quota') expect(quotaOn).toBe(true);
          expect(gateDecision(gateOf(next), undefined, at(now), QUOTA)).toMatchObject({
            cause: quotaOn ? 'quota-held' : 'throttled',
          });
          const end = heldUntil - T0.getTime();
          expect(gateDecision(gateOf(next), undefined, at(end - 1), QUOTA).kind).toBe('wait');
          expect(rateFactor(next, at(end))).toBeCloseTo(next.rate_factor ?? 1, 10);
          breaker = next;
        }
      }),
    );
  });

  it('says a quota hold is on, and until when, exactly while the gate passes the copy on as quota-held (what `relays status` shows)', () => {
    const QUOTA: BreakerSettings = { ...SLOW, quotaHoldMs: 300_000 };
    const quota = throttled(NEVER_OPENED, T0, QUOTA, 'quota');
    const rate = throttled(NEVER_OPENED, T0, QUOTA, 'rate');
    if (quota === undefined || rate === undefined) throw new Error('a first throttle always writes');
    const end = Date.parse(quota.throttled_until ?? '') - T0.getTime();
    for (const [breaker, ms] of [
      [quota, 0],
      [quota, end - 1],
      [quota, end],
      [rate, 0],
      [NEVER_OPENED, 0],
      [opened(quota, FAILURE, T0, QUOTA, '5') ?? quota, 1000],
    ] as const) {
      const held = gateDecision(gateOf(breaker), undefined, at(ms), QUOTA);
      const quotaHeld = held.kind === 'wait' && held.cause === 'quota-held';
      expect(quotaHeldUntil(breaker, at(ms))).toBe(quotaHeld ? breaker.throttled_until : undefined);
    }
    expect(quotaHeldUntil(quota, T0)).toBe(quota.throttled_until);
    expect(quotaHeldUntil(quota, at(end))).toBeUndefined();
  });

  it('outlives the breaker’s own transitions: an outage does not forget the throttle', () => {
    const slow = throttled(NEVER_OPENED, T0, SLOW);
    if (slow === undefined) throw new Error('a first throttle always writes');
    const open = opened(slow, FAILURE, at(100), SLOW, '9');
    expect(open).toMatchObject({ state: 'open', rate_factor: 0.5, throttled_at: T0.toISOString() });
    const claimed = open && probeClaimed(open, 'p', at(SLOW.probeIntervalMs + 100), SLOW);
    const closed = claimed && probeSucceeded(claimed, 'p', at(SLOW.probeIntervalMs + 110));
    expect(closed).toMatchObject({ state: 'closed', rate_factor: 0.5 });
  });
});

describe('the next probe an operator is shown (relays status, sending status; runbook §5a)', () => {
  it('is the time a probe may start, exactly while the relay is enabled and its breaker not closed: a drained relay is never probed, whatever its breaker kept', () => {
    const DRAIN = { reason: 'provider maintenance', at: T0.toISOString() };
    fc.assert(
      fc.property(
        fc.constantFrom('closed', 'open', 'half-open'),
        fc.boolean(),
        fc.integer({ min: 0, max: 10 * SETTINGS.probeIntervalMs }),
        (state, drained, laterMs) => {
          const open = opened(NEVER_OPENED, FAILURE, T0, SETTINGS, '1') as BreakerState;
          const breaker =
            state === 'closed'
              ? NEVER_OPENED
              : state === 'open'
                ? open
                : (probeClaimed(open, 'p', at(SETTINGS.probeIntervalMs / 1000), SETTINGS) as BreakerState);
          const gateOf = { breaker, pause: NOT_PAUSED, ...(drained ? { disabled: DRAIN } : {}) };
          const shown = nextProbeAt(gateOf);
          const now = new Date(T0.getTime() + laterMs);
          const decision = gateDecision(gateOf, undefined, now, SETTINGS);
          // A probe the gate lets start is one the operator was shown, and not before its time.
          if (decision.kind === 'probe') {
            expect(shown).toBeDefined();
            expect(now.getTime()).toBeGreaterThanOrEqual(Date.parse(shown ?? ''));
          }
          if (drained || state === 'closed') expect(shown).toBeUndefined();
          else expect(shown).toBe(breaker.probe_at);
        },
      ),
    );
  });
});
