/**
 * Quiet hours in the sender (docs/design.md §16 Local time and quiet hours): a copy that comes due
 * inside the window — the first time, after a retry's backoff, or back from an operator's pause —
 * goes back unsent, no attempt and no status change, its record's `due_at` at the window's end, and
 * is sent once it comes back after the end; one whose `not_after` comes before the end expires; one
 * whose `time_zone` the sender does not know fails (permanent, no attempt) and never comes back. A
 * takeover of an expired lease inside the window settles the interrupted attempt first (DESIGN §5:
 * ambiguous, under `retry` the message is `retrying` with the attempt counted), so the held message
 * is not left `sending` with no sender and the user can still cancel it (DESIGN §2, §3). Covers
 * sender/processCopy.ts (the runner), core/unsentDecision.ts (the decision) and
 * store/senderTransitions.ts (`hold`), on DynamoDB Local, the SQS emulator and a real smtp-server;
 * the sender's clock is the test's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_PAUSED, type PauseState } from '../../lambdas/core/relayBreaker.js';
import type { RelayProbe } from '../../lambdas/ports/SendingGate.js';
import { RelayGate } from '../../lambdas/sender/relayGate.js';
import { DynamoSendingGate, SendingGateItems } from '../../lambdas/store/sendingGate.js';
import { BREAKER_SETTINGS } from './breakerHarness.js';
import {
  cancelThroughApi,
  createSenderRig,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
} from './senderHarness.js';

/** 21:59:57.500 UTC: 2.5 s before the end of a 21:00–22:00 window in UTC. */
const NEAR_THE_END = Date.UTC(2026, 11, 3, 21, 59, 57, 500);
const END = Date.UTC(2026, 11, 3, 22, 0, 0);
const QUIET = { timeZone: 'UTC', quietHours: { start: '21:00', end: '22:00' } };

