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
  keyLimitId,
  type LimitKind,
  limitIds,
  limitOf,
  PARTITION,
  RESCUE,
  rate,
  shardsFor,
  sweeperRescue,
  WARM_AT_10K,
} from '../../bench/capacityModel.js';
import { LIMITS } from '../../lambdas/core/requestLimits.js';

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

  it('its verdict: after quota raises and props every path holds 10,000/s but one group whose every message raises', () => {
    const holding = JOURNEY_IDS.filter((id) => firstNotRaisable(id).at >= TARGET);
    expect(holding).toEqual(JOURNEY_IDS.filter((id) => id !== 'groupedRaising'));
    expect(prose).toContain(
      'After quota raises and props (§6) every path holds 10,000/s but one: a single group whose every message raises its version',
    );
  });

  it('its verdict names where that path stops, as the model computes it', () => {
    const raising = firstNotRaisable('groupedRaising');
    expect(raising).toEqual({ id: 'groupHead.write', at: 500 });
    expect(prose).toContain(`takes ${approx(raising.at)} version raises/s whatever the props`);
    expect(prose).toContain(`≥ ${TARGET / raising.at} groups`);
  });

  it("its verdict's figures are the decisions' (0098, 0103, 0104)", () => {
    // 0098: a batch of early copies lasts ~1.23 s (Monte Carlo), so 1,000 batches at once (standard
    // mode's top) carry ~8,100 deferred msg/s.
    const deferred = Math.max(
      ceiling(JOURNEYS.deferred, 'senderEventSource'),
      ceiling(JOURNEYS.scheduled, 'senderEventSource'),
    );
    expect(approx(deferred)).toBe('8,100');
    expect(prose).toContain(`deferred mail stopped at ~${approx(deferred)}/s`);
    // 0103: provisioned mode, 10 batches a poller: the worst path's batches at 10,000/s over 10.
    const batches =
      Math.max(...JOURNEY_IDS.map((id) => demand(JOURNEYS[id]).limits.senderEventSource ?? 0)) * TARGET;
    expect(prose).toContain(`${Math.ceil(batches / 10)} pollers`);
    // 0104: at the head's version 0.5 R + 1 R a message on the replica read, 3,000 R/s each: one
    // group takes 2,000/s a replica, so 10,000/s needs 5.
    expect(ceiling(JOURNEYS.grouped, 'groupHeadReplicas')).toBe(2_000);
    expect(prose).toContain(`one group's messages at one version stopped at ${approx(2_000)}/s`);
    expect(prose).toContain(`\`groupHeadReplicas\` ${Math.ceil(TARGET / 2_000)}`);
  });

  it("one tenant, one BCC on every message: that address's entry takes at most a partition's reads", () => {
    const reads = (demand(JOURNEYS.bcc).limits[keyLimitId('suppressionEntry', 'read')] ?? 0) * TARGET;
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThanOrEqual(PARTITION.readUnits);
    // Cached per warm sender: as many as the plain path keeps busy at 10,000/s.
    expect(Math.round(demand(JOURNEYS.immediate).senderSeconds * TARGET)).toBe(WARM_AT_10K.sender);
  });

  it("its prose names AWS's first limits on the plain path in the order the model finds them", () => {
    // How the sentence calls each limit that can come first.
    const called: Record<string, string> = {
      tableWrites: 'table writes',
      lambdaConcurrency: 'Lambda concurrency',
      byStatusWrites: '`by_status` index writes',
      lambdaInvocations: 'Lambda invocations',
    };
    const first = limitIds()
      .filter((id) => (['quota', 'hard'] as LimitKind[]).includes(limitOf(id).kind))
      .map((id) => ({ id, at: ceiling(JOURNEYS.immediate, id) }))
      .sort((a, b) => a.at - b.at)
      .slice(0, 4);
    const sentence = /Among AWS's limits [^.]*\./.exec(prose)?.[0] ?? '';
    // Each by its name, then its ceiling as the tables print it, in the model's order.
    const found = first.map(({ id, at }) => {
      const name = sentence.indexOf(called[id] ?? id);
      return { id, named: name >= 0, at: name >= 0 ? sentence.indexOf(`(${rate(at)}`, name) : -1 };
    });
    expect({
      found: found.map(({ id, named, at }) => ({ id, named, withCeiling: at >= 0 })),
      sentence,
    }).toEqual({
      found: first.map(({ id }) => ({ id, named: true, withCeiling: true })),
      sentence,
    });
    const positions = found.map(({ at }) => at);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  it('with default quotas and props no path reaches 10,000/s', () => {
    for (const id of JOURNEY_IDS) {
      const lowest = Math.min(...limitIds().map((limit) => ceiling(JOURNEYS[id], limit)));
      expect(lowest, id).toBeLessThan(TARGET);
    }
    expect(page).toContain('With default quotas and props no path reaches 10,000/s.');
  });
});

describe("the sweeper's rescue (DESIGN §5a at 10,000/s)", () => {
  it('is paced so that a run never takes a `due` shard past the 75 % the layout allows, with the paths at 10,000/s', () => {
    const r = sweeperRescue();
    expect((r.normal + r.stamps + r.sends) / PARTITION.writeUnits).toBeLessThan(0.75);
    // The pace binds, not the stamps' latency: the run's rate does not rest on how fast DynamoDB answers.
    expect(r.byLatency).toBeGreaterThan(r.perShard);
  });

  it('drains lost messages a run at a time, as the page says', () => {
    const r = sweeperRescue();
    expect(r.runsFor(r.perRun)).toBe(1);
    expect(r.runsFor(r.perRun + 1)).toBe(2);
    expect(prose).toContain(`${rate(RESCUE.lost)} lost messages`);
    expect(prose).toContain(`${r.runsFor(RESCUE.lost)} runs`);
  });
});

describe('the batch journey', () => {
  it('is the built POST /v1/messages/batch (DESIGN §3a): one request for as many messages as it takes, labelled as built', () => {
    expect(JOURNEYS.batch.apiRequests).toBe(1 / LIMITS.maxBatchMessages);
    expect(JOURNEYS.batch.label).not.toMatch(/not built/);
    expect(page).not.toMatch(/batch \(not built\)/);
  });
});

describe('the numbers the model copies from inline code', () => {
  it('still stand where the code keeps them', () => {
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
