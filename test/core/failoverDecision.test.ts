import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BREAKER_STATE,
  type BreakerState,
  type GateWaitCause,
  gateDecision,
  NEVER_OPENED,
  NOT_PAUSED,
  type SendingGateState,
  throttled,
} from '../../lambdas/core/relayBreaker.js';
import { failoverDecision, type RelayAdmission, relayGauges, relayInUse } from '../../lambdas/core/relays.js';

/**
 * DESIGN §15: a copy goes to the first relay whose breaker is closed, skipping a relay the operator
 * disabled (the drain); a pause or a throttle holds it; when no relay takes it, it waits for the
 * soonest probe. Properties over any answers of any number of relays.
 */

const admission: fc.Arbitrary<RelayAdmission> = fc.oneof(
  fc.record({
    kind: fc.constant('send' as const),
    rateFactor: fc.double({ min: 1 / 64, max: 1, noNaN: true }),
  }),
  fc.record({
    kind: fc.constant('wait' as const),
    seconds: fc.integer({ min: 1, max: 600 }),
    cause: fc.constantFrom(
      'relay-unavailable',
      'relay-disabled',
      'quota-held',
      'paused',
      'throttled',
    ) as fc.Arbitrary<GateWaitCause>,
  }),
);
const skipped = (answer: RelayAdmission) =>
  answer.kind === 'wait' &&
  (answer.cause === 'relay-unavailable' ||
    answer.cause === 'relay-disabled' ||
    answer.cause === 'quota-held');

describe('failoverDecision (which relay a copy leaves through)', () => {
  it('sends through the first relay that lets it, when every relay before it is unavailable or disabled', () => {
    fc.assert(
      fc.property(fc.array(admission, { minLength: 1, maxLength: 6 }), (answers) => {
        const decision = failoverDecision(answers, answers.length);
        const first = answers.findIndex((answer) => !skipped(answer));
        if (first === -1) {
          expect(decision?.kind).toBe('wait');
          return;
        }
        const stop = answers[first];
        if (stop?.kind === 'send')
          expect(decision).toEqual({ kind: 'send', index: first, rateFactor: stop.rateFactor });
        else expect(decision).toEqual(stop);
      }),
    );
  });

  it('never sends through a relay that is unavailable or disabled', () => {
    fc.assert(
      fc.property(fc.array(admission, { minLength: 1, maxLength: 6 }), (answers) => {
        const decision = failoverDecision(answers, answers.length);
        if (decision?.kind === 'send') expect(skipped(answers[decision.index] as RelayAdmission)).toBe(false);
      }),
    );
  });

  it('asks the next relay only while every relay so far passed the copy on', () => {
    fc.assert(
      fc.property(
        fc.array(admission, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 6 }),
        (answers, extra) => {
          const count = answers.length + extra;
          const decision = failoverDecision(answers, count);
          expect(decision === undefined).toBe(answers.every(skipped));
        },
      ),
    );
  });

  it('with no relay taking the copy, it comes back at the soonest probe of an unavailable relay', () => {
    const skip = fc.record({
      kind: fc.constant('wait' as const),
      seconds: fc.integer({ min: 1, max: 600 }),
      cause: fc.constantFrom('relay-unavailable', 'relay-disabled') as fc.Arbitrary<
        'relay-unavailable' | 'relay-disabled'
      >,
    });
    fc.assert(
      fc.property(fc.array(skip, { minLength: 1, maxLength: 6 }), (answers) => {
        const decision = failoverDecision(answers, answers.length);
        const unavailable = answers.filter((answer) => answer.cause === 'relay-unavailable');
        const pool = unavailable.length > 0 ? unavailable : answers;
        expect(decision).toEqual({
          kind: 'wait',
          seconds: Math.min(...pool.map((answer) => answer.seconds)),
          cause: pool[0]?.cause,
        });
      }),
    );
  });
});

