import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptBudgetMs } from '../../lambdas/core/sendTiming.js';
import type { SenderStore } from '../../lambdas/ports/SenderStore.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { documentClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { bodyUpdatesFailing } from '../support/failingBodyWrites.js';
import { putGroupHead } from './records.js';
import {
  contextWithRemaining,
  createSenderRig,
  RecordingVisibility,
  type SenderWorld,
  startSenderWorld,
  storeWith,
  TEST_SETTINGS,
} from './senderHarness.js';

/**
 * DESIGN §5, "Never out of time mid-send": the write after a 250 is retried until it lands (it is
 * conditional on the lease, so a retry is safe), so a message the relay accepted is never sent again
 * because our own database write failed; and a failure between the claim and MAIL FROM releases the
 * claim — no attempt, nothing ambiguous.
 */

const throttled = () =>
  Object.assign(new Error('Rate of requests exceeds the allowed throughput'), {
    name: 'ThrottlingException',
  });

describe('the sender when its own writes and reads fail', () => {
  let world: SenderWorld;
  let store: SenderStore;
  beforeAll(async () => {
    world = await startSenderWorld();
    store = new DynamoSenderStore(world.documents, world.tableName);
  });
  afterAll(async () => {
    await world.close();
  });

  /** A store whose first `failures` outcome writes throw before reaching DynamoDB. */
  function outcomeWritesFailing(failures: number): { store: SenderStore; tries: () => number } {
    let tries = 0;
    return {
      tries: () => tries,
      store: storeWith(store, {
        async recordOutcome(input) {
          tries += 1;
          if (tries <= failures) throw throttled();
          return store.recordOutcome(input);
        },
      }),
    };
  }

  it.each(['retry', 'hold'] as const)(
    'records a 250 whose first outcome writes were throttled, and never sends it again (on_ambiguous = %s)',
    async (onAmbiguous) => {
      const rig = await createSenderRig(world, { random: () => 0.5 });
      world.smtp.script();
      const message = await rig.putMessage({ onAmbiguous });
      await rig.dispatch(message);
      const flaky = outcomeWritesFailing(3);

      const records = await rig.receive({ waitSeconds: 3, max: 1 });
      const response = await rig.run(records, rig.newHandler({ store: flaky.store }));

      expect(response.batchItemFailures).toEqual([]);
      expect(flaky.tries()).toBe(4);
      const state = await rig.state(message.id);
      expect(state).toMatchObject({ status: 'sent', attempts: 1 });
      expect(state.history.map((entry) => entry.outcome)).toEqual(['sent']);
      expect(rig.metrics.of('OutcomeWriteRetries')).toBe(3);
      expect(rig.metrics.of('OutcomeWriteFailures')).toBe(0);

      // Whatever copy comes later (a duplicate, the sweeper's) finds it sent: one delivery in all.
      rig.clock.advance(600_000);
      await rig.dispatch(message);
      await rig.deliverNext();
      expect(rig.accepted(message.id)).toHaveLength(1);
      expect((await rig.state(message.id)).status).toBe('sent');
    },
  );

  it('takes a conflict after a failed try for its own write that landed with its answer lost', async () => {
    const rig = await createSenderRig(world, { random: () => 0.5 });
    world.smtp.script();
    const message = await rig.putMessage();
    await rig.dispatch(message);
    let tries = 0;
    const lostAnswer = storeWith(store, {
      async recordOutcome(input) {
        tries += 1;
        const result = await store.recordOutcome(input);
        if (tries === 1) throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        return result;
      },
    });

    const records = await rig.receive({ waitSeconds: 3, max: 1 });
    const response = await rig.run(records, rig.newHandler({ store: lostAnswer }));

    expect(tries).toBe(2);
    expect(response.batchItemFailures).toEqual([]);
    expect((await rig.state(message.id)).status).toBe('sent');
    expect(rig.metrics.of('Sent')).toBe(1);
    expect(rig.accepted(message.id)).toHaveLength(1);
  });

  it("keeps a copy whose claim another sender's failed attempt beat for the short hide it is set to (shortRetrySeconds), and sends nothing", async () => {
    // A short retry of its own, not SHORT_RETRY_SECONDS: the hide after a lost claim must read the setting.
    const shortRetrySeconds = 3;
    const rig = await createSenderRig(world, { settings: { shortRetrySeconds } });
    world.smtp.script({ afterData: { code: 451, message: '4.3.0 Try again later' } }, {});
    const message = await rig.putMessage();
    await rig.dispatch(message);
    await rig.dispatch(message);
    const copies: SQSRecord[] = [];
    await eventually(
      'both copies of rev 1 received',
      async () => {
        copies.push(...(await rig.receive({ waitSeconds: 1, max: 2 })));
        return copies.length === 2 ? true : undefined;
      },
      { withinMs: 15_000 },
    );
    const [first, second] = copies as [SQSRecord, SQSRecord];
    const transactionsBefore = world.smtp.transactions;

    // The first sender has read the record (scheduled); before its claim, another sender takes the
    // second copy, reaches the relay and is deferred: the message is retrying, attempt 1.
    const visibility = new RecordingVisibility(rig.urls.send);
    const beaten = storeWith(store, {
      async claim(input) {
        await rig.run([second]);
        return store.claim(input);
      },
    });
    const response = await rig.run([first], rig.newHandler({ store: beaten, visibility }));

    expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', attempts: 1 });
    expect(world.smtp.transactions).toBe(transactionsBefore + 1);
    expect(response.batchItemFailures).toHaveLength(1);
    expect(visibility.asked).toEqual([shortRetrySeconds]);
  });

  it('gives up only when the invocation is out of time: counts OutcomeWriteFailures and keeps the copy until the lease ends', async () => {
    const rig = await createSenderRig(world, { random: () => 1 });
    world.smtp.script();
    const message = await rig.putMessage();
    await rig.dispatch(message);
    const never = outcomeWritesFailing(Number.POSITIVE_INFINITY);

    const records = await rig.receive({ waitSeconds: 3, max: 1 });
    // 7 s on the sender's clock beyond what the claim needs; the retries pause up to 2 s each.
    const response = await rig.run(
      records,
      rig.newHandler({ store: never.store }),
      contextWithRemaining(attemptBudgetMs(TEST_SETTINGS.timing) + 7_000),
    );

    expect(response.batchItemFailures).toHaveLength(1);
    expect(never.tries()).toBeGreaterThan(3);
    expect(rig.metrics.of('OutcomeWriteFailures')).toBe(1);
    const state = await rig.state(message.id);
    expect(state.status).toBe('sending');
    // Hidden until the lease (120 s) has run out, not the queue's 6 × the timeout.
    expect(await rig.receive({ waitSeconds: 0 })).toEqual([]);
    expect(rig.log.lines.some((line) => line.level === 'error')).toBe(true);
  });

  /** A store whose first try of one write throws before reaching DynamoDB; the later tries go through. */
  function firstTryThrottled(write: 'settleUnsent' | 'recordOutcome'): SenderStore {
    let tries = 0;
    const once = <T>(call: () => Promise<T>): Promise<T> => {
      tries += 1;
      return tries === 1 ? Promise.reject(throttled()) : call();
    };
    return storeWith(
      store,
      write === 'settleUnsent'
        ? { settleUnsent: (input) => once(() => store.settleUnsent(input)) }
        : { recordOutcome: (input) => once(() => store.recordOutcome(input)) },
    );
  }

  it.each([
    ['superseded', 'a newer version of its group exists', 'settleUnsent'],
    ['failed', 'its body is missing', 'recordOutcome'],
  ] as const)(
    'lands the %s write after the claim (%s) when its first try is throttled: no attempt, nothing ambiguous, and a later copy finds it settled (on_ambiguous = hold)',
    async (status, _why, write) => {
      const rig = await createSenderRig(world, { random: () => 0.5 });
      world.smtp.script();
      const group = { key: `landed-${status}-${rig.clock.ms}`, version: 1 };
      if (status === 'superseded') await putGroupHead(world.documents, world.tableName, group.key, 2);
      const message = await rig.putMessage(
        status === 'superseded' ? { onAmbiguous: 'hold', group } : { onAmbiguous: 'hold', withoutBody: true },
      );
      await rig.dispatch(message);
      const transactionsBefore = world.smtp.transactions;

      const records = await rig.receive({ waitSeconds: 3, max: 1 });
      const response = await rig.run(records, rig.newHandler({ store: firstTryThrottled(write) }));

      expect(response.batchItemFailures).toEqual([]);
      const settled = await rig.state(message.id);
      expect(settled).toMatchObject({ status, attempts: 0 });
      expect(settled.lease_owner).toBeUndefined();
      expect(settled.history.map((entry) => entry.outcome)).not.toContain('ambiguous');
      expect(rig.metrics.of('OutcomeWriteRetries')).toBe(1);

      // A later copy (the sweeper's, after a lease would have run out) finds it settled, not a
      // send a dead owner interrupted.
      rig.clock.advance((TEST_SETTINGS.leaseSeconds + 1) * 1000);
      await rig.dispatch(message);
      await rig.deliverNext();
      expect(await rig.state(message.id)).toEqual(settled);
      expect(world.smtp.transactions).toBe(transactionsBefore);
      expect(rig.metrics.of('Unknown')).toBe(0);
      expect(rig.metrics.of('Ambiguous')).toBe(0);
    },
  );

  /** The sender's store over a client whose body TTL writes throw `times` times per message. */
  function bodyTtlWritesFailing(times = 1): { store: SenderStore; failed: () => number } {
    const { documents, failed } = bodyUpdatesFailing(times);
    return { store: new DynamoSenderStore(documents, world.tableName), failed };
  }

  async function bodyExpiresAt(id: string): Promise<unknown> {
    const { Item } = await world.documents.send(
      new GetCommand({
        TableName: world.tableName,
        Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageBody },
        ConsistentRead: true,
      }),
    );
    return Item?.expires_at;
  }

  it.each([
    ['sent', 'its outcome after a 250'],
    ['superseded', 'a newer version of its group, after the claim'],
    ['expired', 'its deadline passed, before any claim'],
  ] as const)(
    "starts the body's retention when a message ends %s (%s) and the body's TTL write fails once: the state's write landed, the body's is finished (DESIGN §2)",
    async (status, _why) => {
      const rig = await createSenderRig(world, { random: () => 0.5 });
      world.smtp.script();
      const group = { key: `ttl-${status}-${rig.clock.ms}`, version: 1 };
      if (status === 'superseded') await putGroupHead(world.documents, world.tableName, group.key, 2);
      const message = await rig.putMessage(
        status === 'superseded'
          ? { group }
          : status === 'expired'
            ? { notAfter: new Date(rig.clock.ms - 500) }
            : {},
      );
      await rig.dispatch(message);
      const faulty = bodyTtlWritesFailing();

      const records = await rig.receive({ waitSeconds: 3, max: 1 });
      const response = await rig.run(records, rig.newHandler({ store: faulty.store }));

      expect(faulty.failed()).toBe(1);
      expect(response.batchItemFailures).toEqual([]);
      const state = await rig.state(message.id);
      expect(state.status).toBe(status);
      expect(state.expires_at).toBeGreaterThan(rig.clock.ms / 1000);
      expect(await bodyExpiresAt(message.id)).toBe(state.expires_at);
      expect(rig.accepted(message.id)).toHaveLength(status === 'sent' ? 1 : 0);
    },
  );

  it("says so at WARN, with the id only, and counts it when the body's retention cannot be started before the time runs out; the message stays sent", async () => {
    const rig = await createSenderRig(world, { random: () => 1 });
    world.smtp.script();
    const message = await rig.putMessage({ to: ['ada@example.com'] });
    await rig.dispatch(message);
    const faulty = bodyTtlWritesFailing(Number.POSITIVE_INFINITY);

    const records = await rig.receive({ waitSeconds: 3, max: 1 });
    const response = await rig.run(
      records,
      rig.newHandler({ store: faulty.store }),
      contextWithRemaining(attemptBudgetMs(TEST_SETTINGS.timing) + 7_000),
    );

    expect(response.batchItemFailures).toEqual([]);
    expect(faulty.failed()).toBeGreaterThan(1);
    expect((await rig.state(message.id)).status).toBe('sent');
    expect(await bodyExpiresAt(message.id)).toBeUndefined();
    expect(rig.metrics.of('OutcomeWriteFailures')).toBe(1);
    const warned = rig.log.lines.filter(
      (line) => line.level === 'warn' && line.message.includes('retention'),
    );
    expect(warned).toEqual([
      expect.objectContaining({ attributes: expect.objectContaining({ id: message.id }) }),
    ]);
    expect(rig.log.text()).not.toContain('ada@example.com');
    expect(rig.accepted(message.id)).toHaveLength(1);
  });

  it.each([
    ['the body read', { readBody: async () => Promise.reject(throttled()) }],
    [
      'the group read after the claim',
      (() => {
        let reads = 0;
        return {
          readGroupVersion: async () => {
            reads += 1;
            // The head is read once, after the claim (decision 0097): the first read fails.
            if (reads === 1) throw throttled();
            return undefined;
          },
        };
      })(),
    ],
  ] as const)(
    'releases the claim when %s fails: no attempt, nothing ambiguous, and the next copy sends it once (on_ambiguous = hold)',
    async (_what, replaced) => {
      // A short retry of its own, not SHORT_RETRY_SECONDS: the release must read the setting (0273).
      const shortRetrySeconds = 2;
      const rig = await createSenderRig(world, { settings: { shortRetrySeconds } });
      world.smtp.script();
      const message = await rig.putMessage({ onAmbiguous: 'hold', group: { key: 'g', version: 1 } });
      await rig.dispatch(message);
      const transactionsBefore = world.smtp.transactions;

      const records = await rig.receive({ waitSeconds: 3, max: 1 });
      const visibility = new RecordingVisibility(rig.urls.send);
      const response = await rig.run(
        records,
        rig.newHandler({ store: storeWith(store, replaced), visibility }),
      );

      expect(response.batchItemFailures).toHaveLength(1);
      expect(world.smtp.transactions).toBe(transactionsBefore);
      const released = await rig.state(message.id);
      expect(released).toMatchObject({ status: 'scheduled', attempts: 0, history: [] });
      expect(released.lease_owner).toBeUndefined();
      expect(Date.parse(released.due_at ?? '') - Date.parse(released.updated_at)).toBe(
        shortRetrySeconds * 1000,
      );
      expect(visibility.asked).toEqual([shortRetrySeconds]);
      expect(rig.metrics.of('Released')).toBe(1);

      // The copy is back within seconds (not after a lease); it is sent, not held as unknown.
      const [back] = await rig.receive({ waitSeconds: 8, max: 1 });
      if (back === undefined) throw new Error('the released copy did not come back');
      // The seconds it was hidden passed on the sender's clock too: the release set its retry then.
      rig.clock.advance(shortRetrySeconds * 1000);
      await rig.run([back]);
      const sent = await rig.state(message.id);
      expect(sent).toMatchObject({ status: 'sent', attempts: 1 });
      expect(sent.history.map((entry) => entry.outcome)).toEqual(['sent']);
      expect(rig.accepted(message.id)).toHaveLength(1);
    },
    20_000,
  );

  /**
   * A table client whose first claim UpdateItem of each message (the one that moves its STATE item
   * *to* `sending`) reaches DynamoDB and lands, and then throws as if its answer were lost on the
   * way back. At `deserialize` the SDK's own retry sees the error and sends the same conditional
   * write again, which then fails its condition; at `initialize` the error reaches the sender.
   */
  function claimAnswersLost(
    step: 'deserialize' | 'initialize',
    whileLost: () => void = () => {},
  ): {
    store: SenderStore;
    lost: () => number;
  } {
    const documents = documentClient();
    const lostFor = new Set<string>();
    const plain = (value: unknown) => (value as { S?: string } | undefined)?.S ?? value;
    const loseAnswer =
      <A extends { input: object }, O>(next: (args: A) => Promise<O>, context: { commandName?: string }) =>
      async (args: A): Promise<O> => {
        const input = args.input as {
          Key?: Record<string, unknown>;
          ExpressionAttributeValues?: Record<string, unknown>;
        };
        const isState = plain(input.Key?.[KEY.sort]) === ITEM_SORT_KEY.messageState;
        const toSending = plain(input.ExpressionAttributeValues?.[':v_status']) === 'sending';
        const pk = JSON.stringify(plain(input.Key?.[KEY.partition]));
        const output = await next(args);
        if (context.commandName === 'UpdateItemCommand' && isState && toSending && !lostFor.has(pk)) {
          lostFor.add(pk);
          whileLost();
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET' });
        }
        return output;
      };
    // Below the SDK's retry step (as chaos/throttleMiddleware.ts throttles), or above it.
    if (step === 'deserialize') {
      documents.middlewareStack.add((next, context) => loseAnswer(next, context), {
        step,
        priority: 'high',
        name: 'loseClaimAnswers',
      });
    } else {
      documents.middlewareStack.add((next, context) => loseAnswer(next, context), {
        step,
        name: 'loseClaimAnswers',
      });
    }
    return { store: new DynamoSenderStore(documents, world.tableName), lost: () => lostFor.size };
  }

  it.each([
    ['the SDK retries it and the retry loses its condition', 'deserialize'],
    ['the error reaches the sender', 'initialize'],
  ] as const)(
    'recognises its own claim that landed with its answer lost (%s): sent once, one attempt, nothing ambiguous, and a later copy finds it sent (on_ambiguous = hold)',
    async (_how, step) => {
      const rig = await createSenderRig(world, { random: () => 0.5 });
      world.smtp.script();
      const message = await rig.putMessage({ onAmbiguous: 'hold' });
      await rig.dispatch(message);
      const faulty = claimAnswersLost(step);

      const records = await rig.receive({ waitSeconds: 3, max: 1 });
      const response = await rig.run(records, rig.newHandler({ store: faulty.store }));

      expect(faulty.lost()).toBe(1);
      expect(response.batchItemFailures).toEqual([]);
      const sent = await rig.state(message.id);
      expect(sent).toMatchObject({ status: 'sent', attempts: 1 });
      expect(sent.history.map((entry) => entry.outcome)).toEqual(['sent']);
      expect(rig.accepted(message.id)).toHaveLength(1);

      // Whatever copy comes after the lease would have run out finds it sent: no takeover.
      rig.clock.advance((TEST_SETTINGS.leaseSeconds + 1) * 1000);
      await rig.dispatch(message);
      await rig.deliverNext();
      expect(await rig.state(message.id)).toEqual(sent);
      expect(rig.accepted(message.id)).toHaveLength(1);
      expect(rig.metrics.of('Unknown')).toBe(0);
      expect(rig.metrics.of('Ambiguous')).toBe(0);
    },
    20_000,
  );

  it('releases its own claim found after a lost answer when too little time is left for the attempt: no attempt, nothing ambiguous', async () => {
    const rig = await createSenderRig(world, { random: () => 0.5 });
    world.smtp.script();
    const message = await rig.putMessage({ onAmbiguous: 'hold' });
    await rig.dispatch(message);
    // Time for a whole attempt before the claim; its lost answer took 6 s of it.
    const faulty = claimAnswersLost('initialize', () => rig.clock.advance(6_000));
    const transactionsBefore = world.smtp.transactions;

    const records = await rig.receive({ waitSeconds: 3, max: 1 });
    const response = await rig.run(
      records,
      rig.newHandler({ store: faulty.store }),
      contextWithRemaining(attemptBudgetMs(TEST_SETTINGS.timing) + 5_000),
    );

    expect(faulty.lost()).toBe(1);
    expect(response.batchItemFailures).toHaveLength(1);
    expect(world.smtp.transactions).toBe(transactionsBefore);
    const released = await rig.state(message.id);
    expect(released).toMatchObject({ status: 'scheduled', attempts: 0, history: [] });
    expect(released.lease_owner).toBeUndefined();
    expect(rig.metrics.of('Released')).toBe(1);
    expect(rig.metrics.of('Ambiguous')).toBe(0);
  });
});