describe('the sender and quiet hours', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
    world.smtp.script();
  });
  afterAll(async () => {
    await world.close();
  });

  it('holds a copy due inside the window until its end, no attempt, then sends the copy that comes back exactly once', async () => {
    const rig = await createSenderRig(world);
    rig.clock.ms = NEAR_THE_END;
    const message = await rig.putMessage({ sendAt: new Date(NEAR_THE_END - 1000), ...QUIET });
    await rig.dispatch(message);

    const first = await rig.deliverNext();

    expect(first.response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    expect(rig.queue.enqueued).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 2 }]);
    const held = await rig.state(message.id);
    expect(held).toEqual({ ...message, due_at: new Date(END).toISOString() });
    expect(rig.log.text()).not.toContain('ada@example.org');

    // The re-delayed copy comes back after the window's end: it goes.
    rig.clock.ms = END + 50;
    await rig.deliverNext();

    expect(rig.received(message.id)).toHaveLength(1);
    const sent = await rig.state(message.id);
    expect(sent.status).toBe('sent');
    expect(sent.attempts).toBe(1);
    expect(Date.parse(sent.sent_at ?? '')).toBeGreaterThanOrEqual(END);
  });

  it('holds a copy for a whole night in steps of SQS’s longest delay, due_at at the morning’s end of the window', async () => {
    const rig = await createSenderRig(world);
    rig.clock.ms = Date.UTC(2026, 11, 3, 21, 30); // 22:30 in Berlin
    const message = await rig.putMessage({
      timeZone: 'Europe/Berlin',
      quietHours: { start: '21:00', end: '08:00' },
    });
    await rig.dispatch(message);

    await rig.deliverNext();

    expect(rig.queue.enqueued).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 900 }]);
    expect((await rig.state(message.id)).due_at).toBe('2026-12-04T07:00:00.000Z');
    expect(rig.received(message.id)).toEqual([]);
  });

  it('holds a retrying message whose backoff ends inside the window: still retrying, its attempts unchanged', async () => {
    const rig = await createSenderRig(world);
    rig.clock.ms = NEAR_THE_END;
    const message = await rig.putMessage({ status: 'retrying', attempts: 1, ...QUIET });
    await rig.dispatch(message);

    await rig.deliverNext();

    expect(rig.received(message.id)).toEqual([]);
    const held = await rig.state(message.id);
    expect(held.status).toBe('retrying');
    expect(held.attempts).toBe(1);
    expect(held.due_at).toBe(new Date(END).toISOString());
  });

  it('waits in process for an end less than a moment away, then sends', async () => {
    const rig = await createSenderRig(world);
    rig.clock.ms = END - 300;
    const message = await rig.putMessage({ ...QUIET });
    await rig.dispatch(message);

    await rig.deliverNext();

    expect(rig.sleeps).toEqual([300]);
    expect(rig.queue.enqueued).toEqual([]);
    expect(rig.received(message.id)).toHaveLength(1);
    expect((await rig.state(message.id)).status).toBe('sent');
  });

  it('expires a message whose not_after comes before the window ends: nothing sent', async () => {
    const rig = await createSenderRig(world);
    rig.clock.ms = NEAR_THE_END;
    const message = await rig.putMessage({ notAfter: new Date(END - 1), ...QUIET });
    await rig.dispatch(message);

    await rig.deliverNext();

    expect(rig.received(message.id)).toEqual([]);
    const state = await rig.state(message.id);
    expect(state.status).toBe('expired');
    expect(state.attempts).toBe(0);
    expect(rig.metrics.of('Expired')).toBe(1);
  });

  it('fails a message whose time_zone this runtime does not know: permanent, the zone named, no SMTP, no attempt', async () => {
    // Written by hand (or by an outbox on a runtime with newer tz data): the API admits no such zone.
    const rig = await createSenderRig(world);
    rig.clock.ms = NEAR_THE_END;
    const message = await rig.putMessage({ timeZone: 'Mars/Olympus_Mons', quietHours: QUIET.quietHours });
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    const state = await rig.state(message.id);
    expect(state).toMatchObject({ status: 'failed', attempts: 0 });
    expect(state.last_error).toEqual({
      class: 'permanent',
      code: null,
      enhanced_code: null,
      message: 'time_zone Mars/Olympus_Mons is not a time zone this sender knows; quiet hours cannot be read',
    });
    expect(state.lease_owner).toBeUndefined();
    expect(rig.metrics.of('Failed')).toBe(1);
    expect(rig.queue.enqueued).toEqual([]);
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
  });

  describe('a takeover of an expired lease inside the window (DESIGN §2, §5)', () => {
    /** A sender died mid-send a minute before the window began; its lease ran out inside it. */
    async function leftSending(rig: SenderRig) {
      rig.clock.ms = NEAR_THE_END;
      const message = await rig.putMessage({
        ...QUIET,
        onAmbiguous: 'retry',
        status: 'sending',
        attempts: 0,
        sendAt: new Date(Date.UTC(2026, 11, 3, 20, 59)),
        leaseOwner: 'a-sender-that-died',
        leaseUntil: new Date(NEAR_THE_END - 60_000),
      });
      await rig.dispatch(message);
      return message;
    }

    it('settles the interrupted attempt first: retrying, the attempt counted once, held to the end, then sent exactly once', async () => {
      const rig = await createSenderRig(world);
      const message = await leftSending(rig);

      const first = await rig.deliverNext();

      expect(first.response.batchItemFailures).toEqual([]);
      expect(rig.received(message.id)).toEqual([]);
      const held = await rig.state(message.id);
      expect(held).toMatchObject({
        status: 'retrying',
        attempts: 1,
        last_error: { class: 'ambiguous' },
        due_at: new Date(END).toISOString(),
      });
      expect(held.lease_owner).toBeUndefined();
      expect(held.lease_until).toBeUndefined();
      expect(held.history.map((entry) => entry.outcome)).toEqual(['ambiguous']);
      expect(rig.metrics.of('Ambiguous')).toBe(1);
      expect(rig.queue.enqueued).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 2 }]);

      // The re-delayed copy comes back after the window's end: it goes, once; the interrupted
      // attempt is not counted again.
      rig.clock.ms = END + 50;
      await rig.deliverNext();

      expect(rig.received(message.id)).toHaveLength(1);
      const sent = await rig.state(message.id);
      expect(sent).toMatchObject({ status: 'sent', attempts: 2 });
      expect(sent.history.map((entry) => entry.outcome)).toEqual(['ambiguous', 'sent']);
      expect(rig.metrics.of('Ambiguous')).toBe(1);
    });

    it('the user can cancel the held message (DELETE 200); the copy that comes back sends nothing', async () => {
      const rig = await createSenderRig(world);
      const message = await leftSending(rig);
      await rig.deliverNext();

      const cancel = await cancelThroughApi(world, message.id, rig.clock.now);

      expect(cancel.status).toBe(200);
      expect(cancel.json).toMatchObject({ id: message.id, status: 'cancelled' });
      rig.clock.ms = END + 50;
      await rig.deliverNext();
      expect(rig.received(message.id)).toEqual([]);
      expect((await rig.state(message.id)).status).toBe('cancelled');
    });

    it('under on_ambiguous = hold the takeover makes it unknown, held or not: nothing sent', async () => {
      const rig = await createSenderRig(world);
      rig.clock.ms = NEAR_THE_END;
      const message = await rig.putMessage({
        ...QUIET,
        onAmbiguous: 'hold',
        status: 'sending',
        leaseOwner: 'a-sender-that-died',
        leaseUntil: new Date(NEAR_THE_END - 60_000),
      });
      await rig.dispatch(message);

      await rig.deliverNext();

      expect(rig.received(message.id)).toEqual([]);
      expect(await rig.state(message.id)).toMatchObject({ status: 'unknown', attempts: 1 });
      expect(rig.queue.enqueued).toEqual([]);
    });
  });
});

