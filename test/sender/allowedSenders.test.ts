/**
 * DESIGN §3 and §8: `from` must be an allowed sender, POSTDATE_ALLOWED_FROM. The stack's list binds
 * every message it sends, whichever way the message came in: the outbox helper validates with
 * settings the application passes (DESIGN §4), and an operator may narrow the list after messages
 * were accepted. A message whose `from` the stack does not allow is never handed to the relay; it
 * ends as a permanent content refusal does (`failed`, DESIGN §2), saying why. On DynamoDB Local, the
 * SQS emulator and a real smtp-server, the message written by the outbox helper's own transaction.
 */
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SENDER_METRIC } from '../../lambdas/core/metricNames.js';
import { buildOutboxWrite } from '../../lambdas/outbox/index.js';
import { TENANT } from './records.js';
import {
  createSenderRig,
  expectFailedBeforeSmtp,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
} from './senderHarness.js';

/** The stack's POSTDATE_ALLOWED_FROM in these tests. */
const STACK_ALLOWS = ['*@example.com'];

describe("the stack's allowed senders bind every message it sends", () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
    world.smtp.script();
  });
  afterAll(async () => {
    await world.close();
  });

  /** The application's transaction, validated with the application's own (wider) settings. */
  async function enqueueThroughTheOutbox(rig: SenderRig, from: string): Promise<string> {
    const write = buildOutboxWrite({
      tableName: world.tableName,
      tenant: TENANT,
      idempotencyKey: `allowed-senders-${Math.random()}`,
      now: new Date(rig.clock.ms - 1000),
      body: { to: ['ada@example.org'], from, subject: 'Quarterly numbers', text: 'Attached.' },
      validation: { allowedFrom: ['*'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 },
    });
    await world.documents.send(new TransactWriteCommand({ TransactItems: write.items }));
    return write.messageId;
  }

  it('an outbox message from an address outside the list is not sent: failed, permanent, no attempt', async () => {
    const rig = await createSenderRig(world, { settings: { allowedFrom: STACK_ALLOWS } });
    const id = await enqueueThroughTheOutbox(rig, 'CEO <ceo@other.test>');
    await rig.dispatch({ id, rev: 1 });

    await expectFailedBeforeSmtp(
      rig,
      id,
      "the message's from is not an allowed sender of this stack (POSTDATE_ALLOWED_FROM)",
    );
    expect(rig.metrics.of(SENDER_METRIC.failed)).toBe(1);
    // Nothing of the address in what the sender logged (the rule names the setting, not the sender).
    expect(rig.log.text()).not.toContain('ceo@other.test');
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
  });

  it('an outbox message from an allowed address is sent as usual', async () => {
    const rig = await createSenderRig(world, { settings: { allowedFrom: STACK_ALLOWS } });
    const id = await enqueueThroughTheOutbox(rig, 'Ops <ops@EXAMPLE.com>');
    await rig.dispatch({ id, rev: 1 });

    await rig.deliverNext();

    expect((await rig.state(id)).status).toBe('sent');
    expect(rig.received(id)).toHaveLength(1);
  });

  it('a message accepted before the operator narrowed the list fails at its send (a manual retry sends it once the list allows it again)', async () => {
    // Accepted while ops@example.com was allowed (the fixture's sender), sent after it no longer is.
    const narrowed = await createSenderRig(world, { settings: { allowedFrom: ['billing@example.com'] } });
    const message = await narrowed.putMessage();
    await narrowed.dispatch(message);

    await narrowed.deliverNext();

    const state = await narrowed.state(message.id);
    expect(state.status).toBe('failed');
    expect(state.last_error?.class).toBe('permanent');
    expect(narrowed.received(message.id)).toEqual([]);
  });
});
