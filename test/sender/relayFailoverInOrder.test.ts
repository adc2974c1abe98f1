import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { DynamoSuppressionList } from '../../lambdas/store/suppressionList.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { type RelayOutage, startRelayOutage } from '../../local/smtp/relayOutage.js';
import { eventually } from '../support/eventually.js';
import {
  BREAKER_SETTINGS,
  BREAKER_TIMEOUT_SECONDS,
  type BreakerRig,
  type BreakerWorld,
  createBreakerRig,
  namedRelay,
  startBreakerWorld,
} from './breakerHarness.js';
import { TENANT } from './records.js';
import type { SenderHandler } from './senderHarness.js';

/**
 * DESIGN §15 with §5's outage rules, from an operator's side with three relays (decision 0244):
 * `primary` (the breaker world's server behind its outage pass-through), `second` (its own server
 * behind its own pass-through) and `third` (a server of its own). Each relay has its own breaker in
 * DynamoDB Local, the copies travel on the SQS emulator; what each server received decides "sent
 * exactly once, and through which relay", and each pass-through counts the connections a down relay
 * saw. Modules: sender/processCopy.ts (the relays in order), sender/relayGate.ts (breaker and probe),
 * core/relays.ts (`failoverDecision`), core/sendDecision.ts (no attempt for an outage).
 */

interface Endpoint {
  readonly host: string;
  readonly port: number;
}