describe('quiet hours after an operator’s pause (DESIGN §16: "after … a pause")', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
    world.smtp.script();
  });
  afterAll(async () => {
    await world.close();
  });

  /** Never asked: no breaker opens here. */
  const NO_PROBE: RelayProbe = { probe: async () => ({ ok: true, durationMs: 1 }) };
  const PAUSED: PauseState = {
    version: 1,
    kinds: {},
    all: { reason: 'incident', at: '2026-12-03T20:58:00.000Z', except: [] },
  };

  it('a copy the pause handed back before the window, back after the resume inside it, is held to the end: no attempt; then sent once', async () => {
    const rig = await createSenderRig(world);
    // The sender as the wiring builds it: the gate read on the sender's clock, no read kept.
    const items = new SendingGateItems(world.documents, world.tableName, () => rig.clock.ms);
    const handler = rig.newHandler({
      relayGate: new RelayGate({
        store: new DynamoSendingGate(world.documents, world.tableName, 'default', items),
        probe: NO_PROBE,
        queue: rig.queue,
        settings: BREAKER_SETTINGS,
        now: rig.clock.now,
        random: () => 0,
        cacheMs: 0,
        log: rig.log,
        metrics: rig.metrics,
        relay: 'default',
      }),
      relayName: 'default',
    });
    const operator = new DynamoSendingGate(world.documents, world.tableName);
    const START = Date.UTC(2026, 11, 3, 21, 0, 0);
    rig.clock.ms = START - 60_000; // 20:59, before the 21:00–22:00 window
    const message = await rig.putMessage({ sendAt: new Date(START - 120_000), ...QUIET });
    expect(await operator.writePause(NOT_PAUSED, PAUSED)).toBe('written');
    await rig.dispatch(message);

    // Due outside the window but paused: back unclaimed, nothing held.
    const paused = await rig.run(await rig.receive({ max: 1, waitSeconds: 3 }), handler);
    expect(paused.batchItemFailures).toHaveLength(1);
    expect(rig.metrics.of('SendingPaused')).toBe(1);
    expect(await rig.state(message.id)).toEqual(message);

    // Resumed at 21:30, inside the window: the same copy comes back and is held to its end.
    rig.clock.ms = START + 30 * 60_000;
    expect(await operator.writePause(PAUSED, { ...NOT_PAUSED, version: 2 })).toBe('written');
    const back = await rig.receive({ max: 1, waitSeconds: 20 });
    expect(back).toHaveLength(1);
    const held = await rig.run(back, handler);
    expect(held.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    expect(rig.queue.enqueued).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 900 }]);
    expect(await rig.state(message.id)).toEqual({ ...message, due_at: new Date(END).toISOString() });

    // After the window's end the copy goes, once.
    rig.clock.ms = END + 50;
    await rig.dispatch(message);
    await rig.run(await rig.receive({ max: 1, waitSeconds: 3 }), handler);
    expect(rig.received(message.id)).toHaveLength(1);
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 1 });
  });
});
