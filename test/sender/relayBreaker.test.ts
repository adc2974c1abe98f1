import { setTimeout as sleep } from 'node:timers/promises';
import { DeleteMessageCommand } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NOT_PAUSED, PROBE_TOKEN_ID, pauseAfter } from '../../lambdas/core/relayBreaker.js';
import { sqsClient } from '../support/awsLocal.js';
import {
  BREAKER_SETTINGS,
  type BreakerRig,
  type BreakerWorld,
  createBreakerRig,
  startBreakerWorld,
} from './breakerHarness.js';

/**
 * DESIGN §5, "An outage is not the message's fault", against the real parts: DynamoDB Local holds
 * the one breaker every sender shares, the SQS emulator carries the copies and the probe token, and
 * a real smtp-server sits behind a pass-through that plays the outage (421 at the greeting, or
 * nothing listening). Probe interval: 1 s. What the relay received decides "sent exactly once".
 */

const tokensQueued = (rig: BreakerRig) =>
  rig.queue.enqueued.filter((copy) => copy.payload.id === PROBE_TOKEN_ID).length;

/** The senders' writes that opened the breaker (the winner of the conditional write logs it). */
const opens = (rig: BreakerRig) =>
  rig.log.lines.filter((line) => line.message.includes('the breaker opened for every sender')).length;

/** Until the open breaker's next probe is due (its `probe_at` passed), within a deadline. */
async function untilProbeDue(rig: BreakerRig, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { breaker } = await rig.gateStore.read();
    const due = breaker.probe_at === undefined ? Number.NaN : Date.parse(breaker.probe_at);
    if (breaker.state === 'open' && due <= Date.now()) return;
    if (Date.now() > deadline) throw new Error(`the probe did not come due (${breaker.state})`);
    await sleep(50);
  }
}

/** The gaps (ms) between the connections the relay saw while down, from the `first`-th (0-based) on. */
const downConnectionGaps = (world: BreakerWorld, first: number) =>
  world.outage.downConnectionTimes
    .slice(first)
    .flatMap((at, index, times) => (index === 0 ? [] : [at - (times[index - 1] ?? at)]));