describe('failoverDecision with a relay whose daily quota is spent (DESIGN §5 "Rate", §15)', () => {
  const held = (seconds: number): RelayAdmission => ({ kind: 'wait', seconds, cause: 'quota-held' });
  const settings = { probeIntervalMs: 5000, probeTimeoutMs: 15_000, quotaHoldMs: 300_000 };
  const repliedAt = new Date('2026-12-02T11:00:00.000Z');
  /** The gate's answer `elapsedMs` into the hold a quota reply started (core/relayBreaker.ts). */
  const quotaSpent = (elapsedMs: number): RelayAdmission => {
    const breaker = throttled(NEVER_OPENED, repliedAt, settings, 'quota') ?? NEVER_OPENED;
    const now = new Date(repliedAt.getTime() + elapsedMs);
    const decision = gateDecision({ breaker, pause: NOT_PAUSED }, undefined, now, settings);
    return decision.kind === 'probe' ? { kind: 'wait', seconds: 1, cause: 'relay-unavailable' } : decision;
  };

  it('a copy never waits for a quota-held relay while a later relay in order is available', () => {
    fc.assert(
      fc.property(
        fc.array(admission, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 0, max: 299_999 }),
        (answers, at, elapsedMs) => {
          const index = Math.min(at, answers.length - 1);
          const relays = answers.map((answer, i) => (i === index ? quotaSpent(elapsedMs) : answer));
          const later = relays.findIndex((answer, i) => i > index && answer.kind === 'send');
          const before = relays.slice(0, index).every(skipped);
          const decision = failoverDecision(relays, relays.length);
          if (before && later !== -1 && relays.slice(index + 1, later).every(skipped)) {
            expect(decision).toMatchObject({ kind: 'send', index: later });
          }
          expect(decision?.kind === 'send' && decision.index === index).toBe(false);
        },
      ),
    );
  });

  it('with one relay, the copy waits for the hold as before', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 299_999 }), (elapsedMs) => {
        const answer = quotaSpent(elapsedMs);
        expect(answer.kind).toBe('wait');
        expect(failoverDecision([answer], 1)).toEqual(answer);
      }),
    );
  });

  it('with no relay taking the copy, it comes back at the soonest end of a hold or a probe', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 600 }), fc.integer({ min: 1, max: 600 }), (quota, probe) => {
        const decision = failoverDecision(
          [held(quota), { kind: 'wait', seconds: probe, cause: 'relay-unavailable' }],
          2,
        );
        expect(decision).toMatchObject({ kind: 'wait', seconds: Math.min(quota, probe) });
      }),
    );
  });
});

describe('gateDecision after a daily quota reply', () => {
  const settings = { probeIntervalMs: 5000, probeTimeoutMs: 15_000, quotaHoldMs: 300_000 };
  const now = new Date('2026-12-02T11:00:00.000Z');
  const gate = (breaker: BreakerState): SendingGateState => ({ breaker, pause: NOT_PAUSED });

  it('says quota-held for the hold, throttled for a rate hold, and sends once it is over', () => {
    const quota = throttled(NEVER_OPENED, now, settings, 'quota');
    const rate = throttled(NEVER_OPENED, now, settings, 'rate');
    expect(quota && gateDecision(gate(quota), undefined, now, settings)).toMatchObject({
      cause: 'quota-held',
    });
    expect(rate && gateDecision(gate(rate), undefined, now, settings)).toMatchObject({ cause: 'throttled' });
    const after = new Date(now.getTime() + 300_001);
    expect(quota && gateDecision(gate(quota), undefined, after, settings).kind).toBe('send');
    // A rate throttle during the hold does not make it a rate hold.
    const both = quota && throttled(quota, new Date(now.getTime() + 5000), settings, 'rate');
    expect(
      both && gateDecision(gate(both), undefined, new Date(now.getTime() + 6000), settings),
    ).toMatchObject({
      cause: 'quota-held',
    });
  });
});

