import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SAME_SIGNAL_MS, stopRequest } from '../../local/stopSignals.js';

// DESIGN §7: Ctrl-C stops every part gracefully. One Ctrl-C can arrive twice (the terminal signals
// the process group, a parent relays it again): that is one graceful stop, not "again, exiting".
// A person pressing Ctrl-C again while the stop takes long gets an exit at once.
describe('what a stop signal asks of npm start', () => {
  it('the first signal stops the parts in order', () => {
    fc.assert(fc.property(fc.nat(), (now) => stopRequest(undefined, now) === 'stop'));
  });

  it('a repeat within the window, however close, is the same request', () => {
    fc.assert(
      fc.property(fc.nat({ max: 2 ** 40 }), fc.nat({ max: SAME_SIGNAL_MS - 1 }), (firstAt, after) => {
        expect(stopRequest(firstAt, firstAt + after)).toBe('same request');
      }),
    );
  });

  it('a repeat at the window or later exits at once', () => {
    fc.assert(
      fc.property(fc.nat({ max: 2 ** 40 }), fc.nat({ max: 10 * 60_000 }), (firstAt, past) => {
        expect(stopRequest(firstAt, firstAt + SAME_SIGNAL_MS + past)).toBe('exit now');
      }),
    );
  });

  it('the window is long enough for a relayed copy on a loaded machine, short enough for a person', () => {
    expect(SAME_SIGNAL_MS).toBeGreaterThanOrEqual(1_000);
    expect(SAME_SIGNAL_MS).toBeLessThanOrEqual(3_000);
  });
});
