import { describe, expect, it } from 'vitest';
import { type PauseCommand, pauseAfter } from '../../lambdas/core/relayBreaker.js';
import { putMessage } from '../sender/records.js';
import { sweepWorld } from './sweepWorld.js';

/**
 * DESIGN §5 and §5a: an operator's pause holds copies the way an open breaker does, so the sweeper
 * must not take a paused message for a lost one — a copy of it would only be handed back again. It
 * skips messages whose `tags.kind` is paused (or everything, but the kinds resumed since), and sweeps
 * them again once they are resumed.
 */
const MINUTE = 60_000;

async function world() {
  const { tableName, documents, gate, queue, run } = await sweepWorld('sweep-pause');
  const operator = async (command: PauseCommand) => {
    const { pause } = await gate.read();
    expect(await gate.writePause(pause, pauseAfter(pause, command, new Date()))).toBe('written');
  };
  const message = (kind: string | undefined, sendAt: Date) =>
    putMessage(documents, tableName, sendAt, { tags: kind === undefined ? {} : { kind } });
  return { queue, run, operator, message };
}

describe('the sweeper and the operator pause', () => {
  it('re-dispatches nothing of a paused kind over a 4-hour pause, other kinds as before, and the paused kind after resume', async () => {
    const w = await world();
    const t0 = new Date(Date.now() - 10 * MINUTE);
    const digest = await w.message('digest', t0);
    const invoice = await w.message('invoice', t0);
    await w.operator({ action: 'pause', kind: 'digest', reason: 'rollout' });

    // A sweep every 20 minutes of the pause (each one past the grace and the sweeper's own backoff).
    for (let minutes = 0; minutes <= 240; minutes += 20) {
      await w.run(new Date(Date.now() + minutes * MINUTE));
    }
    expect(w.queue.of(digest.id)).toBe(0);
    expect(w.queue.of(invoice.id)).toBeGreaterThan(0);

    await w.operator({ action: 'resume', kind: 'digest' });
    await w.run(new Date(Date.now() + 260 * MINUTE));
    expect(w.queue.of(digest.id)).toBe(1);
  }, 120_000);

  it('with everything paused it skips every kind but those resumed since, and messages without a kind', async () => {
    const w = await world();
    const t0 = new Date(Date.now() - 10 * MINUTE);
    const digest = await w.message('digest', t0);
    const invoice = await w.message('invoice', t0);
    const plain = await w.message(undefined, t0);
    await w.operator({ action: 'pause', reason: 'incident' });
    await w.operator({ action: 'resume', kind: 'invoice' });

    const report = await w.run(new Date());
    expect(w.queue.of(digest.id)).toBe(0);
    expect(w.queue.of(plain.id)).toBe(0);
    expect(w.queue.of(invoice.id)).toBe(1);
    expect(report.redispatched).toBe(1);
  }, 60_000);
});
