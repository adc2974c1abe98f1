import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expiresAtAfter } from '../../lambdas/core/messageLifetime.js';
import { SIMULATOR_DOMAIN, testSideOf } from '../../lambdas/core/testSide.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { messageView } from '../../lambdas/store/messageView.js';
import { DynamoSuppressionList } from '../../lambdas/store/suppressionList.js';
import { TENANT } from './records.js';
import {
  createSenderRig,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
  TEST_SETTINGS,
} from './senderHarness.js';

/**
 * DESIGN §14 at send time: a test message runs through the sender — claim, suppressions, the
 * outcome decision, the suppression of a hard bounce — but is never handed to the relay. The sender
 * here has a real SMTP mailer and a real smtp-server that records every connection: it stays at
 * none while test messages to every simulator address reach their outcomes, and a live message
 * then opens one.
 */

const TEST_SIDE = testSideOf(TENANT);
const at = (mailbox: string) => `${mailbox}@${SIMULATOR_DOMAIN}`;

describe('the sender and test messages', () => {
  let world: SenderWorld;
  let list: DynamoSuppressionList;
  beforeAll(async () => {
    world = await startSenderWorld();
    list = new DynamoSuppressionList(world.documents, world.tableName);
  });
  afterAll(async () => {
    await world.close();
  });

  async function bodyExpiresAt(id: string): Promise<unknown> {
    const { Item } = await world.documents.send(
      new GetCommand({
        TableName: world.tableName,
        Key: { pk: messagePk(id), sk: 'BODY' },
        ConsistentRead: true,
      }),
    );
    return Item?.expires_at;
  }

  async function sendTest(rig: SenderRig, to: string[], onAmbiguous: 'retry' | 'hold' = 'retry') {
    const message = await rig.putMessage({ tenant: TEST_SIDE, to, onAmbiguous });
    await rig.dispatch(message);
    await rig.deliverNext();
    return message.id;
  }

  it('ends every simulator address in its outcome without opening an SMTP connection', async () => {
    const rig = await createSenderRig(world);

    const delivered = await sendTest(rig, [at('delivered')]);
    expect(await rig.state(delivered)).toMatchObject({ status: 'sent', attempts: 1, rcpt_accepted: [0] });
    expect((await rig.state(delivered)).history.map((entry) => [entry.outcome, entry.code])).toEqual([
      ['sent', '250'],
    ]);
    // The attempt names the simulator as its relay (DESIGN §15's `relay`), never a real one.
    expect((await rig.state(delivered)).history.map((entry) => entry.relay)).toEqual(['simulator']);

    const anyone = await sendTest(rig, ['Ada <ada@example.org>']);
    expect(await rig.state(anyone)).toMatchObject({ status: 'sent', attempts: 1 });

    const bounced = await sendTest(rig, [at('bounce')]);
    const bounce = await rig.state(bounced);
    expect(bounce).toMatchObject({ status: 'failed', attempts: 1, rcpt_rejected: [0] });
    expect(bounce.history.map((entry) => [entry.outcome, entry.code, entry.enhanced_code])).toEqual([
      ['permanent', '550', '5.1.1'],
    ]);

    const rejected = await sendTest(rig, [at('reject')]);
    const reject = await rig.state(rejected);
    expect(reject).toMatchObject({ status: 'failed', attempts: 1 });
    expect(reject.history.map((entry) => [entry.outcome, entry.code, entry.enhanced_code])).toEqual([
      ['permanent', '550', '5.7.1'],
    ]);

    const deferred = await sendTest(rig, [at('defer')]);
    expect(await rig.state(deferred)).toMatchObject({ status: 'retrying', attempts: 1 });
    await rig.deliverNext();
    const defer = await rig.state(deferred);
    expect(defer).toMatchObject({ status: 'sent', attempts: 2, rcpt_accepted: [0] });
    expect(defer.history.map((entry) => [entry.outcome, entry.code])).toEqual([
      ['transient', '451'],
      ['sent', '250'],
    ]);

    const held = await sendTest(rig, [at('ambiguous')], 'hold');
    const ambiguous = await rig.state(held);
    expect(ambiguous).toMatchObject({ status: 'unknown', attempts: 1 });
    expect(ambiguous.history.map((entry) => entry.outcome)).toEqual(['ambiguous']);

    const slow = await sendTest(rig, [at('slow')]);
    expect(await rig.state(slow)).toMatchObject({ status: 'sent', attempts: 1 });

    // One message, recipients one by one: accepted, refused for good, deferred (pending).
    const mixed = await sendTest(rig, [at('delivered'), at('reject'), at('defer')]);
    expect(await rig.state(mixed)).toMatchObject({ rcpt_accepted: [0], rcpt_rejected: [1] });

    // On a queue of its own: the mixed message's retry copy is on this one.
    const retryRig = await createSenderRig(world);
    const retried = await sendTest(retryRig, [at('ambiguous')], 'retry');
    expect(await retryRig.state(retried)).toMatchObject({ status: 'retrying', attempts: 1 });

    for (const id of [delivered, bounced, deferred, held, slow]) {
      expect(messageView(await rig.state(id), { withHistory: false }).test).toBe(true);
    }
    expect(world.smtp.sessions).toEqual([]);
    expect(world.smtp.transactions).toBe(0);

    // The bounce suppressed the address on the test side only.
    const testList = await list.list(TEST_SIDE, { limit: 10, after: null });
    expect(testList.items.map((item) => [item.address, item.message_id])).toEqual([[at('bounce'), bounced]]);
    expect((await list.list(TENANT, { limit: 10, after: null })).items).toEqual([]);

    // A live message through the same sender and mailer does open a connection: the server counts.
    const liveRig = await createSenderRig(world);
    const live = await liveRig.putMessage({ to: ['ada@example.org'] });
    await liveRig.dispatch(live);
    await liveRig.deliverNext();
    expect(await liveRig.state(live.id)).toMatchObject({ status: 'sent' });
    expect(messageView(await liveRig.state(live.id), { withHistory: false }).test).toBe(false);
    expect(world.smtp.sessions.length).toBeGreaterThan(0);
    expect(liveRig.received(live.id)).toHaveLength(1);
  });

  it('moves no live alarm, gauge or DLQ: a test message’s failed, unknown and dead stay on its side (DESIGN §14, §6)', async () => {
    const rig = await createSenderRig(world);

    const rejected = await sendTest(rig, [at('reject')]);
    expect(await rig.state(rejected)).toMatchObject({ status: 'failed' });
    const held = await sendTest(rig, [at('ambiguous')], 'hold');
    expect(await rig.state(held)).toMatchObject({ status: 'unknown' });

    // `retry` (the default): every attempt ambiguous, until the attempts are used up.
    const dying = await sendTest(rig, [at('ambiguous')], 'retry');
    for (let attempt = 2; attempt <= TEST_SETTINGS.maxAttempts; attempt++) await rig.deliverNext();
    const dead = await rig.state(dying);
    expect(dead).toMatchObject({ status: 'dead', attempts: TEST_SETTINGS.maxAttempts });
    // The API and the events still tell it as it is; the live DLQ never sees its copy, and the copy is gone.
    expect(messageView(dead, { withHistory: false })).toMatchObject({ status: 'dead', test: true });
    expect(await rig.depth(rig.urls.sendDeadLetter)).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });

    // The same when a sender died on its last attempt and the next one finds the lease expired.
    const interrupted = await rig.putMessage({
      tenant: TEST_SIDE,
      to: [at('delivered')],
      status: 'sending',
      attempts: TEST_SETTINGS.maxAttempts - 1,
      leaseOwner: 'a-sender-that-died',
      leaseUntil: new Date(rig.clock.ms - 1000),
    });
    await rig.dispatch(interrupted);
    await rig.deliverNext();
    expect(await rig.state(interrupted.id)).toMatchObject({ status: 'dead' });
    expect(await rig.depth(rig.urls.sendDeadLetter)).toEqual({ stored: 0, inFlight: 0, delayed: 0 });

    // None of them waits in the live gauges' partitions (the sweeper counts those for the alarms)…
    for (const id of [rejected, held, dying, interrupted.id])
      expect((await rig.state(id)).due_pk).toBeUndefined();
    // …so nobody would ever end one: it ends itself, its record and body kept for the retention from
    // the outcome (decision 0145), unless an API retry with the test key takes it back before.
    for (const id of [rejected, held, dying, interrupted.id]) {
      const ended = await rig.state(id);
      const expiresAt = expiresAtAfter(new Date(ended.updated_at), TEST_SETTINGS.retentionDays);
      expect([id, ended.expires_at, await bodyExpiresAt(id)]).toEqual([id, expiresAt, expiresAt]);
    }
    // …nor counts in the series the live alarms watch (FailedMessages, SmtpConfigErrors) or the dashboard's outcomes.
    for (const name of ['Failed', 'Unknown', 'Dead', 'Ambiguous', 'ConfigErrors', 'DeadLettered'] as const) {
      expect([name, rig.metrics.of(name)]).toEqual([name, 0]);
    }
    expect(rig.metrics.timings.filter((timing) => timing.name === 'Lateness')).toEqual([]);

    // A live message failing through the same sender still counts: the live alarm stays armed.
    world.smtp.script({ rcptTo: { code: 550, message: '5.7.1 Rejected by policy' } });
    try {
      const live = await rig.putMessage({ to: ['ada@example.org'] });
      await rig.dispatch(live);
      await rig.deliverNext();
      expect(await rig.state(live.id)).toMatchObject({ status: 'failed' });
      expect((await rig.state(live.id)).due_pk).toMatch(/^wait#failed#\d+$/);
    } finally {
      world.smtp.script();
    }
    expect(rig.metrics.of('Failed')).toBe(1);
  });

  it('moves no dashboard series either: the simulator’s SMTP time and the test side’s suppressions stay on its side (decision 0135)', async () => {
    const rig = await createSenderRig(world);
    // A test side of its own: its suppression list starts empty whatever the other tests did.
    const side = testSideOf('globex');
    const send = async (to: string[]) => {
      const message = await rig.putMessage({ tenant: side, to });
      await rig.dispatch(message);
      await rig.deliverNext();
      return rig.state(message.id);
    };

    // The bounce joins the test side's list (SuppressionsAdded), the next message leaves it out
    // (SuppressedRecipients), and one with nobody else ends suppressed (Suppressed).
    expect(await send([at('bounce')])).toMatchObject({ status: 'failed', rcpt_rejected: [0] });
    expect(await send([at('delivered'), at('bounce')])).toMatchObject({
      status: 'sent',
      rcpt_accepted: [0],
      rcpt_suppressed: [1],
    });
    expect(await send([at('bounce')])).toMatchObject({ status: 'suppressed', attempts: 0 });

    for (const name of ['Suppressed', 'SuppressedRecipients', 'SuppressionsAdded'] as const) {
      expect([name, rig.metrics.of(name)]).toEqual([name, 0]);
    }
    expect(rig.metrics.timings.filter((timing) => timing.name === 'SmtpDuration')).toEqual([]);

    // A live message through the same sender still times its SMTP transaction.
    const live = await rig.putMessage({ to: ['ada@example.org'] });
    await rig.dispatch(live);
    await rig.deliverNext();
    expect(await rig.state(live.id)).toMatchObject({ status: 'sent' });
    expect(rig.metrics.timings.filter((timing) => timing.name === 'SmtpDuration')).toHaveLength(1);
  });

  it('reads a simulator address in every spelling a recipient may take: a display name, any case, a quoted local part', async () => {
    const rig = await createSenderRig(world);
    const side = testSideOf('initech');
    const transactionsBefore = world.smtp.transactions;
    const send = async (to: string[], onAmbiguous: 'retry' | 'hold' = 'retry') => {
      const message = await rig.putMessage({ tenant: side, to, onAmbiguous });
      await rig.dispatch(message);
      await rig.deliverNext();
      return rig.state(message.id);
    };

    const refused = await send([
      'Bounce Desk <BOUNCE@Simulator.Postdate.Test>',
      '"reject"@simulator.postdate.test',
    ]);
    expect(refused).toMatchObject({ status: 'failed', rcpt_rejected: [0, 1] });
    expect(refused.history.at(-1)?.recipients?.map((entry) => entry.enhanced_code)).toEqual([
      '5.1.1',
      '5.7.1',
    ]);
    const sideList = await list.list(side, { limit: 10, after: null });
    expect(sideList.items.map((item) => item.address)).toEqual([at('bounce')]);
    expect(await send([`Held <"ambiguous"@SIMULATOR.postdate.test>`], 'hold')).toMatchObject({
      status: 'unknown',
    });
    expect(world.smtp.transactions).toBe(transactionsBefore);
  });

  it('screens each side by its own list: a live suppression never holds a test send back, nor a test one a live send', async () => {
    const rig = await createSenderRig(world);
    const now = new Date();
    await list.put({ tenant: TENANT, address: at('delivered'), reason: 'manual', now });
    await list.put({ tenant: TEST_SIDE, address: 'both-sides@example.net', reason: 'manual', now });
    const test = await sendTest(rig, [at('delivered')]);
    expect(await rig.state(test)).toMatchObject({ status: 'sent', attempts: 1 });
    world.smtp.script();
    const live = await rig.putMessage({ to: ['both-sides@example.net'] });
    await rig.dispatch(live);
    await rig.deliverNext();
    expect(await rig.state(live.id)).toMatchObject({ status: 'sent', attempts: 1 });
    // And the other side's list is read back unchanged: no send wrote to it.
    expect((await list.list(TENANT, { limit: 10, after: null })).items.map((item) => item.address)).toEqual([
      at('delivered'),
    ]);
  });

  it('leaves a bounced test address out of the next test message, as the relay’s own bounce would', async () => {
    const rig = await createSenderRig(world);
    const again = await sendTest(rig, [at('bounce')]);
    expect(await rig.state(again)).toMatchObject({ status: 'suppressed', attempts: 0 });
  });

  it('bounces and suppresses each +label of bounce@ on its own, so every CI run can try its bounce path afresh', async () => {
    const rig = await createSenderRig(world);
    const side = testSideOf('labels');
    const transactionsBefore = world.smtp.transactions;
    const send = async (to: string[]) => {
      const message = await rig.putMessage({ tenant: side, to });
      await rig.dispatch(message);
      await rig.deliverNext();
      return rig.state(message.id);
    };
    const first = await send([at('bounce+run-1')]);
    expect(first).toMatchObject({ status: 'failed', attempts: 1, rcpt_rejected: [0] });
    expect(first.history.map((entry) => [entry.outcome, entry.code, entry.enhanced_code])).toEqual([
      ['permanent', '550', '5.1.1'],
    ]);
    // The next run's label is a mailbox of its own: it bounces again instead of being suppressed.
    expect(await send([at('bounce+run-2')])).toMatchObject({ status: 'failed', attempts: 1 });
    expect(await send([at('bounce+run-1')])).toMatchObject({ status: 'suppressed', attempts: 0 });
    const sideList = await list.list(side, { limit: 10, after: null });
    expect(sideList.items.map((item) => item.address).sort()).toEqual([
      at('bounce+run-1'),
      at('bounce+run-2'),
    ]);
    expect(await send([at('reject+run-1')])).toMatchObject({ status: 'failed', attempts: 1 });
    // Last: its retry copy waits on this rig's queue.
    expect(await send([at('defer+run-1')])).toMatchObject({ status: 'retrying', attempts: 1 });
    expect(world.smtp.transactions).toBe(transactionsBefore);
  });
});
