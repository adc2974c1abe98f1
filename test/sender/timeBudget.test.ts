import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptBudgetMs } from '../../lambdas/core/sendTiming.js';
import {
  contextWithRemaining,
  createSenderRig,
  type SenderWorld,
  startSenderWorld,
  TEST_SETTINGS,
} from './senderHarness.js';

/**
 * DESIGN §5, "Never out of time mid-send": an invocation claims a copy only while the time it has
 * left covers one whole attempt plus the outcome write; the copies it did not start go back at
 * once, unclaimed, and no attempt is counted. Rate limiting waits before the claim.
 */

const BUDGET_MS = attemptBudgetMs(TEST_SETTINGS.timing);

describe('the sender and the time its invocation has left', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  async function receiveAll(rig: Awaited<ReturnType<typeof createSenderRig>>, count: number) {
    const records = [...(await rig.receive({ waitSeconds: 3, max: count }))];
    while (records.length < count)
      records.push(...(await rig.receive({ waitSeconds: 3, max: count - records.length })));
    return records;
  }

  it('hands every copy back unclaimed, visible at once, when less than one whole attempt is left', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const messages = [await rig.putMessage(), await rig.putMessage()];
    for (const message of messages) await rig.dispatch(message);
    const records = await receiveAll(rig, 2);
    const transactionsBefore = world.smtp.transactions;

    const response = await rig.run(records, rig.handler, contextWithRemaining(BUDGET_MS - 1));

    expect(response.batchItemFailures).toHaveLength(2);
    expect(world.smtp.transactions).toBe(transactionsBefore);
    for (const message of messages) {
      expect(await rig.state(message.id)).toEqual(message); // not claimed, nothing written
    }
    expect(rig.metrics.of('OutOfTime')).toBe(2);
    // Back at once for the next invocation, which has the time.
    const again = await receiveAll(rig, 2);
    await rig.run(again, rig.handler, contextWithRemaining(60_000));
    for (const message of messages) expect((await rig.state(message.id)).status).toBe('sent');
  });

  it('waits for the send rate before it claims: a copy whose wait ate the time is handed back unclaimed', async () => {
    // One token a second: the second copy waits 1 s, the third 2 s on the sender's clock.
    const rig = await createSenderRig(world, { maxSendRate: 1 });
    world.smtp.script();
    const messages = [await rig.putMessage(), await rig.putMessage(), await rig.putMessage()];
    for (const message of messages) await rig.dispatch(message);
    const records = await receiveAll(rig, 3);

    const response = await rig.run(
      records,
      rig.newHandler({ concurrency: 1 }),
      contextWithRemaining(BUDGET_MS + 1500),
    );

    expect(rig.sleeps).toEqual([1000, 1000]);
    expect(response.batchItemFailures).toHaveLength(1);
    const statuses = await Promise.all(messages.map(async (message) => (await rig.state(message.id)).status));
    expect(statuses.sort()).toEqual(['scheduled', 'sent', 'sent']);
    // The one handed back was never claimed: no lease, no attempt.
    const waiting = await Promise.all(messages.map((message) => rig.state(message.id)));
    const unclaimed = waiting.find((state) => state.status === 'scheduled');
    expect(unclaimed?.attempts).toBe(0);
    expect(unclaimed?.lease_owner).toBeUndefined();
  });
});