// A minute a test (the long outage has its own two): longer than the deadlines its waits have.
describe('the relay circuit breaker', { timeout: 60_000 }, () => {
  // A world of its own for every test: the breaker is one item per table.
  let world: BreakerWorld;
  beforeEach(async () => {
    world = await startBreakerWorld();
  });
  afterEach(async () => {
    await world.close();
  });

  it('a relay failure opens it for every sender: copies go back unclaimed, no attempt counted, one token armed', async () => {
    const rig = await createBreakerRig(world);
    await world.outage.set('down');
    const before = world.outage.connections.down;
    const messages = await Promise.all([1, 2, 3, 4, 5].map(() => rig.putMessage()));
    for (const message of messages) await rig.dispatch(message);
    const sender = rig.sender();
    const records = await rig.receive({ max: 10, waitSeconds: 2 });
    expect(records).toHaveLength(5);
    const startedAt = Date.now();
    const response = await rig.run(records, sender);
    const elapsedMs = Date.now() - startedAt;

    expect(response.batchItemFailures).toHaveLength(5);
    const gate = await rig.gateStore.read();
    // Open (a copy of the batch that came after the probe was due may have probed it once).
    expect(gate.breaker.state).toBe('open');
    expect(gate.breaker.opened_at).toBeDefined();
    expect(gate.breaker.reason).toMatch(/^421/);
    for (const message of messages) {
      const state = await rig.state(message.id);
      expect(state.attempts).toBe(0);
      expect(['scheduled', 'retrying']).toContain(state.status);
    }
    expect(tokensQueued(rig)).toBe(1);
    // One failing connection per copy already on its way to the relay (4 at once per batch), then
    // at most one probe per interval while the batch lasts.
    expect(world.outage.connections.down - before).toBeLessThanOrEqual(
      4 + Math.floor(elapsedMs / BREAKER_SETTINGS.probeIntervalMs),
    );
    expect(rig.metrics.of('RelayUnavailable')).toBeGreaterThanOrEqual(1);
    await world.outage.set('up');
  });

  it('two senders racing to open it: one write wins, one token', async () => {
    const rig = await createBreakerRig(world);
    await world.outage.set('refusing');
    const [a, b] = await Promise.all([rig.putMessage(), rig.putMessage()]);
    if (!a || !b) throw new Error('fixtures');
    await rig.dispatch(a);
    await rig.dispatch(b);
    const first = await rig.receive({ max: 1, waitSeconds: 2 });
    const second = await rig.receive({ max: 1, waitSeconds: 2 });
    await Promise.all([rig.run(first, rig.sender()), rig.run(second, rig.sender())]);
    const gate = await rig.gateStore.read();
    // One write opened it (a copy that reached the gate a probe interval later may have probed it).
    expect(gate.breaker.state).toBe('open');
    expect(opens(rig)).toBe(1);
    expect(gate.breaker.reason).toMatch(/^ESOCKET/);
    expect(tokensQueued(rig)).toBe(1);
    expect((await rig.state(a.id)).attempts).toBe(0);
    expect((await rig.state(b.id)).attempts).toBe(0);
    await world.outage.set('up');
  });

  it('two senders racing to probe: only one connects; when the relay is back one probe closes it and the copies are sent once', async () => {
    const rig = await createBreakerRig(world);
    await world.outage.set('down');
    const messages = await Promise.all([1, 2, 3, 4].map(() => rig.putMessage()));
    for (const message of messages) await rig.dispatch(message);
    const [s1, s2] = [rig.sender(), rig.sender()];
    await rig.run(await rig.receive({ max: 10, waitSeconds: 2 }), s1);
    expect((await rig.gateStore.read()).breaker.state).toBe('open');

    // The probe comes due; both senders get copies at once, the relay still down.
    await untilProbeDue(rig);
    const downBefore = world.outage.connections.down;
    const [x, y] = [
      await rig.receive({ max: 2, waitSeconds: 3 }),
      await rig.receive({ max: 2, waitSeconds: 3 }),
    ];
    await Promise.all([rig.run(x, s1), rig.run(y, s2)]);
    // Both found it due, one connected: the relay saw no two probes within one interval (a race
    // that lasted longer than one may have probed again, an interval later).
    expect(world.outage.connections.down - downBefore).toBeGreaterThanOrEqual(1);
    for (const gap of downConnectionGaps(world, downBefore)) {
      expect(gap).toBeGreaterThanOrEqual(BREAKER_SETTINGS.probeIntervalMs);
    }
    const afterFailedProbe = await rig.gateStore.read();
    expect(afterFailedProbe.breaker.state).toBe('open');
    for (const message of messages) expect((await rig.state(message.id)).attempts).toBe(0);

    // Back: the next probe closes it and the backlog drains, each message sent exactly once.
    await world.outage.set('up');
    await rig.drive({
      handlers: [s1, s2],
      timeoutMs: 30_000,
      done: async () => messages.every((message) => rig.received(message.id).length > 0),
    });
    expect((await rig.gateStore.read()).breaker.state).toBe('closed');
    for (const message of messages) {
      expect(rig.received(message.id)).toHaveLength(1);
      const state = await rig.state(message.id);
      expect(state.status).toBe('sent');
      expect(state.attempts).toBe(1);
    }
  });

  it('a relay that comes back mid-batch: the copy that finds the probe due probes, the rest of its batch is sent', async () => {
    const rig = await createBreakerRig(world);
    await world.outage.set('down');
    const messages = await Promise.all([1, 2, 3, 4, 5, 6].map(() => rig.putMessage()));
    for (const message of messages) await rig.dispatch(message);
    const sender = rig.sender();
    await rig.run(await rig.receive({ max: 10, waitSeconds: 2 }), sender);
    await world.outage.set('up');
    const linesBefore = rig.log.lines.length;
    await rig.drive({
      handlers: [sender],
      timeoutMs: 30_000,
      done: async () => messages.every((message) => rig.received(message.id).length > 0),
    });
    // One probe after the return closed it: none failed, none was needed again.
    const probes = rig.log.lines.slice(linesBefore).map((line) => line.message);
    expect(probes.filter((message) => message.includes('answered the probe'))).toHaveLength(1);
    expect(probes.filter((message) => message.includes('did not answer the probe'))).toHaveLength(0);
    expect((await rig.gateStore.read()).breaker.state).toBe('closed');
    for (const message of messages) {
      expect(rig.received(message.id)).toHaveLength(1);
      expect((await rig.state(message.id)).attempts).toBe(1);
    }
  });

  it('an outage longer than maxReceiveCount × the probe interval dead-letters nothing, and the relay sees at most one probe per interval', async () => {
    // maxAttempts 3: the send queue's backstop is 3 × 3 + 10 = 19 receives.
    const rig = await createBreakerRig(world, { maxAttempts: 3 });
    await world.outage.set('down');
    const downBefore = world.outage.connections.down;
    const startedAt = Date.now();
    const messages = await Promise.all([1, 2, 3].map(() => rig.putMessage()));
    for (const message of messages) await rig.dispatch(message);
    const senders = [rig.sender(), rig.sender()];
    const replaced = () =>
      messages.filter((message) => rig.queue.enqueued.some((copy) => copy.payload.id === message.id)).length;
    // Down until every message's copy was received so often that it had to be replaced, and for
    // longer than the backstop's receives would last at one receive per interval.
    const backstopMs = 19 * BREAKER_SETTINGS.probeIntervalMs;
    await rig.drive({
      handlers: senders,
      timeoutMs: 90_000,
      done: async () => replaced() === messages.length && Date.now() - startedAt > backstopMs,
    });
    const outageMs = Date.now() - startedAt;
    const attemptsDuringOutage = world.outage.connections.down - downBefore;
    await world.outage.set('up');

    await rig.drive({
      handlers: senders,
      timeoutMs: 30_000,
      done: async () => messages.every((message) => rig.received(message.id).length > 0),
    });
    expect((await rig.depth(rig.urls.sendDeadLetter)).stored).toBe(0);
    for (const message of messages) {
      expect(rig.received(message.id)).toHaveLength(1);
      const state = await rig.state(message.id);
      expect(state.status).toBe('sent');
      expect(state.attempts).toBe(1);
    }
    // ≤ outage ÷ interval probes + one failing send per copy in flight at the start (2 senders × 4).
    expect(attemptsDuringOutage).toBeLessThanOrEqual(
      Math.ceil(outageMs / BREAKER_SETTINGS.probeIntervalMs) + 8,
    );
    expect(outageMs).toBeGreaterThan(backstopMs);
  }, 120_000);

  it('pause by kind holds that kind while other kinds flow; resume drains it, each sent exactly once', async () => {
    const rig = await createBreakerRig(world);
    await world.outage.set('up');
    const current = await rig.gateStore.read();
    const paused = pauseAfter(
      current.pause,
      { action: 'pause', kind: 'campaign', reason: 'rollout' },
      new Date(),
    );
    expect(await rig.gateStore.writePause(current.pause, paused)).toBe('written');

    const campaigns = await Promise.all([1, 2, 3].map(() => rig.putMessage({ tags: { kind: 'campaign' } })));
    const invoices = await Promise.all([1, 2, 3].map(() => rig.putMessage({ tags: { kind: 'invoice' } })));
    for (const message of [...campaigns, ...invoices]) await rig.dispatch(message);
    const sender = rig.sender();
    await rig.drive({
      handlers: [sender],
      timeoutMs: 20_000,
      done: async () => invoices.every((message) => rig.received(message.id).length > 0),
    });
    for (const message of campaigns) {
      expect(rig.received(message.id)).toHaveLength(0);
      const state = await rig.state(message.id);
      expect(state.status).toBe('scheduled');
      expect(state.attempts).toBe(0);
    }
    expect(rig.metrics.of('SendingPaused')).toBeGreaterThanOrEqual(3);

    const now = await rig.gateStore.read();
    await rig.gateStore.writePause(
      now.pause,
      pauseAfter(now.pause, { action: 'resume', kind: 'campaign' }, new Date()),
    );
    await rig.drive({
      handlers: [sender],
      timeoutMs: 20_000,
      done: async () => campaigns.every((message) => rig.received(message.id).length > 0),
    });
    for (const message of [...campaigns, ...invoices]) {
      expect(rig.received(message.id)).toHaveLength(1);
      expect((await rig.state(message.id)).status).toBe('sent');
    }
    expect((await rig.gateStore.read()).pause).toMatchObject({ kinds: {} });
    expect(NOT_PAUSED.version).toBe(0);
  }, 60_000);

  it('the probe token probes when no copy arrives, and a stale token is dropped', async () => {
    const rig = await createBreakerRig(world);
    await world.outage.set('down');
    const message = await rig.putMessage();
    await rig.dispatch(message);
    const sender = rig.sender();
    const records = await rig.receive({ max: 1, waitSeconds: 2 });
    await rig.run(records, sender);
    // Take the message's copy away: only the token circulates now.
    await sqsClient().send(
      new DeleteMessageCommand({ QueueUrl: rig.urls.send, ReceiptHandle: records[0]?.receiptHandle ?? '' }),
    );
    expect(tokensQueued(rig)).toBe(1);
    await world.outage.set('up');
    await rig.drive({
      handlers: [sender],
      timeoutMs: 20_000,
      done: async () => (await rig.gateStore.read()).breaker.state === 'closed',
    });
    // A token from an earlier outage, arriving late: dropped, nothing probed.
    const upBefore = world.outage.connections.up;
    await rig.dispatch({ id: PROBE_TOKEN_ID, rev: 1 });
    const stale = await rig.receive({ max: 1, waitSeconds: 2 });
    expect(stale).toHaveLength(1);
    const response = await rig.run(stale, sender);
    expect(response.batchItemFailures).toEqual([]);
    expect(world.outage.connections.up).toBe(upBefore);
    expect((await rig.gateStore.read()).breaker.state).toBe('closed');
  });
});