describe('failover in order across three relays', () => {
  let world: BreakerWorld;
  let second: TestSmtpServer;
  let secondOutage: RelayOutage;
  let third: TestSmtpServer;
  beforeEach(async () => {
    [world, second, third] = await Promise.all([startBreakerWorld(), startSmtpServer(), startSmtpServer()]);
    secondOutage = await startRelayOutage({ targetHost: second.host, targetPort: second.port });
  });
  afterEach(async () => {
    await world.close();
    await secondOutage.close();
    await second.close();
    await third.close();
  });

  const relay = (rig: BreakerRig, name: string, endpoint: Endpoint) => namedRelay(world, rig, name, endpoint);

  /** A sender container with the three relays in order. */
  function threeRelaySender(rig: BreakerRig): SenderHandler {
    const first = relay(rig, 'primary', world.outage);
    return rig.newHandler({
      mailer: first.mailer,
      relayGate: first.gate,
      relayName: first.name,
      failover: [relay(rig, 'second', secondOutage), relay(rig, 'third', third)],
      timeoutSeconds: BREAKER_TIMEOUT_SECONDS,
      now: () => new Date(),
      sleep: (milliseconds) => sleep(milliseconds),
    });
  }

  const servers = () => ({ primary: world.smtp, second, third });
  const accepted = (server: TestSmtpServer, id: string) =>
    server.received.filter((message) => message.postdateId === id && message.outcome === 'accepted');

  /**
   * Sends `count` new messages with `senders` until each reached some server; then each was accepted
   * exactly once in all, by `through` alone, in one attempt that names it.
   */
  async function batchLeavesThrough(
    rig: BreakerRig,
    senders: readonly SenderHandler[],
    through: 'primary' | 'second' | 'third',
    count = 4,
  ) {
    const messages = await Promise.all(Array.from({ length: count }, () => rig.putMessage()));
    for (const message of messages) await rig.dispatch(message);
    const all = servers();
    const anywhere = (id: string) => Object.values(all).flatMap((server) => accepted(server, id));
    await rig.drive({
      handlers: senders,
      timeoutMs: 40_000,
      done: async () => messages.every((message) => anywhere(message.id).length > 0),
    });
    for (const message of messages) {
      const where = Object.entries(all).flatMap(([name, server]) =>
        accepted(server, message.id).map(() => name),
      );
      expect({ id: message.id, where }).toEqual({ id: message.id, where: [through] });
      const state = await rig.state(message.id);
      expect(state.status).toBe('sent');
      // The hand-over was no attempt: the one attempt is the send, and it names its relay.
      expect(state.attempts).toBe(1);
      expect(state.history.map((attempt) => attempt.relay)).toEqual([through]);
      expect(state.relay).toBe(through);
    }
    return messages;
  }

  /** Copies arrive until `name`'s breaker is closed again (the copy that finds its probe due probes it). */
  async function probedBackUp(rig: BreakerRig, senders: readonly SenderHandler[], name: string) {
    const gate = new DynamoSendingGate(world.documents, world.tableName, name);
    await eventually(
      `${name}'s probe to close its breaker`,
      async () => {
        const message = await rig.putMessage();
        await rig.dispatch(message);
        for (const [index, sender] of senders.entries()) {
          await rig.run(await rig.receive({ max: 10, waitSeconds: index === 0 ? 1 : 0 }), sender);
        }
        return (await gate.read()).breaker.state === 'closed';
      },
      { withinMs: 30_000, everyMs: 100 },
    );
  }

  it('first down: the second; first and second down: the third; each back in turn, mail returns in order; each message once, nothing dead, no attempt for a hand-over', async () => {
    const rig = await createBreakerRig(world);
    // Two sender containers, each with its own gates and pools, as Lambda runs them side by side.
    const senders = [threeRelaySender(rig), threeRelaySender(rig)];

    await batchLeavesThrough(rig, senders, 'primary');

    await world.outage.set('refusing');
    await batchLeavesThrough(rig, senders, 'second');

    await secondOutage.set('down');
    const secondDownAt = Date.now();
    const secondDownBefore = secondOutage.connections.down;
    await batchLeavesThrough(rig, senders, 'third');
    await batchLeavesThrough(rig, senders, 'third');
    // DESIGN §5: at most one connection attempt per probe interval reaches a down relay, beside the
    // one each copy already on its way makes when the outage begins (the 4 of the first batch).
    const secondDownMs = Date.now() - secondDownAt;
    expect(secondOutage.connections.down - secondDownBefore).toBeLessThanOrEqual(
      4 + Math.ceil(secondDownMs / BREAKER_SETTINGS.probeIntervalMs) + 1,
    );

    // The second comes back before the first: once its probe closes its breaker, mail leaves
    // through it again, not through the third, and still not through the first.
    await secondOutage.set('up');
    await probedBackUp(rig, senders, 'second');
    await batchLeavesThrough(rig, senders, 'second');

    await world.outage.set('up');
    await probedBackUp(rig, senders, 'primary');
    await batchLeavesThrough(rig, senders, 'primary');

    // Nothing dead-lettered, and no copy of anything left on the send queue but probe tokens.
    expect((await rig.depth(rig.urls.sendDeadLetter)).stored).toBe(0);
    for (const name of ['primary', 'second', 'third']) {
      const gate = await new DynamoSendingGate(world.documents, world.tableName, name).read();
      expect({ name, state: gate.breaker.state }).toEqual({ name, state: 'closed' });
    }
    expect(rig.metrics.of('Dead')).toBe(0);
    // Every send went somewhere once: the servers together hold as many accepted copies as sends.
    const sent = rig.metrics.of('Sent');
    const acceptedCopies = Object.values(servers()).reduce(
      (sum, server) => sum + server.received.filter((message) => message.outcome === 'accepted').length,
      0,
    );
    expect(acceptedCopies).toBe(sent);
  }, 180_000);

  it('a later relay that failed while carrying the mail is probed back by its token while the mail leaves through the first again', async () => {
    const rig = await createBreakerRig(world);
    const senders = [threeRelaySender(rig)];
    // The first drained: the second carries the mail, then goes down; the third takes over.
    await new DynamoSendingGate(world.documents, world.tableName, 'primary').setDisabled({
      reason: 'maintenance',
      at: new Date().toISOString(),
    });
    await batchLeavesThrough(rig, senders, 'second', 2);
    await secondOutage.set('refusing');
    await batchLeavesThrough(rig, senders, 'third', 2);
    const gate = new DynamoSendingGate(world.documents, world.tableName, 'second');
    expect((await gate.read()).breaker.state).not.toBe('closed');

    // The first enabled: mail leaves through it, and no copy asks the second's gate any more.
    await new DynamoSendingGate(world.documents, world.tableName, 'primary').setDisabled(undefined);
    await batchLeavesThrough(rig, senders, 'primary', 2);
    // The second comes back: its probe token, not a copy, closes its breaker (its RelayUnavailable clears).
    await secondOutage.set('up');
    const connectionsBefore = secondOutage.connections.up;
    await eventually(
      "the second relay's token to probe it and close its breaker",
      async () => {
        await rig.run(await rig.receive({ max: 10, waitSeconds: 1 }), senders[0]);
        return (await gate.read()).breaker.state === 'closed';
      },
      { withinMs: 30_000, everyMs: 100 },
    );
    expect(secondOutage.connections.up).toBeGreaterThan(connectionsBefore);
  }, 120_000);

  it("one message's own refusals at the first relay (554 after the dot, 421 after RCPT TO, 554 at RCPT TO) are that message's outcome: no breaker opens, nothing moves to the next relay", async () => {
    const rig = await createBreakerRig(world);
    const senders = [threeRelaySender(rig)];
    const primary = new DynamoSendingGate(world.documents, world.tableName, 'primary');
    // The first transaction's body is refused after the dot; from then on, two recipients are refused
    // at RCPT TO: one with a 421 that closes the session (Postfix's "too many errors"), one for good.
    world.smtp.script(
      { afterData: { code: 554, message: '5.6.0 Message content rejected' } },
      {
        rcptTo: (address) =>
          address.startsWith('closing@')
            ? { code: 421, message: '4.7.0 Too many errors from this sender, closing connection' }
            : address.startsWith('refused@')
              ? { code: 554, message: '5.7.1 Relay access denied for this recipient' }
              : undefined,
      },
    );
    const oneByOne = async (to: string) => {
      const message = await rig.putMessage({ to: [to] });
      await rig.dispatch(message);
      await rig.drive({
        handlers: senders,
        timeoutMs: 20_000,
        done: async () => (await rig.state(message.id)).attempts >= 1,
      });
      return rig.state(message.id);
    };
    const content = await oneByOne('content@example.com');
    expect(content).toMatchObject({ status: 'failed', attempts: 1, relay: 'primary' });
    const closing = await oneByOne('closing@example.com');
    expect(closing).toMatchObject({ status: 'retrying', attempts: 1, relay: 'primary' });
    const refused = await oneByOne('refused@example.com');
    expect(refused).toMatchObject({ status: 'failed', attempts: 1, relay: 'primary' });

    // The first relay's breaker never moved, and the mail after them leaves through it.
    expect((await primary.read()).breaker).toMatchObject({ state: 'closed', version: 0 });
    await batchLeavesThrough(rig, senders, 'primary');
    for (const server of [second, third]) expect(server.transactions).toBe(0);
    expect(secondOutage.connections.up + secondOutage.connections.down).toBe(0);
    expect(rig.metrics.of('FailoverSends')).toBe(0);
    expect(rig.metrics.of('RelayUnavailable')).toBe(0);
  }, 120_000);

  it('a recipient the second relay refuses with 5.1.1 is suppressed as the first would have it: the attempt names the second, and the next message to it, through the first, is suppressed without a transaction', async () => {
    const rig = await createBreakerRig(world);
    const senders = [threeRelaySender(rig)];
    await world.outage.set('refusing');
    second.script({
      rcptTo: (address) =>
        address.startsWith('gone@')
          ? { code: 550, message: '5.1.1 <gone@example.org>: User unknown' }
          : undefined,
    });
    const message = await rig.putMessage({ to: ['gone@example.org', 'here@example.org'] });
    await rig.dispatch(message);
    await rig.drive({
      handlers: senders,
      timeoutMs: 30_000,
      done: async () => accepted(second, message.id).length > 0,
    });
    expect(accepted(second, message.id).map((received) => received.to)).toEqual([['here@example.org']]);
    const state = await rig.state(message.id);
    expect(state).toMatchObject({ status: 'sent', attempts: 1, relay: 'second', rcpt_rejected: [0] });
    expect(state.history).toEqual([
      expect.objectContaining({
        relay: 'second',
        recipients: [expect.objectContaining({ code: '550', enhanced_code: '5.1.1' })],
      }),
    ]);
    const list = new DynamoSuppressionList(world.documents, world.tableName);
    expect((await list.list(TENANT, { limit: 10, after: null })).items).toEqual([
      expect.objectContaining({ address: 'gone@example.org', reason: 'hard_bounce', message_id: message.id }),
    ]);

    // The first relay back: the next message to that address leaves through no relay at all.
    await world.outage.set('up');
    await probedBackUp(rig, senders, 'primary');
    const transactions = world.smtp.transactions + second.transactions + third.transactions;
    const next = await rig.putMessage({ to: ['gone@example.org'] });
    await rig.dispatch(next);
    await rig.drive({
      handlers: senders,
      timeoutMs: 20_000,
      done: async () => (await rig.state(next.id)).status === 'suppressed',
    });
    expect(world.smtp.transactions + second.transactions + third.transactions).toBe(transactions);
    await batchLeavesThrough(rig, senders, 'primary', 1);
  }, 120_000);
});
