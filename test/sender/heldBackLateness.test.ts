import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SENDER_METRIC } from '../../lambdas/core/metricNames.js';
import { pauseAfter } from '../../lambdas/core/relayBreaker.js';
import { attemptBudgetMs } from '../../lambdas/core/sendTiming.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { type BreakerWorld, createBreakerRig, startBreakerWorld } from './breakerHarness.js';
import { TENANT } from './records.js';
import {
  contextWithRemaining,
  createSenderRig,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
  TEST_SETTINGS,
} from './senderHarness.js';

/**
 * Decision 0231: a due copy the sender hands back unsent — out of time for a whole attempt or for its
 * turn at the send rate, held by the sending gate (a pause, no relay, a throttle) — is no attempt
 * (DESIGN §2), and neither the send queue's age (decision 0224) nor any outcome says how late its mail
 * already is. Each such hand-back publishes `HeldBackLateness`, the time since the copy came due, which
 * the `DueMailHeldBack` alarm watches (docs/operations.md). Not late: a copy early for a send time
 * ahead, and a retry's backoff (the copy is due at its retry time, not at `send_at`).
 */

const BUDGET_MS = attemptBudgetMs(TEST_SETTINGS.timing);
const MINUTE = 60_000;

const heldBack = (rig: SenderRig) =>
  rig.metrics.timings.filter((timing) => timing.name === SENDER_METRIC.heldBackLateness).map((t) => t.value);

describe('how late a due copy handed back unsent already is', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  /** Runs the one copy on the queue with too little time left for a whole attempt. */
  async function runOutOfTime(rig: SenderRig) {
    const records = await rig.receive({ waitSeconds: 3, max: 1 });
    expect(records).toHaveLength(1);
    const response = await rig.run(records, rig.handler, contextWithRemaining(BUDGET_MS - 1));
    expect(response.batchItemFailures).toHaveLength(1);
  }

  it('publishes the time since send_at when a scheduled copy 40 minutes due is handed back out of time', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({ sendAt: new Date(rig.clock.ms - 40 * MINUTE) });
    await rig.dispatch(message);

    await runOutOfTime(rig);

    expect(rig.metrics.of('OutOfTime')).toBe(1);
    expect(heldBack(rig)).toEqual([40 * MINUTE]);
  });

  it('publishes it when the turn at the send rate comes too late for the time left', async () => {
    // One recipient a second: the second copy's turn would leave less than a whole attempt.
    const rig = await createSenderRig(world, { maxSendRate: 1 });
    world.smtp.script();
    const due = new Date(rig.clock.ms - 50 * MINUTE);
    const messages = [await rig.putMessage({ sendAt: due }), await rig.putMessage({ sendAt: due })];
    for (const message of messages) await rig.dispatch(message);
    const records = [...(await rig.receive({ waitSeconds: 3, max: 2 }))];
    while (records.length < 2) {
      // Each receive waits at most 3 s for the other copy: none by then is a failure, not a hang.
      const more = await rig.receive({ waitSeconds: 3, max: 1 });
      expect(more.length).toBeGreaterThan(0);
      records.push(...more);
    }

    await rig.run(records, rig.newHandler({ concurrency: 1 }), contextWithRemaining(BUDGET_MS + 500));

    expect(rig.metrics.of('OutOfTime')).toBe(1);
    expect(heldBack(rig)).toHaveLength(1);
    expect(heldBack(rig)[0]).toBeGreaterThanOrEqual(50 * MINUTE);
  });

  it('counts a retrying message from its retry time, not from send_at: its backoff is no lateness', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({
      status: 'retrying',
      attempts: 3,
      sendAt: new Date(rig.clock.ms - 3 * 60 * MINUTE),
    });
    await world.documents.send(
      new UpdateCommand({
        TableName: world.tableName,
        Key: { [KEY.partition]: messagePk(message.id), [KEY.sort]: ITEM_SORT_KEY.messageState },
        UpdateExpression: 'SET due_at = :retryAt',
        ExpressionAttributeValues: { ':retryAt': new Date(rig.clock.ms - 2 * MINUTE).toISOString() },
      }),
    );
    await rig.dispatch(message);

    await runOutOfTime(rig);

    expect(heldBack(rig)).toEqual([2 * MINUTE]);
  });

  it('publishes nothing for a copy early for a send time ahead, nor for a test message (DESIGN §14)', async () => {
    const rig = await createSenderRig(world);
    const ahead = await rig.putMessage({ sendAt: new Date(rig.clock.ms + 60 * MINUTE) });
    await rig.dispatch(ahead);
    await rig.deliverNext();
    expect(rig.metrics.of('Redelayed')).toBe(1);

    const test = await rig.putMessage({
      tenant: testSideOf(TENANT),
      sendAt: new Date(rig.clock.ms - 40 * MINUTE),
    });
    await rig.dispatch(test);
    await runOutOfTime(rig);

    expect(rig.metrics.of('OutOfTime')).toBe(1);
    expect(heldBack(rig)).toEqual([]);
  });
});

describe('how late a due copy the sending gate holds already is', () => {
  let world: BreakerWorld;
  beforeEach(async () => {
    world = await startBreakerWorld();
    await world.outage.set('up');
  });
  afterEach(async () => {
    await world.close();
  });

  it('publishes the time since send_at for a copy an operator’s pause hands back', async () => {
    const rig = await createBreakerRig(world);
    const current = await rig.gateStore.read();
    const paused = pauseAfter(current.pause, { action: 'pause', reason: 'forgotten' }, new Date());
    expect(await rig.gateStore.writePause(current.pause, paused)).toBe('written');
    const message = await rig.putMessage({ sendAt: new Date(Date.now() - 2 * 60 * MINUTE) });
    await rig.dispatch(message);

    const response = await rig.run(await rig.receive({ max: 1, waitSeconds: 2 }), rig.sender());

    expect(response.batchItemFailures).toHaveLength(1);
    expect(rig.received(message.id)).toEqual([]);
    expect(rig.metrics.of('SendingPaused')).toBe(1);
    expect(heldBack(rig)).toHaveLength(1);
    expect(heldBack(rig)[0]).toBeGreaterThanOrEqual(2 * 60 * MINUTE);
  }, 60_000);
});
