import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  admitWebhookCopy,
  breakerAfterAttempt,
  ENDPOINT_BREAKER,
  type EndpointBreaker,
  isStall,
  openIntervalMs,
} from '../../lambdas/core/webhookEndpointBreaker.js';
import { type AttemptResult, WEBHOOK_TIMEOUT_MS } from '../../lambdas/core/webhooks.js';

const resultArb: fc.Arbitrary<AttemptResult> = fc.oneof(
  fc.integer({ min: 100, max: 599 }).map((statusCode) => ({ kind: 'response', statusCode }) as const),
  fc.constant({ kind: 'timeout' } as const),
  fc.constant({ kind: 'refused', reason: 'x' } as const),
  fc.constant({ kind: 'network', reason: 'ECONNRESET' } as const),
);
const unit = fc.double({ min: 0, max: 1, noNaN: true });
const time = fc.integer({ min: 0, max: 2 ** 42 });
const FAR = 2 ** 50;
/** The rule with the window far away and the spread drawn at 0.5. */
const admitCopy = (breaker: EndpointBreaker | undefined, nowMs: number) =>
  admitWebhookCopy({ breaker, nowMs, windowEndMs: FAR, random: () => 0.5 });
const breakerArb: fc.Arbitrary<EndpointBreaker | undefined> = fc.option(
  fc.record({
    stalls: fc.integer({ min: 1, max: 60 }),
    openUntilMs: time,
    probeStartedMs: fc.option(time, { nil: null }),
  }),
  { nil: undefined },
);

