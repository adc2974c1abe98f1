import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeShardReads, type ShardPosition, type ShardRead } from '../../lambdas/core/listPages.js';

/** Shards as an index holds them: each its sort keys; a read gives the newest `limit` after a position. */
function read(shard: readonly string[], position: ShardPosition, limit: number): ShardRead {
  if (position.kind === 'done') return { keys: [], more: false };
  const after = [...shard]
    .sort()
    .reverse()
    .filter((key) => position.kind === 'start' || key < position.sortKey);
  return { keys: after.slice(0, limit), more: after.length > limit };
}

const key = (n: number) => `k${String(n).padStart(6, '0')}`;

/** Pages through `shards` until every position is done; `between` may change them after each page. */
function pageThrough(
  shards: string[][],
  limit: number,
  between: (page: number, listed: readonly string[]) => void = () => undefined,
): string[] {
  const listed: string[] = [];
  let positions: ShardPosition[] = shards.map(() => ({ kind: 'start' }));
  for (let page = 0; page < 10_000; page++) {
    const reads = shards.map((shard, i) => read(shard, positions[i] ?? { kind: 'start' }, limit));
    const next = mergeShardReads(reads, positions, limit);
    listed.push(...next.entries.map((entry) => entry.sortKey));
    positions = next.positions;
    if (positions.every((position) => position.kind === 'done')) return listed;
    between(page, listed);
  }
  throw new Error('the listing never ended');
}

/** Entry n goes to shard `placements[n] % shardCount`. */
function spread(shardCount: number, placements: readonly number[]): string[][] {
  const shards: string[][] = Array.from({ length: shardCount }, () => []);
  for (const [n, place] of placements.entries()) shards[place % shardCount]?.push(key(n));
  return shards;
}

const layout = fc.record({
  shardCount: fc.integer({ min: 1, max: 8 }),
  placements: fc.array(fc.nat(), { maxLength: 60 }),
  limit: fc.integer({ min: 1, max: 10 }),
});

describe('mergeShardReads: one page of a listing over index shards (DESIGN §3, §4; decision 0247)', () => {
  it('lists every entry once, newest first, whatever the shards and the limit', () => {
    fc.assert(
      fc.property(layout, ({ shardCount, placements, limit }) => {
        const shards = spread(shardCount, placements);
        const all = shards.flat().sort().reverse();
        expect(pageThrough(shards, limit)).toEqual(all);
      }),
    );
  });

  it('never lists an entry that came in above the cursor after page 1, and loses none that was there', () => {
    fc.assert(
      fc.property(
        layout,
        fc.array(fc.nat(), { maxLength: 20 }),
        ({ shardCount, placements, limit }, arrivals) => {
          const shards = spread(shardCount, placements);
          const existing = shards.flat().sort().reverse();
          let next = 100_000;
          const listed = pageThrough(shards, limit, (page) => {
            const place = arrivals[page];
            if (place !== undefined) shards[place % shardCount]?.push(key(next++));
          });
          expect(listed).toEqual(existing);
        },
      ),
    );
  });

  it('leaves out an entry that leaves the listing before its page, and lists the rest once', () => {
    fc.assert(
      fc.property(
        layout,
        fc.array(fc.nat(), { maxLength: 20 }),
        ({ shardCount, placements, limit }, leaving) => {
          const shards = spread(shardCount, placements);
          const existing = shards.flat().sort().reverse();
          const left: string[] = [];
          const listed = pageThrough(shards, limit, (page, seen) => {
            const choice = leaving[page];
            const unseen = existing.filter((k) => !seen.includes(k) && !left.includes(k));
            if (choice === undefined || unseen.length === 0) return;
            const gone = unseen[choice % unseen.length] as string;
            left.push(gone);
            for (const shard of shards) if (shard.includes(gone)) shard.splice(shard.indexOf(gone), 1);
          });
          expect(listed).toEqual(existing.filter((k) => !left.includes(k)));
        },
      ),
    );
  });

  it('ends a shard once the page took all it had', () => {
    const { positions } = mergeShardReads(
      [
        { keys: ['b'], more: false },
        { keys: [], more: false },
        { keys: ['c', 'a'], more: true },
      ],
      [{ kind: 'start' }, { kind: 'start' }, { kind: 'start' }],
      2,
    );
    expect(positions).toEqual([{ kind: 'done' }, { kind: 'done' }, { kind: 'after', sortKey: 'c' }]);
  });
});
