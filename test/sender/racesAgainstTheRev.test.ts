import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import type { SenderStore } from '../../lambdas/ports/SenderStore.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { putGroupHead } from './records.js';
import {
  cancelThroughApi,
  createSenderRig,
  raiseGroupThroughApi,
  rescheduleThroughApi,
  retryThroughApi,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
  storeWith,
} from './senderHarness.js';

/**
 * DESIGN §2: a copy whose `rev` is not the record's is stale and dropped; every transition is one
 * conditional write. Each race is held at one step by a gate the test opens, the user's request is
 * made through the real api handler in that window, and the checker is what the SMTP server
 * received — never Postdate's own status alone (decision 0241).
 */

/** A step held until the test opens it; `reached` resolves when the sender arrives at it. */
function gate() {
  let arrive: () => void = () => {};
  let open: () => void = () => {};
  const reached = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    reached,
    open,
    async pass() {
      arrive();
      await opened;
    },
  };
}

describe('the rev against copies in flight (DESIGN §2)', () => {
  let world: SenderWorld;
  let store: SenderStore;
  beforeAll(async () => {
    world = await startSenderWorld();
    store = new DynamoSenderStore(world.documents, world.tableName);
  });
  afterAll(async () => {
    await world.close();
  });

  /** The rig's sender with its claim held at the gate: it has read the record, not yet written. */
  const heldBeforeClaim = (rig: SenderRig, held: ReturnType<typeof gate>) =>
    rig.newHandler({
      store: storeWith(store, {
        async claim(input) {
          await held.pass();
          return store.claim(input);
        },
      }),
    });

  it('a reschedule while the copy is received but not yet claimed: the old copy sends nothing, the new rev sends once', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage();
    await rig.dispatch({ id: message.id, rev: 1 });
    const records = await rig.receive({ waitSeconds: 3, max: 1 });
    const held = gate();
    const running = rig.run(records, heldBeforeClaim(rig, held));
    await held.reached;

    const moved = await rescheduleThroughApi(world, message.id, rig.clock.now, {
      send_at: rig.clock.now().toISOString(),
    });
    held.open();
    await running;

    expect(moved.status).toBe(200);
    expect(rig.accepted(message.id)).toHaveLength(0);
    await rig.dispatch({ id: message.id, rev: 2 });
    await rig.deliverNext();
    expect(rig.accepted(message.id)).toHaveLength(1);
  }, 30_000);

  it('two reschedules to now in quick succession (rev 2, rev 3): every copy comes, exactly one send', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage({ sendAt: new Date(rig.clock.now().getTime() + 3_600_000) });
    for (const expected of [2, 3]) {
      const moved = await rescheduleThroughApi(world, message.id, rig.clock.now, {
        send_at: rig.clock.now().toISOString(),
      });
      expect(moved.status).toBe(200);
      expect((await rig.state(message.id)).rev).toBe(expected);
    }
    for (const rev of [3, 1, 2, 3]) await rig.dispatch({ id: message.id, rev });
    for (let copy = 0; copy < 4; copy += 1) await rig.deliverNext();

    expect(rig.accepted(message.id)).toHaveLength(1);
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
  }, 30_000);

  it('a reschedule from the delay path (10 min) to the Scheduler path (2 days) and back: the old SQS copy and the old schedule both die', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const at = (minutes: number) => new Date(rig.clock.now().getTime() + minutes * 60_000).toISOString();
    const message = await rig.putMessage({ sendAt: new Date(at(10)) });
    for (const sendAt of [at(2 * 24 * 60), at(10)]) {
      const moved = await rescheduleThroughApi(world, message.id, rig.clock.now, { send_at: sendAt });
      expect(moved.status).toBe(200);
    }
    rig.clock.advance(10 * 60_000);
    // What is still in flight: rev 1's delayed SQS copy, rev 2's schedule had it fired (its deletion
    // lost), and rev 3's own copy.
    for (const rev of [1, 2, 3]) await rig.dispatch({ id: message.id, rev });
    for (let copy = 0; copy < 3; copy += 1) await rig.deliverNext();

    expect(rig.accepted(message.id)).toHaveLength(1);
    const state = await rig.state(message.id);
    expect({ status: state.status, rev: state.rev, send_at: state.send_at }).toEqual({
      status: 'sent',
      rev: 3,
      send_at: at(0),
    });
  }, 30_000);

  it('a cancel that lands before the claim is written wins: 200 and never sent', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage();
    await rig.dispatch({ id: message.id, rev: 1 });
    const held = gate();
    const running = rig.run(await rig.receive({ waitSeconds: 3, max: 1 }), heldBeforeClaim(rig, held));
    await held.reached;

    const cancel = await cancelThroughApi(world, message.id, rig.clock.now);
    held.open();
    await running;

    expect(cancel.status).toBe(200);
    expect(rig.received(message.id)).toHaveLength(0);
    expect((await rig.state(message.id)).status).toBe('cancelled');
  }, 30_000);

  it('a cancel that lands after the claim is written loses: 409 sending, and the message is sent once', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage();
    await rig.dispatch({ id: message.id, rev: 1 });
    const held = gate();
    // Held after the claim, before the send: the one group read happens under the claim.
    const sender = rig.newHandler({
      store: storeWith(store, {
        async claim(input) {
          const claimed = await store.claim(input);
          await held.pass();
          return claimed;
        },
      }),
    });
    const running = rig.run(await rig.receive({ waitSeconds: 3, max: 1 }), sender);
    await held.reached;

    const cancel = await cancelThroughApi(world, message.id, rig.clock.now);
    held.open();
    await running;

    expect(cancel.status).toBe(409);
    expect(rig.accepted(message.id)).toHaveLength(1);
  }, 30_000);

  it('a retrying message cancelled during its backoff is never sent, and cannot be retried (cancelled is terminal)', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const backoffEnds = new Date(rig.clock.now().getTime() + 60_000);
    const message = await rig.putMessage({ status: 'retrying', attempts: 1, sendAt: backoffEnds });

    const cancel = await cancelThroughApi(world, message.id, rig.clock.now);
    const retry = await retryThroughApi(world, message.id, rig.clock.now);
    // The copy that was hidden for the backoff comes back when it ends.
    rig.clock.advance(60_000);
    await rig.dispatch({ id: message.id, rev: 1 });
    await rig.deliverNext();

    expect(cancel.status).toBe(200);
    expect(retry.status).toBe(409);
    expect(rig.received(message.id)).toHaveLength(0);
  }, 30_000);

  it('a manual retry of a dead message whose old copy is redriven from the DLQ: the old rev is dropped, one send', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage({ status: 'dead', attempts: 3 });

    const retry = await retryThroughApi(world, message.id, rig.clock.now);
    expect(retry.status).toBe(202);
    // The operator's redrive puts the old copy (rev 1, as the sender put it in the DLQ at its death)
    // back beside the retry's own (rev 2).
    await rig.dispatch(encodeDispatchPayload({ id: message.id, rev: 1, dlq: true, death: 3 }));
    await rig.dispatch({ id: message.id, rev: 2 });
    await rig.deliverNext();
    await rig.deliverNext();

    expect(rig.accepted(message.id)).toHaveLength(1);
    expect((await rig.state(message.id)).status).toBe('sent');
  }, 30_000);

  it('a manual retry of an unknown message sends once more, by the operator, and only once', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage({ status: 'unknown', attempts: 1 });
    await rig.dispatch({ id: message.id, rev: 1 });
    await rig.deliverNext();
    expect(rig.received(message.id)).toHaveLength(0);

    const retry = await retryThroughApi(world, message.id, rig.clock.now);
    const again = await retryThroughApi(world, message.id, rig.clock.now);
    for (const rev of [1, 2, 2]) await rig.dispatch({ id: message.id, rev });
    for (let copy = 0; copy < 3; copy += 1) await rig.deliverNext();

    expect(retry.status).toBe(202);
    expect(again.status).toBe(409);
    expect(rig.accepted(message.id)).toHaveLength(1);
  }, 30_000);
  it('a PUT /v1/groups/{key} raise after the group read, during the send, does not stop that send: the read under the claim is the last word (decision 0241)', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const group = { key: 'campaign:241:status', version: 4 };
    await putGroupHead(world.documents, world.tableName, group.key, 4);
    const message = await rig.putMessage({ group });
    await rig.dispatch({ id: message.id, rev: 1 });
    const held = gate();
    const sender = rig.newHandler({
      store: storeWith(store, {
        async readGroupVersion(tenant, key) {
          const version = await store.readGroupVersion(tenant, key);
          await held.pass();
          return version;
        },
      }),
    });
    const running = rig.run(await rig.receive({ waitSeconds: 3, max: 1 }), sender);
    await held.reached;

    const raised = await raiseGroupThroughApi(world, group.key, 5, rig.clock.now);
    held.open();
    await running;

    expect(raised.status).toBe(200);
    expect(rig.accepted(message.id)).toHaveLength(1);
    expect((await rig.state(message.id)).status).toBe('sent');
  }, 30_000);
});
