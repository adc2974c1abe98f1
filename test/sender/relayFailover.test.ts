import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import { attemptBudgetMs } from '../../lambdas/core/sendTiming.js';
import type { SmtpCredentialsSource } from '../../lambdas/ports/SmtpCredentialsSource.js';
import type { SenderDependencies } from '../../lambdas/sender/createSenderHandler.js';
import { messageView } from '../../lambdas/store/messageView.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { type RelayOutage, startRelayOutage } from '../../local/smtp/relayOutage.js';
import {
  BREAKER_SETTINGS,
  BREAKER_TIMEOUT_SECONDS,
  type BreakerRig,
  type BreakerWorld,
  createBreakerRig,
  namedRelay,
  startBreakerWorld,
} from './breakerHarness.js';
import {
  contextWithRemaining,
  type SenderHandler,
  storeWith,
  TEST_SETTINGS,
  TestClock,
} from './senderHarness.js';

/**
 * DESIGN §15, failover across relays, on real parts: two smtp-servers — `primary` behind the
 * pass-through that plays an outage (nothing listening, or 421 at the greeting), and `backup` —
 * each relay with its own breaker in DynamoDB Local, the copies on the SQS emulator. What each
 * server received decides "sent exactly once, and through which relay".
 */

const BUDGET_MS = attemptBudgetMs(TEST_SETTINGS.timing);

const NO_LOGIN = environmentSmtpCredentials({ user: undefined, pass: undefined });

interface Endpoint {
  readonly host: string;
  readonly port: number;
}

