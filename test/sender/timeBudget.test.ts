import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptBudgetMs } from '../../lambdas/core/sendTiming.js';
import type { SenderStore } from '../../lambdas/ports/SenderStore.js';
import type { SuppressionList } from '../../lambdas/ports/SuppressionList.js';
import { SHORT_RETRY_SECONDS } from '../../lambdas/sender/copyRun.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { putGroupHead } from './records.js';
import {
  contextWithRemaining,
  createSenderRig,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
  storeWith,
  TEST_SETTINGS,
} from './senderHarness.js';

/**
 * DESIGN §5, "Never out of time mid-send": an invocation claims a copy only while the time it has
 * left covers one whole attempt plus the outcome write; the copies it did not start go back at
 * once, unclaimed, and no attempt is counted. Rate limiting waits before the claim. A failure
 * between the claim and MAIL FROM releases the claim (no attempt, no ambiguity): running short of
 * that time while the reads after the claim take theirs is one.
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

  it('waits for the send rate before it claims: a copy whose wait would eat the time is handed back unclaimed, unwaited', async () => {
    // One token a second: the second copy waits 1 s; the third's turn, 1 s later still, would leave
    // less than a whole attempt, so it is not waited for (decision 0193).
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

    expect(rig.sleeps).toEqual([1000]);
    expect(response.batchItemFailures).toHaveLength(1);
    const statuses = await Promise.all(messages.map(async (message) => (await rig.state(message.id)).status));
    expect(statuses.sort()).toEqual(['scheduled', 'sent', 'sent']);
    // The one handed back was never claimed: no lease, no attempt.
    const waiting = await Promise.all(messages.map((message) => rig.state(message.id)));
    const unclaimed = waiting.find((state) => state.status === 'scheduled');
    expect(unclaimed?.attempts).toBe(0);
    expect(unclaimed?.lease_owner).toBeUndefined();
  });

  /**
   * The reads after the claim, each made slow on the sender's clock (the invocation's time left is
   * read on it): DynamoDB answering after a second. The time checked before the claim is then gone.
   */
  const SLOW_READ_MS = 1000;
  const slowReads: readonly {
    readonly read: string;
    readonly group?: { key: string; version: number };
    readonly slowed: (store: SenderStore, rig: SenderRig) => Partial<SenderStore>;
  }[] = [
    {
      read: 'the group head',
      group: { key: 'campaign:late-reads', version: 1 },
      slowed: (store, rig) => ({
        readGroupVersion: async (tenant, key) => {
          const version = await store.readGroupVersion(tenant, key);
          rig.clock.advance(SLOW_READ_MS);
          return version;
        },
      }),
    },
    {
      read: 'the suppression list',
      slowed: (store, rig) => ({
        suppressions: Object.assign(Object.create(store.suppressions) as SuppressionList, {
          suppressedAmong: async (tenant: string, addresses: readonly string[]) => {
            const listed = await store.suppressions.suppressedAmong(tenant, addresses);
            rig.clock.advance(SLOW_READ_MS);
            return listed;
          },
        }),
      }),
    },
  ];

  for (const { read, group, slowed } of slowReads) {
    it(`gives the claim back before MAIL FROM when reading ${read} after the claim ate the time: no attempt, sent later`, async () => {
      const rig = await createSenderRig(world);
      world.smtp.script();
      if (group !== undefined) await putGroupHead(world.documents, world.tableName, group.key, group.version);
      const message = await rig.putMessage(group === undefined ? {} : { group });
      await rig.dispatch(message);
      const records = await receiveAll(rig, 1);
      const store = new DynamoSenderStore(world.documents, world.tableName);
      const transactionsBefore = world.smtp.transactions;

      // Enough for the claim, not after a slow read: half the slow read is missing at MAIL FROM.
      const response = await rig.run(
        records,
        rig.newHandler({ store: storeWith(store, slowed(store, rig)) }),
        contextWithRemaining(BUDGET_MS + SLOW_READ_MS / 2),
      );

      expect(response.batchItemFailures).toHaveLength(1);
      expect(world.smtp.transactions).toBe(transactionsBefore);
      expect(rig.received(message.id)).toEqual([]);
      const released = await rig.state(message.id);
      // Nothing failed: scheduled again (DESIGN §2, decision 0280).
      expect(released.status).toBe('scheduled');
      expect(released.attempts).toBe(0);
      expect(released.lease_owner).toBeUndefined();
      expect(released.history.map((entry) => entry.outcome)).not.toContain('ambiguous');
      expect(rig.metrics.of('OutOfTime')).toBe(1);

      // The copy comes back when the release said; an invocation with the time sends it, once.
      const again = await receiveAll(rig, 1);
      rig.clock.advance(SHORT_RETRY_SECONDS * 1000);
      await rig.run(again, rig.handler, contextWithRemaining(60_000));
      const sent = await rig.state(message.id);
      expect(sent.status).toBe('sent');
      expect(sent.attempts).toBe(1);
      expect(rig.received(message.id)).toHaveLength(1);
    });
  }
});
