import { describe, expect, it } from 'vitest';
import {
  CASE_OFFSET_MS,
  localTimeCases,
  precisionSetup,
  STAGGER_MS,
  staggeredPlan,
} from '../../bench/lateness.js';
import { isTimeZone } from '../../lambdas/core/localTime.js';

describe('staggeredPlan', () => {
  it('spaces each case STAGGER_MS apart and offsets the cases from each other', () => {
    const base = 1_000_000;
    const plan = staggeredPlan([0, 5], 3, base);
    expect(plan).toHaveLength(6);
    expect(plan.filter((p) => p.caseIndex === 0).map((p) => p.enqueueAt - base)).toEqual([
      0,
      STAGGER_MS,
      2 * STAGGER_MS,
    ]);
    expect(plan.filter((p) => p.caseIndex === 1).map((p) => p.enqueueAt - base)).toEqual([
      CASE_OFFSET_MS,
      STAGGER_MS + CASE_OFFSET_MS,
      2 * STAGGER_MS + CASE_OFFSET_MS,
    ]);
    expect(plan.filter((p) => p.caseIndex === 1).every((p) => p.delaySeconds === 5)).toBe(true);
  });

  it('plans nothing for no cases or no messages per case', () => {
    expect(staggeredPlan([], 5, 0)).toEqual([]);
    expect(staggeredPlan([1, 2], 0, 0)).toEqual([]);
  });
});

describe('precisionSetup', () => {
  it.each([true, false])('puts one case each side of the direct-delay threshold (quick: %s)', (quick) => {
    const setup = precisionSetup(quick);
    const delays = setup.cases.map((c) => c.delaySeconds);
    expect(delays).toContain(0);
    expect(delays).toContain(setup.directMax - 1);
    expect(delays).toContain(setup.directMax + 10);
    expect(setup.env).toEqual({
      POSTDATE_DIRECT_DELAY_MAX_SECONDS: String(setup.directMax),
      POSTDATE_SCHEDULE_LEAD_SECONDS: String(setup.lead),
    });
    // The scheduled case must be further out than the lead, or the Scheduler path is never taken.
    expect(setup.directMax + 10).toBeGreaterThan(setup.lead);
  });
});

describe('localTimeCases (issue 33: the send_at_local path beside the others)', () => {
  it.each([true, false])(
    'gives the time as send_at_local on the direct and the Scheduler path (quick: %s)',
    (quick) => {
      const setup = precisionSetup(quick);
      const cases = localTimeCases(setup);
      expect(cases.every((c) => c.timeZone !== undefined && isTimeZone(c.timeZone))).toBe(true);
      expect(cases.some((c) => c.delaySeconds <= setup.directMax)).toBe(true);
      expect(cases.some((c) => c.delaySeconds > setup.directMax)).toBe(true);
      // The peer benchmark shares precisionSetup's cases: it never gets one it cannot express.
      expect(setup.cases.every((c) => c.timeZone === undefined)).toBe(true);
    },
  );
});