describe('failover across relays', () => {
  let world: BreakerWorld;
  let backup: TestSmtpServer;
  beforeEach(async () => {
    [world, backup] = await Promise.all([startBreakerWorld(), startSmtpServer()]);
  });
  afterEach(async () => {
    await world.close();
    await backup.close();
  });

  /** One relay as a sender container has it: its pooled mailer and its gate (on `gateClock`, the real clock unless given). */
  const relay = (
    rig: BreakerRig,
    name: string,
    endpoint: Endpoint,
    credentials = NO_LOGIN,
    gateClock?: () => Date,
  ) => namedRelay(world, rig, name, endpoint, credentials, gateClock);

  /** A sender with `primary` (through the outage pass-through) first and `backup` second. */
  function failoverSender(
    rig: BreakerRig,
    primaryLogin: SmtpCredentialsSource = NO_LOGIN,
    primaryGateClock?: () => Date,
  ): SenderHandler {
    const first = relay(rig, 'primary', world.outage, primaryLogin, primaryGateClock);
    return rig.newHandler({
      mailer: first.mailer,
      relayGate: first.gate,
      relayName: first.name,
      failover: [relay(rig, 'backup', backup)],
      timeoutSeconds: BREAKER_TIMEOUT_SECONDS,
      now: () => new Date(),
      sleep: (milliseconds) => sleep(milliseconds),
    });
  }

  /** The first relay drained (disabled): senders whose mail leaves through the backup, each with its own overrides. */
  async function drainedPrimary(rig: BreakerRig) {
    const first = relay(rig, 'primary', world.outage);
    await new DynamoSendingGate(world.documents, world.tableName, 'primary').setDisabled({
      reason: 'drain',
      at: new Date().toISOString(),
    });
    return (overrides: Partial<SenderDependencies> = {}) =>
      rig.newHandler({
        mailer: first.mailer,
        relayGate: first.gate,
        relayName: first.name,
        failover: [relay(rig, 'backup', backup)],
        ...overrides,
      });
  }

  const deliveredTo = (server: TestSmtpServer, id: string) =>
    server.received.filter((message) => message.postdateId === id && message.outcome === 'accepted');

  async function sendsThroughBackup(
    rig: BreakerRig,
    sender: SenderHandler,
    primary: { readonly relay: TestSmtpServer | RelayOutage },
  ) {
    const messages = await Promise.all([1, 2, 3, 4, 5].map(() => rig.putMessage()));
    for (const message of messages) await rig.dispatch(message);
    await rig.drive({
      handlers: [sender],
      timeoutMs: 30_000,
      done: async () => messages.every((message) => deliveredTo(backup, message.id).length > 0),
    });
    for (const message of messages) {
      // Exactly once, through the backup; the outage counted no attempt; 0 dead.
      expect(deliveredTo(backup, message.id)).toHaveLength(1);
      expect(deliveredTo(world.smtp, message.id)).toHaveLength(0);
      const state = await rig.state(message.id);
      expect(state.status).toBe('sent');
      expect(state.attempts).toBe(1);
      // The attempt and the message name the relay the mail left through (DESIGN §15, §3a).
      // The history holds the attempts (decision 0175): the outage seen on the first relay was
      // none, so the one entry is the send through the backup.
      expect(state.history.map((attempt) => attempt.relay)).toEqual(['backup']);
      expect(messageView(state, { withHistory: false }).relay).toBe('backup');
    }
    expect(primary.relay).toBeDefined();
    return messages;
  }

  /** `later`, dispatched now, leave through the first relay again, once each, none through the backup. */
  async function sendsThroughPrimaryAgain(
    rig: BreakerRig,
    sender: SenderHandler,
    later: readonly { readonly id: string; readonly rev: number }[],
  ) {
    for (const message of later) await rig.dispatch(message);
    await rig.drive({
      handlers: [sender],
      timeoutMs: 20_000,
      done: async () => later.every((message) => deliveredTo(world.smtp, message.id).length > 0),
    });
    for (const message of later) {
      expect(deliveredTo(world.smtp, message.id)).toHaveLength(1);
      expect(deliveredTo(backup, message.id)).toHaveLength(0);
      expect((await rig.state(message.id)).relay).toBe('primary');
    }
  }

  it('the first relay refuses connections: the mail leaves through the second, once each, no attempt counted', async () => {
    const rig = await createBreakerRig(world);
    await world.outage.set('refusing');
    await sendsThroughBackup(rig, failoverSender(rig), { relay: world.outage });
    const primary = await new DynamoSendingGate(world.documents, world.tableName, 'primary').read();
    expect(primary.breaker.state).not.toBe('closed');
    const second = await new DynamoSendingGate(world.documents, world.tableName, 'backup').read();
    expect(second.breaker.state).toBe('closed');
    // The metric behind the alarm "mail leaves through anything but the first relay".
    expect(rig.metrics.of('FailoverSends')).toBeGreaterThanOrEqual(5);
    // Metrics per relay (DESIGN §15): the sends are the backup's, the outage the primary's.
    expect(rig.metrics.of('Sent', 'backup')).toBe(5);
    expect(rig.metrics.of('Sent', 'primary')).toBe(0);
    expect(rig.metrics.of('FailoverSends', 'backup')).toBeGreaterThanOrEqual(5);
    expect(rig.metrics.of('RelayUnavailable', 'primary')).toBeGreaterThanOrEqual(1);
    expect(rig.metrics.timings.filter((timing) => timing.relay === 'backup').length).toBeGreaterThanOrEqual(
      5,
    );
    await world.outage.set('up');
  });

  it('the first relay answers 421 at the greeting: the second takes the mail; at most one attempt per probe interval reaches the first', async () => {
    const rig = await createBreakerRig(world);
    await world.outage.set('down');
    const startedAt = Date.now();
    const before = world.outage.connections.down;
    await sendsThroughBackup(rig, failoverSender(rig), { relay: world.outage });
    const elapsedMs = Date.now() - startedAt;
    // One failing connection per copy already on its way (4 at once in a batch), then the probes.
    expect(world.outage.connections.down - before).toBeLessThanOrEqual(
      4 + Math.ceil(elapsedMs / BREAKER_SETTINGS.probeIntervalMs),
    );
    await world.outage.set('up');
  });

  it('the first relay refuses the login: the second takes the mail', async () => {
    const guarded = await startSmtpServer({ credentials: { username: 'postdate', password: 'right' } });
    try {
      const outage = await startRelayOutage({ targetHost: guarded.host, targetPort: guarded.port });
      try {
        const rig = await createBreakerRig(world);
        const wrong = environmentSmtpCredentials({ user: 'postdate', pass: 'wrong' });
        const first = relay(rig, 'primary', outage, wrong);
        const sender = rig.newHandler({
          mailer: first.mailer,
          relayGate: first.gate,
          relayName: first.name,
          failover: [relay(rig, 'backup', backup)],
          timeoutSeconds: BREAKER_TIMEOUT_SECONDS,
          now: () => new Date(),
          sleep: (milliseconds) => sleep(milliseconds),
        });
        await sendsThroughBackup(rig, sender, { relay: guarded });
        expect(guarded.received).toHaveLength(0);
        expect(guarded.authAttempts.some((attempt) => !attempt.ok)).toBe(true);
      } finally {
        await outage.close();
      }
    } finally {
      await guarded.close();
    }
  });

  it('the first relay comes back: its probe closes its breaker and the mail returns to it', async () => {
    const rig = await createBreakerRig(world);
    const sender = failoverSender(rig);
    await world.outage.set('down');
    await sendsThroughBackup(rig, sender, { relay: world.outage });

    await world.outage.set('up');
    const later = await Promise.all([1, 2, 3].map(() => rig.putMessage()));
    // Copies keep arriving; the first one after the probe is due probes the first relay, which answers.
    const deadline = Date.now() + 20_000;
    let closed = false;
    while (!closed && Date.now() < deadline) {
      const probeMessage = await rig.putMessage();
      await rig.dispatch(probeMessage);
      await rig.run(await rig.receive({ max: 10, waitSeconds: 1 }), sender);
      closed =
        (await new DynamoSendingGate(world.documents, world.tableName, 'primary').read()).breaker.state ===
        'closed';
    }
    expect(closed).toBe(true);
    await sendsThroughPrimaryAgain(rig, sender, later);
  });

  it("the first relay's daily quota is spent: the mail leaves through the second, no attempt counted; the hold over, it returns to the first", async () => {
    const rig = await createBreakerRig(world);
    // The first relay's gate keeps the test's clock, which stands still until the test moves it: its
    // hold ends when the test says, never because a copy came back late on a loaded machine (decision
    // 0297; a copy back after the hold met the quota again, and again, until the drive's deadline).
    const primaryClock = new TestClock();
    const sender = failoverSender(rig, NO_LOGIN, primaryClock.now);
    // SES's reply while a region's daily quota is spent (DESIGN §5 "Rate", §15).
    world.smtp.script({
      mailFrom: { code: 454, message: 'Throttling failure: Daily message quota exceeded.' },
    });
    const primary = new DynamoSendingGate(world.documents, world.tableName, 'primary');
    // The first relay keeps answering 454: a copy that waited for it would never leave.
    await sendsThroughBackup(rig, sender, { relay: world.smtp });
    expect(world.smtp.transactions).toBeGreaterThanOrEqual(1);

    // The quota comes back; once the hold is over, the next send through the first relay succeeds.
    world.smtp.script();
    const { breaker } = await primary.read();
    expect(Date.parse(breaker.quota_until ?? '')).toBeGreaterThan(primaryClock.ms);
    primaryClock.advance(Date.parse(breaker.quota_until ?? '') - primaryClock.ms + 1);
    await sendsThroughPrimaryAgain(rig, sender, await Promise.all([1, 2].map(() => rig.putMessage())));
  });

  it('every relay unavailable: the copy waits unclaimed, no attempt counted, nothing sent', async () => {
    const backupOutage = await startRelayOutage({ targetHost: backup.host, targetPort: backup.port });
    try {
      const rig = await createBreakerRig(world);
      const first = relay(rig, 'primary', world.outage);
      const sender = rig.newHandler({
        mailer: first.mailer,
        relayGate: first.gate,
        relayName: first.name,
        failover: [relay(rig, 'backup', backupOutage)],
        timeoutSeconds: BREAKER_TIMEOUT_SECONDS,
        now: () => new Date(),
        sleep: (milliseconds) => sleep(milliseconds),
      });
      await world.outage.set('refusing');
      await backupOutage.set('down');
      const message = await rig.putMessage();
      await rig.dispatch(message);
      for (let round = 0; round < 3; round++) {
        await rig.run(await rig.receive({ max: 10, waitSeconds: 2 }), sender);
      }
      const state = await rig.state(message.id);
      expect(state.attempts).toBe(0);
      expect(['scheduled', 'retrying']).toContain(state.status);
      expect(backup.received).toHaveLength(0);
      expect(world.smtp.received).toHaveLength(0);
      for (const name of ['primary', 'backup']) {
        const gate = await new DynamoSendingGate(world.documents, world.tableName, name).read();
        expect(gate.breaker.state).not.toBe('closed');
      }
      await world.outage.set('up');
      await backupOutage.set('up');
    } finally {
      await backupOutage.close();
    }
  });

  it('every relay disabled (drained by the operator, nothing paused): the copy waits unclaimed, counted RelaysDisabled, not SendingPaused', async () => {
    const rig = await createBreakerRig(world);
    const drained = { reason: 'both drained', at: new Date().toISOString() };
    for (const name of ['primary', 'backup']) {
      await new DynamoSendingGate(world.documents, world.tableName, name).setDisabled(drained);
    }
    const sender = failoverSender(rig);
    const message = await rig.putMessage();
    await rig.dispatch(message);

    const handedBack = await rig.run(await rig.receive({ max: 1, waitSeconds: 3 }), sender);

    expect(handedBack.batchItemFailures).toHaveLength(1);
    expect((await rig.state(message.id)).attempts).toBe(0);
    expect(backup.received).toHaveLength(0);
    expect(world.smtp.received).toHaveLength(0);
    expect(rig.metrics.of('RelaysDisabled')).toBe(1);
    expect(rig.metrics.of('SendingPaused')).toBe(0);
    expect(rig.metrics.of('RelayUnavailable')).toBe(0);
  });

  it('a recipient the first relay accepted is never sent again through the second', async () => {
    const rig = await createBreakerRig(world);
    const sender = failoverSender(rig);
    // The first relay takes a@ and defers b@ (451 at RCPT), then goes down.
    world.smtp.script({
      rcptTo: (address) =>
        address.startsWith('b@') ? { code: 451, message: '4.2.1 Try again later' } : undefined,
    });
    const message = await rig.putMessage({ to: ['a@example.com', 'b@example.com'] });
    await rig.dispatch(message);
    await rig.run(await rig.receive({ max: 1, waitSeconds: 2 }), sender);
    expect(deliveredTo(world.smtp, message.id).map((received) => received.to)).toEqual([['a@example.com']]);

    await world.outage.set('refusing');
    await rig.drive({
      handlers: [sender],
      timeoutMs: 30_000,
      done: async () => deliveredTo(backup, message.id).length > 0,
    });
    expect(deliveredTo(backup, message.id).map((received) => received.to)).toEqual([['b@example.com']]);
    expect((await rig.state(message.id)).status).toBe('sent');
    await world.outage.set('up');
  });

  it('hold: an ambiguous outcome on the first relay is never sent through the second', async () => {
    const rig = await createBreakerRig(world);
    const sender = failoverSender(rig);
    // The first relay reads the body, then the connection breaks before the final reply.
    world.smtp.script({ afterData: 'drop' });
    const message = await rig.putMessage({ onAmbiguous: 'hold' });
    await rig.dispatch(message);
    await rig.run(await rig.receive({ max: 1, waitSeconds: 2 }), sender);
    // Even with the first relay down from now on, nothing crosses to the second.
    await world.outage.set('refusing');
    for (let round = 0; round < 2; round++) {
      await rig.run(await rig.receive({ max: 10, waitSeconds: 1 }), sender);
    }
    expect((await rig.state(message.id)).status).toBe('unknown');
    expect(backup.received).toHaveLength(0);
    await world.outage.set('up');
  });

  it('a sender that dies after sending through the second relay: the takeover names that relay in the ambiguous attempt', async () => {
    const rig = await createBreakerRig(world);
    const sender = await drainedPrimary(rig);
    const message = await rig.putMessage({ onAmbiguous: 'hold' });
    await rig.dispatch(message);
    // The backup takes the mail, and the sender never records it: every outcome write fails until
    // its invocation is out of time, which leaves the record `sending` under its lease.
    const store = new DynamoSenderStore(world.documents, world.tableName);
    const dying = storeWith(store, {
      recordOutcome: () => Promise.reject(new Error('the sender died before its write')),
    });
    const deadline = rig.clock.ms + 60_000;
    await rig.run(await rig.receive({ max: 1, waitSeconds: 3 }), sender({ store: dying }), {
      getRemainingTimeInMillis: () => deadline - rig.clock.ms,
    });
    expect(deliveredTo(backup, message.id)).toHaveLength(1);
    expect(await rig.state(message.id)).toMatchObject({ status: 'sending', lease_relay: 'backup' });

    // Its lease runs out; a copy of the message comes back (the sweeper's) to another sender.
    rig.clock.advance((TEST_SETTINGS.leaseSeconds + 1) * 1000);
    await rig.dispatch(message);
    await rig.run(await rig.receive({ max: 1, waitSeconds: 3 }), sender(), contextWithRemaining(60_000));

    // DESIGN §15: every attempt records the relay's name, the interrupted one too (the operator
    // deciding an `unknown` message asks that relay's provider).
    const state = await rig.state(message.id);
    expect(state.status).toBe('unknown');
    expect(state.history.map((attempt) => [attempt.outcome, attempt.relay])).toEqual([
      ['ambiguous', 'backup'],
    ]);
    expect(messageView(state, { withHistory: false }).relay).toBe('backup');
    expect(state.lease_relay).toBeUndefined();
    expect(deliveredTo(backup, message.id)).toHaveLength(1);
  });

  it('a disabled relay is drained: its mail leaves through the next, nothing connects to it; enabled, mail returns', async () => {
    const rig = await createBreakerRig(world);
    const sender = failoverSender(rig);
    const primary = new DynamoSendingGate(world.documents, world.tableName, 'primary');
    await primary.setDisabled({ reason: 'maintenance', at: new Date().toISOString() });
    const before = world.outage.connections.up;
    await sendsThroughBackup(rig, sender, { relay: world.outage });
    // Drained, not failed: no connection reached the first relay, its breaker never moved.
    expect(world.outage.connections.up).toBe(before);
    expect((await primary.read()).breaker.version).toBe(0);

    await primary.setDisabled(undefined);
    await sendsThroughPrimaryAgain(rig, sender, await Promise.all([1, 2].map(() => rig.putMessage())));
  });

  it('FailoverSends counts a copy claimed for the second relay, once: handed back for lack of time, or its claim lost, it counts nothing', async () => {
    const rig = await createBreakerRig(world);
    const store = new DynamoSenderStore(world.documents, world.tableName);
    const failover = await drainedPrimary(rig);
    const [short, raced] = await Promise.all([rig.putMessage(), rig.putMessage()]);
    const next = async (message: { id: string; rev: number }) => {
      await rig.dispatch(message);
      const records = await rig.receive({ max: 1, waitSeconds: 3 });
      expect(records).toHaveLength(1);
      return records;
    };

    // Too little time left for a whole attempt: back unclaimed, not sent through the second relay.
    const handedBack = await rig.run(await next(short), failover(), contextWithRemaining(BUDGET_MS - 1));
    expect(handedBack.batchItemFailures).toHaveLength(1);
    expect(rig.metrics.of('OutOfTime')).toBe(1);
    expect(rig.metrics.of('FailoverSends', 'backup')).toBe(0);

    // Back at once, and with the time: claimed and sent through the second relay, counted once.
    const again = await rig.receive({ max: 1, waitSeconds: 3 });
    expect(again).toHaveLength(1);
    await rig.run(again, failover(), contextWithRemaining(60_000));
    expect(deliveredTo(backup, short.id)).toHaveLength(1);
    expect(rig.metrics.of('FailoverSends', 'backup')).toBe(1);

    // Another sender claims the message first: ours is lost, nothing sent by us, nothing counted.
    const racing = storeWith(store, {
      claim: async (input) => {
        expect((await store.claim({ ...input, owner: 'another sender' })).outcome).toBe('applied');
        return store.claim(input);
      },
    });
    await rig.run(await next(raced), failover({ store: racing }), contextWithRemaining(60_000));
    expect((await rig.state(raced.id)).lease_owner).toBe('another sender');
    expect(deliveredTo(backup, raced.id)).toHaveLength(0);
    expect(rig.metrics.of('FailoverSends', 'backup')).toBe(1);
    expect(rig.metrics.of('FailoverSends')).toBe(1);
  });

  it("each relay keeps its own rate: mail leaving through the second waits for the second's tokens", async () => {
    const rig = await createBreakerRig(world);
    const first = relay(rig, 'primary', world.outage);
    // The rig's clock moves only when the sender sleeps: what the buckets made it wait is all it slept.
    const sender = rig.newHandler({
      mailer: first.mailer,
      relayGate: first.gate,
      relayName: first.name,
      failover: [{ ...relay(rig, 'backup', backup), maxSendRate: 2 }],
    });
    await new DynamoSendingGate(world.documents, world.tableName, 'primary').setDisabled({
      reason: 'drain',
      at: new Date().toISOString(),
    });
    const messages = await Promise.all([1, 2, 3, 4, 5, 6].map(() => rig.putMessage()));
    for (const message of messages) await rig.dispatch(message);
    await rig.drive({
      handlers: [sender],
      timeoutMs: 30_000,
      done: async () => messages.every((message) => deliveredTo(backup, message.id).length > 0),
    });
    // Six recipients at 2 a second with a burst of 2: at least 2 s of waiting, whatever the batches.
    expect(rig.sleeps.reduce((sum, milliseconds) => sum + milliseconds, 0)).toBeGreaterThanOrEqual(2000);
    for (const message of messages) expect(deliveredTo(backup, message.id)).toHaveLength(1);
  });
});
