import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SenderStore } from '../../lambdas/ports/SenderStore.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { eventually } from '../support/eventually.js';
import {
  createSenderRig,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
  storeWith,
} from './senderHarness.js';

/**
 * Never doubled by accident: duplicate copies, racing senders, and a sender that died mid-send (its
 * record left `sending` with a lease that expires) — the next attempt follows on_ambiguous.
 */

/**
 * The real store, except that every claim waits until `parties` claims have arrived: all racers have
 * read the record as claimable before any of them writes, so the conditional write alone decides.
 */
function claimBarrier(store: SenderStore, parties: number): SenderStore {
  let arrived = 0;
  let release: () => void = () => {};
  const allArrived = new Promise<void>((resolve) => {
    release = resolve;
  });
  return storeWith(store, {
    async claim(input) {
      arrived += 1;
      if (arrived >= parties) release();
      await allArrived;
      return store.claim(input);
    },
  });
}

/**
 * A store whose outcome write never comes back: the process was killed right after the relay's 250
 * and before its write (a SIGKILL, a function timeout). A write that *fails* is not a kill: a live
 * sender retries it (test/sender/outcomeWrites.test.ts) and never sends again.
 */
function killedBeforeOutcome(store: SenderStore): SenderStore {
  return storeWith(store, { recordOutcome: () => new Promise(() => {}) });
}

