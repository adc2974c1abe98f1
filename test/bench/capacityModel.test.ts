import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  capacityTables,
  ceiling,
  demand,
  INLINE,
  JOURNEY_IDS,
  JOURNEYS,
  type JourneyId,
  type LimitKind,
  limitIds,
  limitOf,
  rate,
  shardsFor,
} from '../../bench/capacityModel.js';

/**
 * docs/capacity.md says where 10,000 messages/s binds (DESIGN §4). Its tables come from
 * bench/capacityModel.ts; these tests fail when the page and the model part, when a number the
 * model copies from inline code changes under it, and when the page's verdict stops following
 * from the model.
 */

const page = readFileSync(new URL('../../docs/capacity.md', import.meta.url), 'utf8');
const pageLines = new Set(page.split('\n'));
/** The page's prose on one line, so a phrase may wrap. */
const prose = page.replace(/\s+/g, ' ');
const source = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** A ceiling as the page's prose rounds it: two significant figures. */
const approx = (value: number) => Number(value.toPrecision(2)).toLocaleString('en-US');

const TARGET = 10_000;
/** What no quota raise or prop moves: the code's own limits, AWS's hard ones and the partitions. */
const NOT_RAISABLE: readonly LimitKind[] = ['code', 'hard', 'design', 'hot key'];

function firstNotRaisable(journey: JourneyId): { id: string; at: number } {
  const [first] = limitIds()
    .filter((id) => NOT_RAISABLE.includes(limitOf(id).kind))
    .map((id) => ({ id, at: ceiling(JOURNEYS[journey], id) }))
    .sort((a, b) => a.at - b.at);
  if (first === undefined) throw new Error(`${journey}: no limit`);
  return first;
}

describe('docs/capacity.md follows the capacity model', () => {
  it.each(Object.entries(capacityTables()))('the page carries every row of the %s table', (_name, lines) => {
    expect(lines.length).toBeGreaterThan(2);
    expect(lines.filter((line) => !pageLines.has(line))).toEqual([]);
  });

  it('its verdict: after quota raises the immediate, templated and webhook paths (and a batch) hold 10,000/s', () => {
    const holding = JOURNEY_IDS.filter((id) => firstNotRaisable(id).at >= TARGET);
    expect(holding).toEqual(['immediate', 'templated', 'webhooks', 'batch']);
    expect(page).toContain('the immediate, templated and webhook paths hold (so would a batch enqueue)');
  });

  it('its verdict names where each other path stops, as the model computes it', () => {
    const deferred = Math.max(firstNotRaisable('deferred').at, firstNotRaisable('scheduled').at);
    const grouped = firstNotRaisable('grouped').at;
    const raising = firstNotRaisable('groupedRaising').at;
    expect(prose).toContain(`deferred mail stops at ~${approx(deferred)}/s`);
    expect(prose).toContain(
      `grouped ones at ${approx(grouped)}/s per group when its messages share a version`,
    );
    expect(prose).toContain(`, ${approx(raising)} version raises/s`);
  });

  it("its verdict's figures are the decisions' (0097, 0098)", () => {
    // 0098: a batch of early copies lasts ~1.23 s (Monte Carlo), so the event source's 1,000
    // batches carry ~8,100 deferred msg/s; the wait held a lane before (~4,250).
    const deferred = Math.max(firstNotRaisable('deferred').at, firstNotRaisable('scheduled').at);
    expect(firstNotRaisable('deferred').id).toBe('senderEventSource');
    expect(approx(deferred)).toBe('8,100');
    // 0097: at the head's version 0.5 R (enqueue, eventual) + 1 R (sender, after the claim) on one
    // item, 3,000 R / 1.5 R; a raise is 2 W in the transaction, 1,000 W / 2 W.
    expect(firstNotRaisable('grouped')).toEqual({ id: 'groupHead.read', at: 2_000 });
    expect(firstNotRaisable('groupedRaising')).toEqual({ id: 'groupHead.write', at: 500 });
  });

  it('with default quotas and props no path reaches 10,000/s', () => {
    for (const id of JOURNEY_IDS) {
      const lowest = Math.min(...limitIds().map((limit) => ceiling(JOURNEYS[id], limit)));
      expect(lowest, id).toBeLessThan(TARGET);
    }
    expect(page).toContain('With default quotas and props no path reaches 10,000/s.');
  });
});

describe('the numbers the model copies from inline code', () => {
  it('still stand where the code keeps them', () => {
    expect(source('lambdas/sender/createSenderHandler.ts')).toContain(
      `deps.concurrency ?? ${INLINE.senderCopiesAtOnce}`,
    );
    expect(source('lambdas/sender/relayGate.ts')).toContain(`cacheMs ?? ${INLINE.gateCacheSeconds * 1000}`);
    expect(source('lambdas/adapters/EventBridgeBus.ts')).toContain(`PUT_EVENTS_MAX = ${INLINE.eventsPerPut}`);
    expect(source('lambdas/adapters/smtpCredentials.ts')).toContain(
      `${INLINE.secretCacheSeconds / 60} * 60_000`,
    );
    expect(source('lambdas/sender/createSenderHandler.ts')).toContain(
      `maxEarlyWaitMs = ${INLINE.maxEarlyWaitSeconds * 1000}`,
    );
  });
});

describe('the arithmetic', () => {
  const journeys = fc.constantFrom(...JOURNEY_IDS);
  const limits = fc.constantFrom(...limitIds());

  it('a limit binds where its load reaches its capacity, and only there', () => {
    fc.assert(
      fc.property(
        journeys,
        limits,
        fc.double({ min: 0.01, max: 100, noNaN: true }),
        (journey, id, factor) => {
          const perMessage = demand(JOURNEYS[journey]).limits[id] ?? 0;
          const at = ceiling(JOURNEYS[journey], id);
          if (perMessage === 0) return at === Number.POSITIVE_INFINITY;
          const load = perMessage * at * factor;
          const capacity = limitOf(id).capacity;
          return factor <= 1 ? load <= capacity * (1 + 1e-9) : load > capacity;
        },
      ),
    );
  });

  it('the shard count it asks for is the smallest doubling that keeps each shard within a partition', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1, 16, 32, 64),
        fc.double({ min: 0.001, max: 1000, noNaN: true }),
        (shards, share) => {
          const needed = shardsFor(shards, share);
          const perShard = (count: number) => share * (shards / count);
          return (
            Number.isInteger(Math.log2(needed / shards)) &&
            perShard(needed) <= 1 &&
            (needed === shards || perShard(needed / 2) > 1)
          );
        },
      ),
    );
  });

  it('prints a rate to three significant figures', () => {
    fc.assert(
      fc.property(fc.double({ min: 1, max: 1e8, noNaN: true }), (value) => {
        const printed = Number(rate(value).replaceAll(',', ''));
        return Math.abs(printed - value) <= value * 0.005;
      }),
    );
    expect(rate(Number.POSITIVE_INFINITY)).toBe('—');
  });
});
