import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BreakerState, pauseAfter } from '../../lambdas/core/relayBreaker.js';
import { type BreakerRig, type BreakerWorld, createBreakerRig, startBreakerWorld } from './breakerHarness.js';
import { cancelThroughApi } from './senderHarness.js';

/**
 * DESIGN §2, §5: a takeover of an expired lease (a sender died mid-send) settles the interrupted
 * attempt before anything holds the copy. Under `retry` the message is `retrying` with the attempt
 * counted once, whatever then holds it back unclaimed — the sending gate during a relay outage, or
 * the operator's pause — so no record stays `sending` with nobody holding its lease, and the user can
 * cancel it (DELETE is 409 only while sending or terminal, DESIGN §3). On the real parts of
 * test/sender/breakerHarness.ts: DynamoDB Local holds the gate, a real smtp-server the relay.
 */

describe('a takeover the sending gate holds', () => {
  // A world of its own for every test: the gate is one item per table.
  let world: BreakerWorld;
  beforeEach(async () => {
    world = await startBreakerWorld();
    await world.outage.set('up');
  });
  afterEach(async () => {
    await world.close();
  });

  /** A message whose sender died mid-send: `sending`, its lease run out a second ago. */
  async function leftSending(rig: BreakerRig, tags: Record<string, string> = { kind: 'test' }) {
    const message = await rig.putMessage({
      onAmbiguous: 'retry',
      status: 'sending',
      attempts: 0,
      leaseOwner: 'a-sender-that-died',
      leaseUntil: new Date(Date.now() - 1000),
      tags,
    });
    await rig.dispatch(message);
    return message;
  }

  async function expectSettledOnce(rig: BreakerRig, id: string) {
    const state = await rig.state(id);
    expect(state).toMatchObject({ status: 'retrying', attempts: 1, last_error: { class: 'ambiguous' } });
    expect(state.lease_owner).toBeUndefined();
    expect(state.lease_until).toBeUndefined();
    expect(state.history.map((entry) => entry.outcome)).toEqual(['ambiguous']);
  }

  it('during a relay outage: retrying, the attempt counted once however often the copy comes back, then sent exactly once', async () => {
    const rig = await createBreakerRig(world);
    const since = new Date().toISOString();
    const open: BreakerState = {
      state: 'open',
      version: 1,
      opened_at: since,
      reason: '421: the relay closed the session',
      // No probe during the test's outage: the breaker stays open until the test closes it.
      probe_at: new Date(Date.now() + 600_000).toISOString(),
      token: '1',
      failed_probes: 0,
    };
    expect(await rig.gateStore.writeBreaker({ state: 'closed', version: 0 }, open)).toBe('written');
    const message = await leftSending(rig);
    const sender = rig.sender();

    const first = await rig.run(await rig.receive({ max: 1, waitSeconds: 2 }), sender);

    expect(first.batchItemFailures).toHaveLength(1);
    expect(rig.received(message.id)).toEqual([]);
    await expectSettledOnce(rig, message.id);
    expect(rig.metrics.of('RelayUnavailable')).toBe(1);

    // The copy comes back while the relay is still down: held again, nothing counted again.
    await rig.drive({
      handlers: [sender],
      timeoutMs: 10_000,
      done: async () => rig.metrics.of('RelayUnavailable') >= 2,
    });
    await expectSettledOnce(rig, message.id);

    const closed: BreakerState = { state: 'closed', version: 2, closed_at: new Date().toISOString() };
    expect(await rig.gateStore.writeBreaker(open, closed)).toBe('written');
    await rig.drive({
      handlers: [sender],
      timeoutMs: 20_000,
      done: async () => (await rig.state(message.id)).status === 'sent',
    });
    expect(rig.received(message.id)).toHaveLength(1);
    const sent = await rig.state(message.id);
    expect(sent).toMatchObject({ status: 'sent', attempts: 2 });
    expect(sent.history.map((entry) => entry.outcome)).toEqual(['ambiguous', 'sent']);
    expect(rig.metrics.of('Ambiguous')).toBe(1);
  }, 60_000);

  it('while its kind is paused: retrying, the attempt counted once, and the user can cancel it (DELETE 200)', async () => {
    const rig = await createBreakerRig(world);
    const current = await rig.gateStore.read();
    const paused = pauseAfter(
      current.pause,
      { action: 'pause', kind: 'campaign', reason: 'rollout' },
      new Date(),
    );
    expect(await rig.gateStore.writePause(current.pause, paused)).toBe('written');
    const message = await leftSending(rig, { kind: 'campaign' });

    const first = await rig.run(await rig.receive({ max: 1, waitSeconds: 2 }), rig.sender());

    expect(first.batchItemFailures).toHaveLength(1);
    expect(rig.received(message.id)).toEqual([]);
    await expectSettledOnce(rig, message.id);
    expect(rig.metrics.of('SendingPaused')).toBe(1);

    const cancel = await cancelThroughApi(world, message.id, () => new Date());

    expect(cancel.status).toBe(200);
    expect(cancel.json).toMatchObject({ id: message.id, status: 'cancelled' });
  }, 60_000);
});