describe('the sender against duplicates and dead senders', () => {
  let world: SenderWorld;
  let store: SenderStore;
  beforeAll(async () => {
    world = await startSenderWorld();
    store = new DynamoSenderStore(world.documents, world.tableName);
  });
  afterAll(async () => {
    await world.close();
  });

  it('delivers once when the same SQS message is handed to two invocations at the same time', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage();
    await rig.dispatch(message);
    const records = await rig.receive({ waitSeconds: 3, max: 1 });
    expect(records).toHaveLength(1);

    const racing = claimBarrier(store, 2);
    const [first, second] = await Promise.all([
      rig.newHandler({ store: racing })({ Records: records }),
      rig.newHandler({ store: racing })({ Records: records }),
    ]);

    expect(rig.accepted(message.id)).toHaveLength(1);
    const state = await rig.state(message.id);
    expect(state.status).toBe('sent');
    expect(state.attempts).toBe(1);
    // The winner acknowledges; the loser saw a claim it lost and either acknowledges (the message is
    // already sent when it looks again) or keeps the copy until the winner's lease ends.
    const failures = [...first.batchItemFailures, ...second.batchItemFailures];
    expect(failures.length).toBeLessThanOrEqual(1);
  });

  it('drops a second copy of a sent message with a DEBUG line, not INFO (issue 32: a routine line nobody acts on)', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage();
    await rig.dispatch(message);
    await rig.deliverNext();
    expect((await rig.state(message.id)).status).toBe('sent');
    await rig.dispatch(message);
    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.accepted(message.id)).toHaveLength(1);
    const dropped = rig.log.lines.filter((line) => line.message === 'sender dropped a copy');
    expect(dropped).toEqual([
      expect.objectContaining({ level: 'debug', attributes: expect.objectContaining({ id: message.id }) }),
    ]);
  });

  it('delivers once when two senders race on two copies of one id', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage();
    await rig.dispatch(message); // e.g. the relay's copy
    await rig.dispatch(message); // and the sweeper's
    const copies = await rig.receive({ waitSeconds: 3, max: 2 });
    const more = copies.length < 2 ? await rig.receive({ waitSeconds: 3, max: 1 }) : [];
    const [a, b] = [...copies, ...more];
    if (a === undefined || b === undefined) throw new Error('expected two copies');

    const racing = claimBarrier(store, 2);
    await Promise.all([
      rig.run([a], rig.newHandler({ store: racing })),
      rig.run([b], rig.newHandler({ store: racing })),
    ]);

    expect(rig.accepted(message.id)).toHaveLength(1);
    expect((await rig.state(message.id)).attempts).toBe(1);
  });

  it('keeps a copy whose message another sender holds under a live lease, until that lease ends; nothing is sent', async () => {
    const rig = await createSenderRig(world);
    const leaseUntil = new Date(rig.clock.ms + 60_000);
    const message = await rig.putMessage({
      status: 'sending',
      attempts: 1,
      leaseOwner: 'another-sender',
      leaseUntil,
    });
    const transactionsBefore = world.smtp.transactions;
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toHaveLength(1);
    expect(world.smtp.transactions).toBe(transactionsBefore);
    expect(await rig.state(message.id)).toEqual(message);
    // Hidden for the lease's remaining 60 s (+1), not the queue's default 6 minutes or 0.
    expect(await rig.receive({ waitSeconds: 0 })).toEqual([]);
    expect(await rig.depth()).toMatchObject({ inFlight: 1 });
  });

  it('keeps a retrying message to its backoff: a second copy that arrives before the retry time sends nothing, and is sent once after it', async () => {
    // Backoff of up to 600 s, drawn at its ceiling: the first failure sets the retry 300 s out.
    const rig = await createSenderRig(world, {
      settings: { retryBaseSeconds: 300, retryCapSeconds: 600 },
      random: () => 0.999,
    });
    world.smtp.script({ afterData: { code: 451, message: '4.3.0 Try again later' } });
    const message = await rig.putMessage();
    await rig.dispatch(message);
    await rig.deliverNext();
    const retrying = await rig.state(message.id);
    expect(retrying).toMatchObject({ status: 'retrying', attempts: 1 });
    const retryAt = Date.parse(retrying.due_at ?? '');
    expect(retryAt - rig.clock.ms).toBeGreaterThanOrEqual(250_000);

    // Another copy of the same rev (the Scheduler fired twice, the sweeper, the api's own copy)
    // arrives a minute later, while the first is hidden for its backoff.
    world.smtp.script();
    rig.clock.advance(60_000);
    const transactionsBefore = world.smtp.transactions;
    await rig.dispatch(message);
    const early = await rig.deliverNext();
    expect(world.smtp.transactions).toBe(transactionsBefore);
    expect(await rig.state(message.id)).toEqual(retrying);
    // Not sent early, and not lost: it comes back at the retry time, as a delayed copy.
    expect(early.response.batchItemFailures).toEqual([]);
    expect(rig.queue.enqueued).toEqual([
      { payload: { id: message.id, rev: 1 }, delaySeconds: Math.floor((retryAt - rig.clock.ms) / 1000) },
    ]);

    // At the retry time a copy sends it, once.
    rig.clock.advance(retryAt - rig.clock.ms + 1);
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 2 });
    expect(rig.accepted(message.id)).toHaveLength(1);
  });

  it('on_ambiguous = retry: a takeover whose interrupted attempt was the last allowed one makes the message dead and sends nothing more', async () => {
    // POSTDATE_MAX_ATTEMPTS = 3: the sender that died was making the 3rd attempt.
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage({
      onAmbiguous: 'retry',
      status: 'sending',
      attempts: 2,
      leaseOwner: 'a-sender-that-died',
      leaseUntil: new Date(rig.clock.ms - 1000),
    });
    const transactionsBefore = world.smtp.transactions;
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(world.smtp.transactions).toBe(transactionsBefore);
    const dead = await rig.state(message.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 3, last_error: { class: 'ambiguous' } });
    expect(dead.lease_owner).toBeUndefined();
    expect(dead.history.map((entry) => entry.outcome)).toEqual(['ambiguous']);
    expect(dead.due_pk).toMatch(/^wait#dead#\d+$/);
    // Dead means dead: the sender moved the copy to the DLQ itself.
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
    const [parked] = await rig.receive({ queueUrl: rig.urls.sendDeadLetter, waitSeconds: 3, max: 1 });
    expect(JSON.parse(parked?.body ?? '{}')).toMatchObject({ id: message.id, rev: 1, dlq: true });
    expect(rig.metrics.of('Dead')).toBe(1);
    expect(rig.metrics.of('Ambiguous')).toBe(1);
  });

  describe('a sender killed between DATA and the outcome write', () => {
    /** Runs one send whose sender dies after the relay accepted it; the record stays `sending`. */
    async function killedSend(rig: SenderRig, onAmbiguous: 'retry' | 'hold') {
      world.smtp.script();
      const message = await rig.putMessage({ onAmbiguous });
      await rig.dispatch(message);
      const records = await rig.receive({ waitSeconds: 3, max: 1 });
      // The invocation never answers (its process is gone): the copy is neither deleted nor kept.
      void rig.newHandler({ store: killedBeforeOutcome(store) })({ Records: records });
      await eventually('the relay to accept the message', () => rig.accepted(message.id).length === 1);
      const left = await rig.state(message.id);
      expect(left.status).toBe('sending');
      expect(rig.accepted(message.id)).toHaveLength(1);
      // The lease runs out (the sweeper then re-dispatches the current rev).
      rig.clock.advance(121_000);
      await rig.dispatch(message);
      return message;
    }

    it('on_ambiguous = retry: the next attempt sends again with the same Message-ID and records the ambiguity', async () => {
      const rig = await createSenderRig(world);
      const message = await killedSend(rig, 'retry');

      const { response } = await rig.deliverNext();

      expect(response.batchItemFailures).toEqual([]);
      const state = await rig.state(message.id);
      expect(state.status).toBe('sent');
      // The killed attempt counts (the relay saw it), and so does the new one.
      expect(state.attempts).toBe(2);
      expect(state.history.map((entry) => entry.outcome)).toEqual(['ambiguous', 'sent']);
      const copies = rig.accepted(message.id);
      expect(copies).toHaveLength(2);
      expect(copies.map((copy) => copy.messageId)).toEqual([
        `<${message.id}@mail.test>`,
        `<${message.id}@mail.test>`,
      ]);
      expect(rig.metrics.of('Ambiguous')).toBe(1);
    });

    it('on_ambiguous = hold: the message becomes unknown and nothing more is sent', async () => {
      const rig = await createSenderRig(world);
      const message = await killedSend(rig, 'hold');
      const transactionsBefore = world.smtp.transactions;

      const { response } = await rig.deliverNext();

      expect(response.batchItemFailures).toEqual([]);
      expect(world.smtp.transactions).toBe(transactionsBefore);
      const state = await rig.state(message.id);
      expect(state.status).toBe('unknown');
      expect(state.lease_owner).toBeUndefined();
      // Not overdue any more: it waits for an operator, counted by the sweeper's gauge.
      expect(state.due_pk).toMatch(/^wait#unknown#\d+$/);
      expect(state.last_error).toMatchObject({ class: 'ambiguous' });
      expect(state.history.map((entry) => entry.outcome)).toEqual(['ambiguous']);
      expect(rig.accepted(message.id)).toHaveLength(1);
      expect(rig.metrics.of('Unknown')).toBe(1);
      expect(rig.metrics.of('Ambiguous')).toBe(1);
    });
  });
});