describe("a webhook endpoint's breaker (DESIGN §11: one endpoint's failures never delay another's)", () => {
  it('POSTs every copy of an endpoint that has not stalled, whatever the time', () => {
    fc.assert(
      fc.property(time, (now) => {
        expect(admitCopy(undefined, now).verdict).toBe('post');
      }),
    );
  });

  it('opens only on a failure that held the slot: a timeout or a slow failure, never a 2xx, never a fast failure', () => {
    fc.assert(
      fc.property(resultArb, fc.integer({ min: 0, max: WEBHOOK_TIMEOUT_MS }), (result, durationMs) => {
        const delivered = result.kind === 'response' && result.statusCode >= 200 && result.statusCode < 300;
        const expected =
          !delivered && (result.kind === 'timeout' || durationMs >= ENDPOINT_BREAKER.slowFailureMs);
        expect(isStall(result, durationMs)).toBe(expected);
        const after = breakerAfterAttempt(undefined, { result, durationMs }, 0, () => 0.5);
        expect(after !== undefined).toBe(expected);
      }),
    );
  });

  it('after a stall, defers every copy until the interval is over: between half and all of min(cap, base · 2^(n−1))', () => {
    fc.assert(
      fc.property(breakerArb, time, unit, (open, now, draw) => {
        // The first stall, or the probe's (the one POST of an open breaker, started when it was admitted).
        const before = open && { ...open, probeStartedMs: now };
        const after = breakerAfterAttempt(
          before,
          { result: { kind: 'timeout' }, durationMs: 0 },
          now,
          () => draw,
        );
        if (after === undefined) throw new Error('a timeout must open the breaker');
        const stalls = (before?.stalls ?? 0) + 1;
        expect(after.stalls).toBe(stalls);
        const ceiling = Math.min(ENDPOINT_BREAKER.capOpenMs, ENDPOINT_BREAKER.baseOpenMs * 2 ** (stalls - 1));
        expect(after.openUntilMs - now).toBeGreaterThanOrEqual(ceiling / 2 - 1);
        expect(after.openUntilMs - now).toBeLessThanOrEqual(ENDPOINT_BREAKER.capOpenMs);
        for (const at of [now, now + Math.floor((after.openUntilMs - now) / 2), after.openUntilMs - 1])
          expect(admitCopy(after, at).verdict).toBe('defer');
      }),
    );
  });

  it('counts a stall in a row only once per interval: a POST already in flight when the breaker opened stalls without lengthening it', () => {
    // Chaos run, seed 4901: a restart re-queued 1,526 copies, a function POSTed them as fast as it
    // could, and the ~10 stalled POSTs in flight when the first stall ended each counted one more,
    // opening the breaker for the 600 s cap within 8 s (DESIGN §11: the probe's stall doubles it).
    fc.assert(
      fc.property(
        breakerArb,
        fc.integer({ min: 1, max: WEBHOOK_TIMEOUT_MS }),
        fc.integer({ min: 0, max: WEBHOOK_TIMEOUT_MS }),
        (open, inFlightMs, sinceProbeMs) => {
          fc.pre(open !== undefined);
          // It started before the probe (or with no probe started yet): it was not the probe.
          const now = open.openUntilMs + sinceProbeMs;
          const before = {
            ...open,
            probeStartedMs: open.probeStartedMs === null ? null : now - sinceProbeMs,
          };
          const started = (before.probeStartedMs ?? now) - inFlightMs;
          const after = breakerAfterAttempt(
            before,
            { result: { kind: 'timeout' }, durationMs: now - started },
            now,
            () => 0.5,
          );
          expect(after).toEqual(before);
        },
      ),
    );
  });

  it('closes on any POST that did not stall: the next copy is POSTed at once', () => {
    fc.assert(
      fc.property(breakerArb, resultArb, time, (before, result, now) => {
        fc.pre(!isStall(result, 0));
        const after = breakerAfterAttempt(before, { result, durationMs: 0 }, now, () => 0.5);
        expect(after).toBeUndefined();
        expect(admitCopy(after, now).verdict).toBe('post');
      }),
    );
  });

  it('lets one probe through once the interval is over and defers the rest while it is in flight', () => {
    fc.assert(
      fc.property(
        breakerArb,
        fc.array(fc.integer({ min: 0, max: ENDPOINT_BREAKER.probeGiveUpMs - 1 }), {
          minLength: 1,
          maxLength: 30,
        }),
        (before, offsets) => {
          fc.pre(before !== undefined);
          let state: EndpointBreaker | undefined = { ...before, probeStartedMs: null };
          const start = state.openUntilMs;
          const verdicts = [...offsets]
            .sort((a, b) => a - b)
            .map((offset) => {
              const admission = admitCopy(state, start + offset);
              state = admission.breaker;
              return admission.verdict;
            });
          expect(verdicts.filter((verdict) => verdict === 'post')).toHaveLength(1);
          expect(verdicts[0]).toBe('post');
        },
      ),
    );
  });

  it('never defers for ever: from any state, a copy is POSTed once the interval and any probe give-up are over', () => {
    fc.assert(
      fc.property(breakerArb, time, (breaker, now) => {
        const due = Math.max(
          now,
          breaker?.openUntilMs ?? 0,
          (breaker?.probeStartedMs ?? -Infinity) + ENDPOINT_BREAKER.probeGiveUpMs,
        );
        expect(admitCopy(breaker, due).verdict).toBe('post');
        // And that is never more than the cap and a give-up after the stall that set it.
        if (breaker)
          expect(openIntervalMs(breaker.stalls, () => 1)).toBeLessThanOrEqual(ENDPOINT_BREAKER.capOpenMs);
      }),
    );
  });

  it('brings a deferred copy back once a POST may go again, within the spread, never past the window', () => {
    fc.assert(
      fc.property(breakerArb, time, time, unit, (breaker, now, windowEnd, draw) => {
        const admission = admitWebhookCopy({
          breaker,
          nowMs: now,
          windowEndMs: windowEnd,
          random: () => draw,
        });
        if (admission.verdict !== 'defer') return;
        expect(now).toBeLessThan(windowEnd);
        expect(admission.retryAtMs).toBeGreaterThan(now - 1);
        expect(admission.retryAtMs).toBeLessThanOrEqual(windowEnd);
        const free = Math.max(
          admission.breaker.openUntilMs,
          admission.breaker.probeStartedMs === null
            ? 0
            : admission.breaker.probeStartedMs + WEBHOOK_TIMEOUT_MS,
        );
        expect(admission.retryAtMs).toBeLessThanOrEqual(Math.max(free, now) + ENDPOINT_BREAKER.deferSpreadMs);
      }),
    );
  });

  it('ends a delivery unsent only once its retry window is over, and only while its endpoint stalls', () => {
    fc.assert(
      fc.property(breakerArb, time, time, (breaker, now, windowEnd) => {
        const admission = admitWebhookCopy({
          breaker,
          nowMs: now,
          windowEndMs: windowEnd,
          random: () => 0.5,
        });
        if (admission.verdict === 'fail') {
          expect(now).toBeGreaterThanOrEqual(windowEnd);
          expect(breaker).toBeDefined();
        }
        if (breaker === undefined) expect(admission.verdict).toBe('post');
      }),
    );
  });

  it('bounds what an endpoint that always stalls costs one function: one timeout per interval, the intervals doubling to the cap', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 1, maxLength: 400 }),
        unit,
        (gaps, draw) => {
          // Copies of the endpoint arrive one after another on one function (its batches run in turn).
          let now = 0;
          let state: EndpointBreaker | undefined;
          const posts: number[] = [];
          for (const gap of gaps) {
            now += gap;
            const admission = admitCopy(state, now);
            state = admission.breaker;
            if (admission.verdict === 'defer') continue;
            posts.push(now);
            now += WEBHOOK_TIMEOUT_MS;
            state = breakerAfterAttempt(
              state,
              { result: { kind: 'timeout' }, durationMs: WEBHOOK_TIMEOUT_MS },
              now,
              () => draw,
            );
          }
          // Between the end of the k-th stalled POST and the next POST: at least half the k-th interval.
          for (let k = 1; k < posts.length; k++) {
            const gap = (posts[k] ?? 0) - ((posts[k - 1] ?? 0) + WEBHOOK_TIMEOUT_MS);
            const ceiling = Math.min(ENDPOINT_BREAKER.capOpenMs, ENDPOINT_BREAKER.baseOpenMs * 2 ** (k - 1));
            expect(gap).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
          }
        },
      ),
    );
  });
});
