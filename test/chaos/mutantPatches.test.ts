import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { applyPatch, MUTANTS, picked } from '../../chaos/mutantPatches.js';

/**
 * The mutation run's patches (chaos/mutantPatches.ts) must still find their anchors in the product:
 * checked here, in `npm test`, so that a restructuring that moves an anchor says so at once instead
 * of at the next mutation run.
 */
describe('the mutation run’s patches', () => {
  it.each(MUTANTS.flatMap((mutant) => mutant.patches.map((patch) => [mutant.name, patch] as const)))(
    '%s: its anchor occurs exactly once and the patch changes the file',
    (_name, patch) => {
      const text = readFileSync(patch.file, 'utf8');
      const patched = applyPatch(text, patch);
      expect(patched).not.toBe(text);
      expect(patched).toContain(patch.replace);
    },
  );

  it('fails loudly, naming the file, when an anchor is gone or ambiguous', () => {
    const patch = { file: 'x.ts', find: 'needle', replace: 'thread' };
    expect(applyPatch('a needle here', patch)).toBe('a thread here');
    expect(() => applyPatch('no such text', patch)).toThrow(/x\.ts no longer occurs/);
    expect(() => applyPatch('needle and needle', patch)).toThrow(/x\.ts occurs more than once/);
  });

  it('picks about one id in sixteen, the same ids every time', () => {
    const pick = new Function('id', `return ${picked('id')};`) as (id: string) => boolean;
    const ids = Array.from({ length: 4_000 }, (_, index) => `01JCHAOS${index.toString(36).padStart(6, '0')}`);
    const share = ids.filter(pick).length / ids.length;
    expect(share).toBeGreaterThan(0.03);
    expect(share).toBeLessThan(0.1);
    expect(ids.filter(pick)).toEqual(ids.filter(pick));
  });
});
