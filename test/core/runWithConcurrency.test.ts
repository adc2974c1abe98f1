import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runInLanes } from '../../lambdas/core/runWithConcurrency.js';

/** A promise the test settles by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('runInLanes: at most `limit` items work at once; a waiting item holds no lane', () => {
  it('property: never more than `limit` at work, every item done, results in input order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ before: fc.nat(3), away: fc.boolean(), after: fc.nat(3) }), { maxLength: 12 }),
        fc.integer({ min: 1, max: 5 }),
        async (plans, limit) => {
          let working = 0;
          let most = 0;
          const step = async (turns: number) => {
            for (let i = 0; i < turns; i++) await turn();
          };
          const results = await runInLanes(plans, limit, async (plan, index, lane) => {
            working += 1;
            most = Math.max(most, working);
            await step(plan.before);
            if (plan.away) {
              working -= 1;
              await lane.away(() => step(2));
              working += 1;
              most = Math.max(most, working);
            }
            await step(plan.after);
            working -= 1;
            return index;
          });
          expect(results).toEqual(plans.map((_, index) => index));
          expect(most).toBeLessThanOrEqual(limit);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('lets every item wait at once, whatever the limit', async () => {
    const wait = gate();
    let waiting = 0;
    const run = runInLanes([1, 2, 3, 4, 5, 6], 2, async (value, _index, lane) => {
      await lane.away(async () => {
        waiting += 1;
        await wait.promise;
      });
      return value * 10;
    });
    for (let i = 0; i < 20 && waiting < 6; i++) await turn();
    expect(waiting).toBe(6);
    wait.open();
    expect(await run).toEqual([10, 20, 30, 40, 50, 60]);
  });

  it('gives a lane back to an item returning from its wait before an item not yet started', async () => {
    const order: string[] = [];
    const back = gate();
    const holder = gate();
    const run = runInLanes(['waits', 'holds', 'late'], 1, async (name, _index, lane) => {
      order.push(`${name} starts`);
      if (name === 'waits') await lane.away(() => back.promise);
      if (name === 'holds') {
        back.open();
        await holder.promise;
      }
      order.push(`${name} ends`);
    });
    for (let i = 0; i < 5; i++) await turn();
    holder.open();
    await run;
    expect(order).toEqual([
      'waits starts',
      'holds starts',
      'holds ends',
      'waits ends',
      'late starts',
      'late ends',
    ]);
  });

  it('throws the first error after every other item has finished', async () => {
    const finished: number[] = [];
    await expect(
      runInLanes([1, 2, 3], 2, async (value) => {
        await turn();
        if (value === 1) throw new Error('one failed');
        finished.push(value);
      }),
    ).rejects.toThrow('one failed');
    expect(finished).toEqual([2, 3]);
  });
});