describe('gateDecision for a disabled relay', () => {
  const settings = { probeIntervalMs: 5000, probeTimeoutMs: 15_000 };
  const breaker: fc.Arbitrary<BreakerState> = fc.record({
    state: fc.constantFrom(BREAKER_STATE.closed, BREAKER_STATE.open, BREAKER_STATE.halfOpen),
    version: fc.integer({ min: 0, max: 9 }),
    probe_at: fc.constantFrom('2026-12-02T10:00:00.000Z', '2026-12-02T12:00:00.000Z'),
  });

  it('is never sent to nor probed, whatever its breaker; a pause still holds before it', () => {
    fc.assert(
      fc.property(
        breaker,
        fc.boolean(),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        (state, paused, spread) => {
          const gate: SendingGateState = {
            breaker: state,
            pause: paused
              ? { version: 1, kinds: {}, all: { reason: 'x', at: '2026-12-02T09:00:00.000Z', except: [] } }
              : NOT_PAUSED,
            disabled: { reason: 'drain', at: '2026-12-02T09:00:00.000Z' },
          };
          const decision = gateDecision(
            gate,
            undefined,
            new Date('2026-12-02T11:00:00.000Z'),
            settings,
            spread,
          );
          expect(decision.kind).toBe('wait');
          if (decision.kind === 'wait') expect(decision.cause).toBe(paused ? 'paused' : 'relay-disabled');
        },
      ),
    );
  });
});

describe('relayInUse (where mail leaves now, pauses aside)', () => {
  const settings = { probeIntervalMs: 5000, probeTimeoutMs: 15_000 };
  const relay = fc.record({
    breaker: fc.record({
      state: fc.constantFrom(BREAKER_STATE.closed, BREAKER_STATE.open, BREAKER_STATE.halfOpen),
      version: fc.constant(1),
      probe_at: fc.constantFrom('2026-12-02T10:00:00.000Z', '2026-12-02T12:00:00.000Z'),
    }),
    disabled: fc.option(fc.constant({ reason: 'drain', at: '2026-12-02T09:00:00.000Z' }), { nil: undefined }),
  });

  it('is the first relay whose breaker is closed and that is not disabled; none, undefined', () => {
    fc.assert(
      fc.property(fc.array(relay, { minLength: 1, maxLength: 5 }), (gates) => {
        const expected = gates.findIndex(
          (gate) => gate.breaker.state === BREAKER_STATE.closed && gate.disabled === undefined,
        );
        const inUse = relayInUse(gates, new Date('2026-12-02T11:00:00.000Z'), settings);
        expect(inUse).toBe(expected === -1 ? undefined : expected);
      }),
    );
  });

  it('a relay whose gate could not be read takes no mail, as a sender that cannot read its gate sends nothing', () => {
    fc.assert(
      fc.property(fc.array(fc.option(relay, { nil: undefined }), { minLength: 1, maxLength: 5 }), (gates) => {
        const expected = gates.findIndex(
          (gate) => gate?.breaker.state === BREAKER_STATE.closed && gate.disabled === undefined,
        );
        const inUse = relayInUse(gates, new Date('2026-12-02T11:00:00.000Z'), settings);
        expect(inUse).toBe(expected === -1 ? undefined : expected);
      }),
    );
  });
});

/**
 * The gauges the relay alarms watch (docs/runbook.md §5, §5a; DESIGN §15 "a metric and an alarm say
 * when mail is leaving through anything but the first relay"), each stated from what its alarm says,
 * not from how it is computed. A relay takes mail while it is enabled and its breaker closed. A
 * drained relay is the operator's doing and is never probed, so its breaker says nothing.
 */
