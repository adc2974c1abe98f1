/**
 * DESIGN §5 "Deadlines" (past `not_after` a message becomes `expired` instead of being sent),
 * docs/design.md §16 (a message that comes due inside its quiet hours is held until they end) and
 * DESIGN §5/§15 (`sending pause` and `relays disable` take effect within about a second), at the
 * moment that counts: when the copy would go. The send rate (DESIGN §5 "Rate") waits before the
 * claim, and that wait can carry a copy past its deadline, into its window, or past the operator's
 * pause or drain; what was true when the copy arrived no longer is. On DynamoDB Local, the SQS
 * emulator and real smtp-servers; the send rate is one recipient every 10 s on the sender's clock,
 * which the test moves (the bucket's waits advance it), so a second copy waits 10 s behind the first.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PauseEntry } from '../../lambdas/core/relayBreaker.js';
import { NOT_PAUSED } from '../../lambdas/core/relayBreaker.js';
import { attemptBudgetMs } from '../../lambdas/core/sendTiming.js';
import type { RelayProbe } from '../../lambdas/ports/SendingGate.js';
import { RelayGate } from '../../lambdas/sender/relayGate.js';
import { DynamoSendingGate, SendingGateItems } from '../../lambdas/store/sendingGate.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { BREAKER_SETTINGS } from './breakerHarness.js';
import {
  contextWithRemaining,
  createSenderRig,
  type SenderRig,
  type SenderWorld,
  smtpMailer,
  startSenderWorld,
  TEST_SETTINGS,
} from './senderHarness.js';

/** One recipient every 10 s: the bucket holds one token, and the next comes 10 s later. */
const SLOW_RATE = 0.1;

const HOUR = 3_600_000;
/** `HH:MM` of a time, in UTC. */
const hourOf = (ms: number): string => new Date(ms).toISOString().slice(11, 16);

describe('the sender judges deadlines and quiet hours after the send-rate wait', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
    world.smtp.script();
  });
  afterAll(async () => {
    await world.close();
  });

  /** A first message takes the bucket's one token, so the next copy waits for the rate. */
  async function drainTheBucket(rig: SenderRig): Promise<void> {
    const first = await rig.putMessage();
    await rig.dispatch(first);
    await rig.deliverNext();
    expect(rig.received(first.id)).toHaveLength(1);
  }

  /** The next copy, in an invocation with a minute left on the sender's clock: time for the wait and a whole attempt. */
  async function deliverWithTime(rig: SenderRig) {
    const records = await rig.receive({ max: 1, waitSeconds: 3 });
    expect(records).toHaveLength(1);
    return { response: await rig.run(records, rig.handler, contextWithRemaining(60_000)) };
  }

  it('expires a copy whose not_after passes while it waits for the send rate: nothing reaches the relay', async () => {
    const rig = await createSenderRig(world, { maxSendRate: SLOW_RATE });
    await drainTheBucket(rig);
    const notAfter = new Date(rig.clock.ms + 5_000);
    const message = await rig.putMessage({ notAfter });
    await rig.dispatch(message);

    const { response } = await deliverWithTime(rig);

    // The copy did wait for the rate, past its deadline (the sender's clock, not the test's time).
    expect(rig.clock.ms).toBeGreaterThan(notAfter.getTime());
    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    const state = await rig.state(message.id);
    expect(state.status).toBe('expired');
    expect(state.attempts).toBe(0);
    expect(rig.metrics.of('Expired')).toBe(1);
  });

  /**
   * DESIGN §5a "Never out of time mid-send" and "Rate limiting waits before the claim": a wait for the
   * rate that would end with less than a whole attempt left is not waited at all — the invocation
   * would run past its timeout in it (Lambda ends it as an error, and its other copies come back
   * only after the queue's visibility timeout). After a throttle the fleet's factor can make one
   * recipient's turn minutes away.
   */
  it('hands a copy back unclaimed at once when its turn at the send rate would leave no time for a whole attempt', async () => {
    // One recipient every 100 s: longer than the invocation has.
    const rig = await createSenderRig(world, { maxSendRate: 0.01 });
    await drainTheBucket(rig);
    const message = await rig.putMessage();
    await rig.dispatch(message);
    // Time for a whole attempt and 3 s more; the bucket's next token is 100 s away.
    const remainingMs = attemptBudgetMs(TEST_SETTINGS.timing) + 3_000;
    const startedMs = rig.clock.ms;
    const records = await rig.receive({ max: 1, waitSeconds: 3 });
    expect(records).toHaveLength(1);
    const response = await rig.run(records, rig.handler, contextWithRemaining(remainingMs));

    // The invocation ended inside its time, on the sender's clock.
    expect(rig.clock.ms - startedMs).toBeLessThan(remainingMs);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[0]?.messageId }]);
    expect(rig.received(message.id)).toEqual([]);
    expect(await rig.state(message.id)).toMatchObject({ status: 'scheduled', attempts: 0 });
    expect(rig.metrics.of('OutOfTime')).toBe(1);
  });

  it('holds a copy whose quiet hours begin while it waits for the send rate: no attempt, due at their end', async () => {
    const rig = await createSenderRig(world, { maxSendRate: SLOW_RATE });
    // A window that opens in the future: the sender's clock only moves forward from when its bucket
    // was made (a clock set back would owe the bucket the difference, and the copy would run out of time).
    const start = Math.ceil((Date.now() + 60_000) / HOUR) * HOUR;
    const end = start + HOUR;
    rig.clock.ms = start - 5_000;
    await drainTheBucket(rig);
    const quietHours = { start: hourOf(start), end: hourOf(end) };
    const message = await rig.putMessage({ timeZone: 'UTC', quietHours });
    await rig.dispatch(message);

    const { response } = await deliverWithTime(rig);

    expect(rig.clock.ms).toBeGreaterThan(start);
    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    const held = await rig.state(message.id);
    expect(held).toMatchObject({ status: 'scheduled', attempts: 0, due_at: new Date(end).toISOString() });
    expect(rig.queue.enqueued).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 900 }]);
  });
});

