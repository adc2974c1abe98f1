import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTransition } from '../../lambdas/core/stateMachine.js';
import type { SenderStore } from '../../lambdas/ports/SenderStore.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { putGroupHead } from './records.js';
import {
  contextWithRemaining,
  createSenderRig,
  RecordingVisibility,
  type SenderWorld,
  startSenderWorld,
  storeWith,
} from './senderHarness.js';

/**
 * What the sender checks before it sends, and the copies it drops: stale revs, finished messages,
 * superseded groups, passed deadlines, early copies, malformed bodies, and failures of its own parts.
 */
describe('the sender, before it sends', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
    world.smtp.script();
  });
  afterAll(async () => {
    await world.close();
  });

  it('drops a copy of a stale rev: acknowledged, nothing sent, nothing written', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({ rev: 2 });
    await rig.dispatch({ id: message.id, rev: 1 });

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    expect(await rig.state(message.id)).toEqual(message);
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
  });

  it.each(['cancelled', 'expired', 'superseded', 'failed', 'unknown'] as const)(
    'drops a copy of a %s message',
    async (status) => {
      const rig = await createSenderRig(world);
      const message = await rig.putMessage({ status });
      await rig.dispatch(message);

      const { response } = await rig.deliverNext();

      expect(response.batchItemFailures).toEqual([]);
      expect(rig.received(message.id)).toEqual([]);
      expect(await rig.state(message.id)).toEqual(message);
    },
  );

  it('drops a copy of a message that does not exist', async () => {
    const rig = await createSenderRig(world);
    await rig.dispatch({ id: '01JNOSUCHMESSAGE0000000000', rev: 1 });
    const { response } = await rig.deliverNext();
    expect(response.batchItemFailures).toEqual([]);
  });

  it('supersedes a message whose group head is higher: nothing sent', async () => {
    const rig = await createSenderRig(world);
    const group = { key: 'campaign:42:status', version: 7 };
    await putGroupHead(world.documents, world.tableName, group.key, 8);
    const message = await rig.putMessage({ group });
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    const state = await rig.state(message.id);
    expect(state.status).toBe('superseded');
    expect(state.attempts).toBe(0);
    expect(state.due_pk).toBeUndefined();
    expect(state.expires_at).toBeDefined();
    expect(rig.metrics.of('Superseded')).toBe(1);
  });

  it('supersedes a message whose group is raised between its first check and its claim: nothing sent', async () => {
    const rig = await createSenderRig(world);
    const group = { key: 'campaign:43:status', version: 7 };
    await putGroupHead(world.documents, world.tableName, group.key, 7);
    const message = await rig.putMessage({ group });
    await rig.dispatch(message);
    const store = new DynamoSenderStore(world.documents, world.tableName);
    // "Paused" lands after the sender read the head and before it claimed.
    const racing = storeWith(store, {
      claim: async (input) => {
        await putGroupHead(world.documents, world.tableName, group.key, 8);
        return store.claim(input);
      },
    });
    const records = await rig.receive({ waitSeconds: 3, max: 1 });

    const response = await rig.run(records, rig.newHandler({ store: racing }));

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    const state = await rig.state(message.id);
    expect(state.status).toBe('superseded');
    expect(state.lease_owner).toBeUndefined();
    expect(state.due_pk).toBeUndefined();
    expect(rig.metrics.of('Superseded')).toBe(1);
  });

  it('reads the group head once per copy, consistently, after its claim (DESIGN §4 Freshness)', async () => {
    const rig = await createSenderRig(world);
    const group = { key: 'campaign:44:status', version: 2 };
    await putGroupHead(world.documents, world.tableName, group.key, 2);
    const message = await rig.putMessage({ group });
    await rig.dispatch(message);
    const store = new DynamoSenderStore(world.documents, world.tableName);
    const reads: string[] = [];
    let claimed = false;
    const counting = storeWith(store, {
      claim: async (input) => {
        const result = await store.claim(input);
        claimed = true;
        return result;
      },
      readGroupVersion: async (tenant, key) => {
        reads.push(claimed ? 'after the claim' : 'before the claim');
        return store.readGroupVersion(tenant, key);
      },
    });
    const records = await rig.receive({ waitSeconds: 3, max: 1 });

    await rig.run(records, rig.newHandler({ store: counting }));

    expect((await rig.state(message.id)).status).toBe('sent');
    expect(reads).toEqual(['after the claim']);
  });

  it('sends a message whose group head is at its own version', async () => {
    const rig = await createSenderRig(world);
    const group = { key: 'campaign:43:status', version: 3 };
    await putGroupHead(world.documents, world.tableName, group.key, 3);
    const message = await rig.putMessage({ group });
    await rig.dispatch(message);

    await rig.deliverNext();

    expect((await rig.state(message.id)).status).toBe('sent');
    expect(rig.received(message.id)).toHaveLength(1);
  });

  it('expires a message past its not_after: nothing sent', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({
      sendAt: new Date(rig.clock.ms - 60_000),
      notAfter: new Date(rig.clock.ms - 1000),
    });
    await rig.dispatch(JSON.stringify({ v: 1, id: message.id, rev: 1, dlq: true }));

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    const state = await rig.state(message.id);
    expect(state.status).toBe('expired');
    expect(state.lst_pk).toContain('#expired#');
    expect(rig.metrics.of('Expired')).toBe(1);
  });

  // DESIGN §5 "Deadlines": past not_after the message is expired; a retry's backoff does not keep it
  // `retrying` (and its `message.expired` unsent) for a whole backoff past the deadline (decision 0317).
  it('retries no later than the deadline: a backoff that would outlast not_after ends just past it', async () => {
    const rig = await createSenderRig(world, {
      settings: { retryBaseSeconds: 600, retryCapSeconds: 3600 },
      random: () => 1,
    });
    world.smtp.script({ afterData: { code: 451, message: '4.3.0 Try again later' } });
    try {
      const notAfter = new Date(rig.clock.ms + 20_000);
      const message = await rig.putMessage({ notAfter });
      await rig.dispatch(message);
      const [copy] = await rig.receive({ waitSeconds: 3, max: 1 });
      if (copy === undefined) throw new Error('no copy arrived on the send queue');
      const visibility = new RecordingVisibility(rig.urls.send);
      await rig.run([copy], rig.newHandler({ visibility }));

      const state = await rig.state(message.id);
      expect(state).toMatchObject({ status: 'retrying', attempts: 1 });
      expect(visibility.asked).toEqual([21]);
      expect(Date.parse(state.due_at ?? '')).toBe(rig.clock.ms + 21_000);
    } finally {
      world.smtp.script();
    }
  });

  it('puts an early copy back on the queue with the exact remaining DelaySeconds; not an attempt', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({ sendAt: new Date(rig.clock.ms + 30_400) });
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.queue.enqueued).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 30 }]);
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 1 });
    expect(rig.received(message.id)).toEqual([]);
    expect(await rig.state(message.id)).toEqual(message);
    expect(rig.sleeps).toEqual([]);
  });

  it('waits in-process for a copy early by less than a second, then sends', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({ sendAt: new Date(rig.clock.ms + 400) });
    await rig.dispatch(message);

    await rig.deliverNext();

    expect(rig.sleeps).toEqual([400]);
    expect(rig.queue.enqueued).toEqual([]);
    const state = await rig.state(message.id);
    expect(state.status).toBe('sent');
    expect(state.sent_at).toBe(new Date(Date.parse(message.send_at)).toISOString());
  });

  it('lets the early copies of one batch wait together: a wait for the send time holds none of its lanes', async () => {
    // DESIGN §5a: a copy early by less than a second waits in-process for its moment. The event
    // source runs at most 1,000 batches at once, so a wait that kept one of a batch's four lanes
    // would cap deferred mail (decision 0098); here eight copies, all 400 ms early, wait at once.
    const rig = await createSenderRig(world);
    const copies = 8;
    const messages = [];
    for (let i = 0; i < copies; i++)
      messages.push(await rig.putMessage({ sendAt: new Date(rig.clock.ms + 400) }));
    for (const message of messages) await rig.dispatch(message);
    let waiting: Array<() => void> = [];
    let mostAtOnce = 0;
    const release = () => {
      rig.clock.advance(400);
      for (const resume of waiting) resume();
      waiting = [];
    };
    // Each wait ends when every copy of the batch waits — or, so that a run that fails ends, when no
    // other copy has joined for 2 s (a bound, not a measured time).
    let bound: NodeJS.Timeout | undefined;
    const sleep = (milliseconds: number) =>
      new Promise<void>((resume) => {
        expect(milliseconds).toBe(400);
        waiting.push(resume);
        mostAtOnce = Math.max(mostAtOnce, waiting.length);
        clearTimeout(bound);
        if (waiting.length === copies) release();
        else bound = setTimeout(release, 2000);
      });
    const records = await rig.receive({ waitSeconds: 3, max: copies });
    expect(records).toHaveLength(copies);

    const response = await rig.run(records, rig.newHandler({ sleep }));
    clearTimeout(bound);

    expect(response.batchItemFailures).toEqual([]);
    expect(mostAtOnce).toBe(copies);
    for (const message of messages) {
      expect(rig.received(message.id)).toHaveLength(1);
      expect((await rig.state(message.id)).sent_at).toBe(new Date(Date.parse(message.send_at)).toISOString());
    }
  });

  it('drops malformed copies without throwing, and still processes the rest of the batch', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage();
    await rig.dispatch('not json at all');
    await rig.dispatch(JSON.stringify({ v: 2, id: message.id, rev: 1 }));
    await rig.dispatch(message);
    const records = [...(await rig.receive({ waitSeconds: 3, max: 3 }))];
    while (records.length < 3)
      records.push(...(await rig.receive({ waitSeconds: 3, max: 3 - records.length })));

    const response = await rig.run(records);

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.metrics.of('MalformedCopies')).toBe(2);
    expect((await rig.state(message.id)).status).toBe('sent');
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
    expect(rig.log.text()).not.toContain('not json at all');
  });

  it('fails a message whose body item is missing, permanently', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({ withoutBody: true });
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    const state = await rig.state(message.id);
    expect(state.status).toBe('failed');
    expect(state.last_error).toMatchObject({ class: 'permanent' });
  });

  it('fails a message whose body is not its own (another fingerprint than its state record), never sending it', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({ fingerprint: 'the-original-request' });
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    const state = await rig.state(message.id);
    expect(state.status).toBe('failed');
    expect(state.last_error).toMatchObject({ class: 'permanent' });
  });

  it("sends a message whose body has its state record's fingerprint", async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({ fingerprint: 'fixture' });
    await rig.dispatch(message);
    await rig.deliverNext();
    expect((await rig.state(message.id)).status).toBe('sent');
  });

  it('keeps a copy, without throwing, when its store is unreachable; the other copies go on', async () => {
    const rig = await createSenderRig(world);
    const healthy = await rig.putMessage();
    const broken = await rig.putMessage();
    const store: SenderStore = new DynamoSenderStore(world.documents, world.tableName);
    const flaky = storeWith(store, {
      readState: async (id) => {
        if (id === broken.id) throw Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
        return store.readState(id);
      },
    });
    await rig.dispatch(healthy);
    await rig.dispatch(broken);
    const records = [...(await rig.receive({ waitSeconds: 3, max: 2 }))];
    while (records.length < 2)
      records.push(...(await rig.receive({ waitSeconds: 3, max: 2 - records.length })));
    const brokenCopy = records.find((record) => record.body.includes(broken.id));

    const response = await rig.run(records, rig.newHandler({ store: flaky }));

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: brokenCopy?.messageId }]);
    expect((await rig.state(healthy.id)).status).toBe('sent');
    expect((await rig.state(broken.id)).status).toBe('scheduled');
    // Not a Lambda error (the batch answered), so it has its own metric for its alarm.
    expect(rig.metrics.of('UnexpectedErrors')).toBe(1);
  });

  it('spaces the sends of a batch at POSTDATE_MAX_SEND_RATE', async () => {
    const rig = await createSenderRig(world, { maxSendRate: 1 });
    const messages = [await rig.putMessage(), await rig.putMessage(), await rig.putMessage()];
    for (const message of messages) await rig.dispatch(message);
    const records = [...(await rig.receive({ waitSeconds: 3, max: 3 }))];
    while (records.length < 3)
      records.push(...(await rig.receive({ waitSeconds: 3, max: 3 - records.length })));

    const response = await rig.run(records, rig.handler, contextWithRemaining(60_000));

    expect(response.batchItemFailures).toEqual([]);
    // One token at once, then one a second: the limiter waited twice, a second each time.
    expect(rig.sleeps).toEqual([1000, 1000]);
    for (const message of messages) expect((await rig.state(message.id)).status).toBe('sent');
  });

  it('never sends a redriven copy of a dead message past its not_after', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({
      status: 'dead',
      attempts: 3,
      sendAt: new Date(rig.clock.ms - 60_000),
      notAfter: new Date(rig.clock.ms - 1000),
    });
    await rig.dispatch(JSON.stringify({ v: 1, id: message.id, rev: 1, dlq: true }));

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    // There is no dead → expired (docs/decisions/): the operator decides what a dead message becomes.
    expect(checkTransition('dead', 'expired', 'sender').allowed).toBe(false);
    expect((await rig.state(message.id)).status).toBe('dead');
  });
});
