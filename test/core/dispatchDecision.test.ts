import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideArrival, decideDispatch, formatAtExpression } from '../../lambdas/core/dispatchDecision.js';

const now = new Date('2026-12-01T09:00:00.000Z');
const at = (offsetMs: number) => new Date(now.getTime() + offsetMs);
const dispatch = (sendAt: Date, directDelayMaxSeconds = 900, scheduleLeadSeconds = 90) =>
  decideDispatch({ sendAt, now, directDelayMaxSeconds, scheduleLeadSeconds });

describe('decideDispatch: queue or scheduler (DESIGN §5a)', () => {
  it('queues a message due within 15 minutes with the whole remaining seconds as delay', () => {
    expect(dispatch(at(600_000))).toEqual({ path: 'queue', delaySeconds: 600 });
    expect(dispatch(at(10_999))).toEqual({ path: 'queue', delaySeconds: 10 });
  });
  it('queues a message whose send_at is in the past with no delay', () => {
    expect(dispatch(at(-3_600_000))).toEqual({ path: 'queue', delaySeconds: 0 });
    expect(dispatch(now)).toEqual({ path: 'queue', delaySeconds: 0 });
  });
  it('queues a message due exactly at the boundary', () => {
    expect(dispatch(at(900_000))).toEqual({ path: 'queue', delaySeconds: 900 });
  });
  it('schedules a message due a millisecond after the boundary, lead seconds early', () => {
    expect(dispatch(at(900_001))).toEqual({ path: 'schedule', fireAt: new Date('2026-12-01T09:13:30.000Z') });
  });
  it('schedules far-future messages at send_at − lead, truncated to the whole second', () => {
    const decision = dispatch(new Date('2026-12-24T18:00:00.750Z'));
    expect(decision).toEqual({ path: 'schedule', fireAt: new Date('2026-12-24T17:58:30.000Z') });
  });
  it('uses the scheduler for short waits when tests lower the direct-delay maximum', () => {
    expect(dispatch(at(5_000), 2, 1)).toEqual({ path: 'schedule', fireAt: at(4_000) });
  });
  it('queues instead when a lead larger than the remaining time would put the fire time in the past', () => {
    expect(dispatch(at(30_000), 10, 60)).toEqual({ path: 'queue', delaySeconds: 30 });
  });
  it('never schedules before now, even with a lead longer than 15 minutes', () => {
    expect(dispatch(at(1_000_500), 900, 2000)).toEqual({ path: 'schedule', fireAt: now });
    const odd = decideDispatch({
      sendAt: new Date(now.getTime() + 1_000_000),
      now: new Date(now.getTime() + 250),
      directDelayMaxSeconds: 900,
      scheduleLeadSeconds: 2000,
    });
    expect(odd).toEqual({ path: 'schedule', fireAt: at(1000) });
  });
  it('rejects an invalid date by name', () => {
    expect(() => dispatch(new Date(Number.NaN))).toThrow(new RangeError('sendAt is not a valid date'));
  });

  it('property: the queue delay lies in [0, 900] and the fire time is send_at − lead, never before now', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -(10 ** 10), max: 10 ** 11 }),
        fc.integer({ min: 0, max: 900 }),
        fc.integer({ min: 0, max: 900 }),
        (offsetMs, directDelayMaxSeconds, leadRaw) => {
          const scheduleLeadSeconds = Math.min(leadRaw, directDelayMaxSeconds);
          const sendAt = at(offsetMs);
          const decision = decideDispatch({ sendAt, now, directDelayMaxSeconds, scheduleLeadSeconds });
          if (decision.path === 'queue') {
            expect(offsetMs).toBeLessThanOrEqual(Math.max(directDelayMaxSeconds * 1000, 900_000));
            expect(Number.isInteger(decision.delaySeconds)).toBe(true);
            expect(decision.delaySeconds).toBeGreaterThanOrEqual(0);
            expect(decision.delaySeconds).toBeLessThanOrEqual(900);
            expect(decision.delaySeconds).toBe(Math.max(0, Math.floor(offsetMs / 1000)));
          } else {
            expect(offsetMs).toBeGreaterThan(directDelayMaxSeconds * 1000);
            const expected = Math.floor((sendAt.getTime() - scheduleLeadSeconds * 1000) / 1000) * 1000;
            expect(decision.fireAt.getTime()).toBe(expected);
            expect(decision.fireAt.getTime()).toBeGreaterThanOrEqual(now.getTime());
            expect(decision.fireAt.getTime() % 1000).toBe(0);
          }
        },
      ),
    );
  });
});

describe('decideArrival: what a sender does with a copy (DESIGN §5a)', () => {
  const arrive = (sendAt: Date, maxWaitMs = 1000) => decideArrival({ sendAt, now, maxWaitMs });

  it('sends a copy that is due or late', () => {
    expect(arrive(now)).toEqual({ action: 'send' });
    expect(arrive(at(-5000))).toEqual({ action: 'send' });
  });
  it('waits in-process for a sub-second remainder', () => {
    expect(arrive(at(400))).toEqual({ action: 'wait', milliseconds: 400 });
    expect(arrive(at(1000))).toEqual({ action: 'wait', milliseconds: 1000 });
  });
  it('re-delays an early copy by the whole remaining seconds', () => {
    expect(arrive(at(1001))).toEqual({ action: 'redelay', delaySeconds: 1 });
    expect(arrive(at(89_999))).toEqual({ action: 'redelay', delaySeconds: 89 });
  });
  it('never re-delays by less than 1 second or more than 900', () => {
    expect(arrive(at(500), 0)).toEqual({ action: 'redelay', delaySeconds: 1 });
    expect(arrive(at(86_400_000))).toEqual({ action: 'redelay', delaySeconds: 900 });
  });
  it('treats a negative wait budget as none', () => {
    expect(arrive(at(500), -10)).toEqual({ action: 'redelay', delaySeconds: 1 });
  });
  it('rejects an invalid clock', () => {
    expect(() => decideArrival({ sendAt: now, now: new Date('nope'), maxWaitMs: 0 })).toThrow(RangeError);
  });

  it('property: a copy is sent only when due, and re-delays stay within [1, 900]', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -(10 ** 9), max: 10 ** 10 }),
        fc.integer({ min: 0, max: 5000 }),
        (offset, wait) => {
          const decision = arrive(at(offset), wait);
          if (decision.action === 'send') expect(offset).toBeLessThanOrEqual(0);
          if (decision.action === 'wait') {
            expect(decision.milliseconds).toBe(offset);
            expect(offset).toBeLessThanOrEqual(wait);
          }
          if (decision.action === 'redelay') {
            expect(offset).toBeGreaterThan(wait);
            expect(decision.delaySeconds).toBeGreaterThanOrEqual(1);
            expect(decision.delaySeconds).toBeLessThanOrEqual(900);
            expect(decision.delaySeconds * 1000).toBeLessThanOrEqual(Math.max(offset, 1000));
          }
        },
      ),
    );
  });
});

describe('formatAtExpression', () => {
  it("writes EventBridge Scheduler's at() in UTC without milliseconds or zone", () => {
    expect(formatAtExpression(new Date('2026-12-24T17:58:30.999Z'))).toBe('at(2026-12-24T17:58:30)');
    expect(formatAtExpression(new Date('2027-01-01T00:30:00+02:00'))).toBe('at(2026-12-31T22:30:00)');
  });
  it('rejects an invalid date', () => {
    expect(() => formatAtExpression(new Date(Number.NaN))).toThrow(RangeError);
  });
});