describe("the sender reads the sending gate again after the send-rate wait: the operator's pause and drain hold copies already waiting", () => {
  let world: SenderWorld;
  let backup: TestSmtpServer;
  beforeEach(async () => {
    [world, backup] = await Promise.all([startSenderWorld(), startSmtpServer()]);
    world.smtp.script();
    backup.script();
  });
  afterEach(async () => {
    await world.close();
    await backup.close();
  });

  /** Never asked: no breaker opens in these tests. */
  const NO_PROBE: RelayProbe = { probe: async () => ({ ok: true, durationMs: 1 }) };

  /**
   * A sender as the wiring builds it (sender/senderDependencies.ts): each relay's gate on the one
   * Query of the gate's items, a read kept a second (decision 0142), all on the sender's clock. The
   * first relay is the world's smtp-server at SLOW_RATE; `backup`, when named, has no rate. `whileWaiting`
   * runs once, in the first wait the sender makes (the rate's): the operator acts while copies wait.
   */
  function gatedRig(rig: SenderRig, first: string, whileWaiting: () => Promise<void>, withBackup = false) {
    const items = new SendingGateItems(world.documents, world.tableName, () => rig.clock.ms);
    const gate = (relay: string) =>
      new RelayGate({
        store: new DynamoSendingGate(world.documents, world.tableName, relay, items),
        probe: NO_PROBE,
        queue: rig.queue,
        settings: BREAKER_SETTINGS,
        now: rig.clock.now,
        random: () => 0,
        cacheMs: 1000,
        log: rig.log,
        metrics: rig.metrics,
        relay,
      });
    const backupMailer = smtpMailer(backup);
    let acted = false;
    const handler = rig.newHandler({
      relayGate: gate(first),
      relayName: first,
      ...(withBackup ? { failover: [{ name: 'backup', mailer: backupMailer, gate: gate('backup') }] } : {}),
      sleep: async (milliseconds) => {
        if (!acted) {
          acted = true;
          await whileWaiting();
        }
        rig.sleeps.push(milliseconds);
        rig.clock.advance(milliseconds);
      },
    });
    return { handler, close: () => backupMailer.close() };
  }

  /** A first message takes the bucket's one token (no wait), then three copies wait for the rate in one batch. */
  async function threeWaiting(rig: SenderRig, handler: ReturnType<typeof gatedRig>['handler']) {
    const first = await rig.putMessage();
    await rig.dispatch(first);
    await rig.run(await rig.receive({ max: 1, waitSeconds: 3 }), handler, contextWithRemaining(120_000));
    expect(rig.received(first.id)).toHaveLength(1);
    const messages = await Promise.all([1, 2, 3].map(() => rig.putMessage()));
    for (const message of messages) await rig.dispatch(message);
    const records: Awaited<ReturnType<SenderRig['receive']>> = [];
    while (records.length < messages.length) {
      const more = await rig.receive({ max: 10, waitSeconds: 3 });
      expect(more.length).toBeGreaterThan(0);
      records.push(...more);
    }
    const response = await rig.run(records, handler, contextWithRemaining(120_000));
    return { messages, records, response };
  }

  const drain: PauseEntry = { reason: 'maintenance', at: '2026-12-03T10:00:00.000Z' };

  it('sending paused while copies wait for the rate: the relay receives none of them; no attempt, back unclaimed', async () => {
    const rig = await createSenderRig(world, { maxSendRate: SLOW_RATE });
    const operator = new DynamoSendingGate(world.documents, world.tableName);
    const { handler, close } = gatedRig(rig, 'default', async () => {
      const pause = { version: 1, kinds: {}, all: { ...drain, reason: 'incident', except: [] } };
      expect(await operator.writePause(NOT_PAUSED, pause)).toBe('written');
    });

    const { messages, records, response } = await threeWaiting(rig, handler);
    await close();

    // The pause was visible after the wait: a read of the gate at most a second old came after it.
    expect(rig.sleeps.length).toBeGreaterThan(0);
    for (const message of messages) {
      expect(rig.received(message.id)).toEqual([]);
      expect(await rig.state(message.id)).toMatchObject({ status: 'scheduled', attempts: 0 });
    }
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier).sort()).toEqual(
      records.map((record) => record.messageId).sort(),
    );
    expect(rig.metrics.of('SendingPaused')).toBe(3);
  });

  it('the relay disabled while copies wait in its rate: none go to it; each leaves through the next relay, once', async () => {
    const rig = await createSenderRig(world, { maxSendRate: SLOW_RATE });
    const primary = new DynamoSendingGate(world.documents, world.tableName, 'primary');
    const { handler, close } = gatedRig(rig, 'primary', () => primary.setDisabled(drain), true);

    const { messages, response } = await threeWaiting(rig, handler);
    await close();

    expect(response.batchItemFailures).toEqual([]);
    for (const message of messages) {
      expect(rig.received(message.id)).toEqual([]);
      expect(backup.received.filter((mail) => mail.postdateId === message.id)).toHaveLength(1);
      expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 1, relay: 'backup' });
    }
    // One failover send counted per copy claimed for the backup, not per pass of the gate.
    expect(rig.metrics.of('FailoverSends', 'backup')).toBe(3);
  });
});