describe('relayGauges (what the relay alarms watch)', () => {
  const settings = { probeIntervalMs: 5000, probeTimeoutMs: 15_000 };
  const now = new Date('2026-12-02T11:00:00.000Z');
  const relay = fc.record({
    breaker: fc.record({
      state: fc.constantFrom(BREAKER_STATE.closed, BREAKER_STATE.open, BREAKER_STATE.halfOpen),
      version: fc.constant(1),
      probe_at: fc.constantFrom('2026-12-02T10:00:00.000Z', '2026-12-02T12:00:00.000Z'),
    }),
    disabled: fc.option(fc.constant({ reason: 'drain', at: '2026-12-02T09:00:00.000Z' }), { nil: undefined }),
  });
  const relays = fc.array(relay, { minLength: 1, maxLength: 5 });
  type Gate = Pick<SendingGateState, 'breaker' | 'disabled'>;
  const takesMail = (gate: Gate) =>
    gate.disabled === undefined && gate.breaker.state === BREAKER_STATE.closed;

  it('failover on: the first relay is disabled or its breaker not closed, and another relay takes mail', () => {
    fc.assert(
      fc.property(relays, (gates) => {
        if (relayGauges(gates, now, settings).failover !== 1) return;
        expect(takesMail(gates[0] as Gate)).toBe(false);
        expect(gates.slice(1).some(takesMail)).toBe(true);
      }),
    );
  });

  it('failover off while some relay takes mail: mail leaves through the first', () => {
    fc.assert(
      fc.property(relays, (gates) => {
        if (relayGauges(gates, now, settings).failover !== 0 || !gates.some(takesMail)) return;
        expect(takesMail(gates[0] as Gate)).toBe(true);
      }),
    );
  });

  it("a disabled relay's unavailable gauge is 0, whatever its breaker", () => {
    fc.assert(
      fc.property(relays, (gates) => {
        const { unavailable } = relayGauges(gates, now, settings);
        gates.forEach((gate, index) => {
          if (gate.disabled !== undefined) expect(unavailable[index]).toBe(0);
        });
      }),
    );
  });

  it("an enabled relay's unavailable gauge is on while its breaker holds its mail (open or half-open), off once closed", () => {
    fc.assert(
      fc.property(relays, (gates) => {
        const { unavailable } = relayGauges(gates, now, settings);
        expect(unavailable).toHaveLength(gates.length);
        gates.forEach((gate, index) => {
          if (gate.disabled === undefined) expect(unavailable[index] === 1).toBe(!takesMail(gate));
        });
      }),
    );
  });

  it('no relay takes mail: an unavailable gauge is on unless every relay is disabled (`relays disable --force`), when no relay alarm is', () => {
    fc.assert(
      fc.property(relays, (gates) => {
        if (gates.some(takesMail)) return;
        const { unavailable, failover } = relayGauges(gates, now, settings);
        expect(failover).toBe(0);
        const everyDisabled = gates.every((gate) => gate.disabled !== undefined);
        expect(unavailable.includes(1)).toBe(!everyDisabled);
      }),
    );
  });

  it('with gates that could not be read: no gauge for them, and a failover gauge only when it holds whatever they are', () => {
    const closed = { breaker: { state: BREAKER_STATE.closed, version: 1 }, disabled: undefined };
    const open = {
      breaker: { state: BREAKER_STATE.open, version: 1, probe_at: '2026-12-02T12:00:00.000Z' },
      disabled: undefined,
    };
    fc.assert(
      fc.property(fc.array(fc.option(relay, { nil: undefined }), { minLength: 1, maxLength: 5 }), (gates) => {
        const gauges = relayGauges(gates, now, settings);
        expect(gauges.unavailable.map((value) => value === undefined)).toEqual(
          gates.map((gate) => gate === undefined),
        );
        const unread = gates.flatMap((gate, index) => (gate === undefined ? [index] : []));
        // The failover gauge of every completion of the unread gates.
        const answers = new Set<number>();
        for (let bits = 0; bits < 2 ** unread.length; bits++) {
          const complete = gates.map((gate, index) => {
            const position = unread.indexOf(index);
            return position === -1 ? gate : (bits >> position) & 1 ? closed : open;
          });
          answers.add(relayGauges(complete, now, settings).failover as number);
        }
        if (unread.length === 0) expect(gauges.failover).toBeDefined();
        if (gauges.failover !== undefined) expect([...answers]).toEqual([gauges.failover]);
      }),
    );
  });
});
