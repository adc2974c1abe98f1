import { DeleteMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { SQS_MAX_VISIBILITY_SECONDS } from '../../lambdas/core/queueLimits.js';
import type { DispatchQueue, QueuedCopy } from '../../lambdas/ports/DispatchQueue.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { sqsClient } from '../support/awsLocal.js';
import {
  createSenderRig,
  RecordingVisibility,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
  storeWith,
} from './senderHarness.js';

/** Retries with backoff through the queue's visibility, the DLQ after the last receive, and redrive. */

const TRANSIENT_AFTER_DATA = { afterData: { code: 451, message: '4.3.0 Try again later' } } as const;

/**
 * One attempt, and a kept copy back after 1 s instead of SHORT_RETRY_SECONDS (5 s): what these tests
 * prove is that the copy is kept and what its return does, not how long it hides (decision 0273).
 */
const KEPT_BACK_SOON = { maxAttempts: 1, shortRetrySeconds: 1 } as const;

/** What an operator's redrive does: the copy leaves the DLQ and goes back on the send queue. */
async function redriveFromDlq(rig: SenderRig): Promise<string> {
  const [copy] = await rig.receive({ queueUrl: rig.urls.sendDeadLetter, waitSeconds: 3, max: 1 });
  if (copy === undefined) throw new Error('the DLQ is empty');
  const sqs = sqsClient();
  await sqs.send(new SendMessageCommand({ QueueUrl: rig.urls.send, MessageBody: copy.body }));
  await sqs.send(
    new DeleteMessageCommand({ QueueUrl: rig.urls.sendDeadLetter, ReceiptHandle: copy.receiptHandle }),
  );
  return copy.body;
}

describe('the sender, retries and dead letters', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  /**
   * DESIGN §5: the backoff is applied with ChangeMessageVisibility, which SQS caps at 12 hours counted
   * from the receive — a request for 43,200 s a moment after it is refused ("Total VisibilityTimeout
   * for the message is beyond the limit"), and the copy comes back after the queue's own timeout.
   * (The emulator does not refuse it; what the sender asks is recorded on its way to it.)
   */
  it('a backoff of 12 hours asks SQS for less than 12 hours from the receive; the retry time stays the backoff', async () => {
    const rig = await createSenderRig(world, {
      settings: { retryBaseSeconds: SQS_MAX_VISIBILITY_SECONDS, retryCapSeconds: SQS_MAX_VISIBILITY_SECONDS },
      random: () => 1 - Number.EPSILON,
    });
    world.smtp.script(TRANSIENT_AFTER_DATA);
    const message = await rig.putMessage();
    await rig.dispatch(message);
    const visibility = new RecordingVisibility(rig.urls.send);
    const handler = rig.newHandler({ visibility });
    const records = await rig.receive({ max: 1, waitSeconds: 3 });
    const response = await rig.run(records, handler);

    expect(response.batchItemFailures).toHaveLength(1);
    expect(visibility.asked).toHaveLength(1);
    expect(visibility.asked[0]).toBeLessThan(SQS_MAX_VISIBILITY_SECONDS);
    const retrying = await rig.state(message.id);
    expect(retrying.status).toBe('retrying');
    expect(Date.parse(retrying.due_at ?? '')).toBe(rig.clock.ms + SQS_MAX_VISIBILITY_SECONDS * 1000);
    world.smtp.script();
  });

  it('retries a transient failure, then after the last allowed SMTP attempt records dead and moves the copy to the DLQ itself; a redriven copy is sent once', async () => {
    const rig = await createSenderRig(world); // POSTDATE_MAX_ATTEMPTS = 3, backoff 0 s (random = 0)
    world.smtp.script(TRANSIENT_AFTER_DATA);
    const message = await rig.putMessage();
    await rig.dispatch(message);

    for (const receive of [1, 2]) {
      const { records, response } = await rig.deliverNext();
      expect(records[0]?.attributes.ApproximateReceiveCount).toBe(String(receive));
      expect(response.batchItemFailures).toHaveLength(1);
      expect((await rig.state(message.id)).status).toBe('retrying');
    }
    const last = await rig.deliverNext();
    expect(last.records[0]?.attributes.ApproximateReceiveCount).toBe('3');
    // Dead and moved in one step: the send queue no longer holds the copy, the DLQ does.
    expect(last.response.batchItemFailures).toEqual([]);

    const dead = await rig.state(message.id);
    expect(dead.status).toBe('dead');
    expect(dead.attempts).toBe(3);
    expect(dead.history.map((entry) => [entry.outcome, entry.code])).toEqual([
      ['transient', '451'],
      ['transient', '451'],
      ['transient', '451'],
    ]);
    // Out of the overdue index, into the waiting partition the sweeper's gauge counts.
    expect(dead.due_pk).toMatch(/^wait#dead#\d+$/);
    expect(rig.metrics.of('Retried')).toBe(2);
    expect(rig.metrics.of('Dead')).toBe(1);
    expect(rig.metrics.of('DeadLettered')).toBe(1);
    expect(rig.received(message.id).map((received) => received.outcome)).toEqual([
      'refused',
      'refused',
      'refused',
    ]);
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
    expect(await rig.depth(rig.urls.sendDeadLetter)).toMatchObject({ stored: 1 });

    // Dead means dead: a stray copy (a duplicate, the sweeper's) is dropped, nothing is sent.
    world.smtp.script(); // the relay is healthy again
    await rig.dispatch(message);
    const stray = await rig.deliverNext();
    expect(stray.response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toHaveLength(3);
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 3 });

    // The operator's redrive: the copy the sender put in the DLQ says so, and which death it is of
    // (the attempts it died with), and is sent.
    const body = await redriveFromDlq(rig);
    expect(JSON.parse(body)).toEqual({ v: 1, id: message.id, rev: 1, dlq: true, death: 3 });
    const redriven = await rig.deliverNext();
    expect(redriven.response.batchItemFailures).toEqual([]);
    const sent = await rig.state(message.id);
    expect(sent.status).toBe('sent');
    expect(sent.attempts).toBe(4);
    expect(sent.history.at(-1)).toMatchObject({ outcome: 'sent', code: '250' });
    expect(sent.due_pk).toBeUndefined();
    expect(rig.received(message.id).filter((received) => received.outcome === 'accepted')).toHaveLength(1);

    // The same copy redriven once more (an operator's double click) finds it sent: nothing is sent.
    await rig.dispatch(body);
    const again = await rig.deliverNext();
    expect(again.response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id).filter((received) => received.outcome === 'accepted')).toHaveLength(1);
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
  });

  it('sends once when two current copies of a dead message are redriven together (a DLQ renewal cut between its send and its delete, decision 0148)', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script(); // the relay is healthy again
    const message = await rig.putMessage({ status: 'dead', attempts: 3 });
    const copy = JSON.stringify({ v: 1, id: message.id, rev: 1, dlq: true });
    // `dlq redrive --all` moves both to the send queue; they arrive in one batch.
    await rig.dispatch(copy);
    await rig.dispatch(copy);
    const both = await rig.receive({ waitSeconds: 3, max: 2 });
    expect(both).toHaveLength(2);

    await rig.run(both);

    expect(rig.received(message.id).filter((received) => received.outcome === 'accepted')).toHaveLength(1);
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 4 });
    // The other copy lost the claim and was kept while the first held its lease (or was dropped).
    // Back after the lease (a copy of it stands in, to spare the wait), it finds the message sent.
    await rig.dispatch(copy);
    expect((await rig.deliverNext()).response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id).filter((received) => received.outcome === 'accepted')).toHaveLength(1);
  });

  it('keeps a redriven copy whose claim was given back before MAIL FROM: the message waits as retrying, no attempt, and its copy sends it once (decision 0280)', async () => {
    const rig = await createSenderRig(world, { settings: { shortRetrySeconds: 1 } });
    world.smtp.script(); // the relay is healthy again
    const message = await rig.putMessage({ status: 'dead', attempts: 3 });
    await rig.dispatch(JSON.stringify({ v: 1, id: message.id, rev: 1, dlq: true }));
    const transactionsBefore = world.smtp.transactions;

    // The body cannot be read after the redriven copy's claim: the claim goes back, nothing is sent.
    const store = new DynamoSenderStore(world.documents, world.tableName);
    const unreadable = storeWith(store, { readBody: () => Promise.reject(new Error('throttled')) });
    const records = await rig.receive({ waitSeconds: 3, max: 1 });
    const given = await rig.run(records, rig.newHandler({ store: unreadable }));

    expect(given.batchItemFailures).toHaveLength(1);
    expect(world.smtp.transactions).toBe(transactionsBefore);
    // Live again, not dead (it would wait for an operator) nor scheduled (it has failed before).
    expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', attempts: 3, attempt_limit: 6 });
    expect(await rig.depth(rig.urls.sendDeadLetter)).toMatchObject({ stored: 0 });

    // The same copy, back after its short hide, is the one that sends it: once.
    rig.clock.advance(1_000);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 4 });
    expect(rig.accepted(message.id)).toHaveLength(1);
  });

  it('gives a redriven message a fresh set of attempts, and dead-letters it again when they run out', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script(TRANSIENT_AFTER_DATA);
    const message = await rig.putMessage({ status: 'dead', attempts: 3 });
    await rig.dispatch(JSON.stringify({ v: 1, id: message.id, rev: 1, dlq: true }));

    for (const attempts of [4, 5]) {
      await rig.deliverNext();
      expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', attempts, attempt_limit: 6 });
    }
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 6 });
    expect(await rig.depth(rig.urls.sendDeadLetter)).toMatchObject({ stored: 1 });
  });

  it('gives a second death no fresh attempts from a duplicate of the first redrive (SQS at-least-once, or a redrive cut between its send and its delete): dead means dead', async () => {
    const rig = await createSenderRig(world); // POSTDATE_MAX_ATTEMPTS = 3
    world.smtp.script(TRANSIENT_AFTER_DATA);
    const message = await rig.putMessage();
    await rig.dispatch(message);
    for (let receive = 0; receive < 3; receive++) await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 3 });

    // The operator redrives once; the copy arrives twice.
    const body = await redriveFromDlq(rig);
    await rig.dispatch(body);
    // Three more attempts (a fresh set), all refused: the message is dead again.
    await rig.deliverNext();
    while ((await rig.state(message.id)).status !== 'dead') await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 6 });
    expect(rig.received(message.id)).toHaveLength(6);

    // The duplicate still on the send queue belongs to the first death: no operator redrove this one.
    world.smtp.script(); // the relay would accept now
    while ((await rig.depth()).stored + (await rig.depth()).inFlight > 0) await rig.deliverNext();
    expect(rig.received(message.id)).toHaveLength(6);
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 6 });
    expect(await rig.depth(rig.urls.sendDeadLetter)).toMatchObject({ stored: 1 });

    // The second death's own copy, redriven by the operator, is sent.
    await redriveFromDlq(rig);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 7 });
  }, 30_000);

  it('moves a redriven copy that made its message dead again to the DLQ when its first move failed, never redrives it by itself', async () => {
    const rig = await createSenderRig(world, { settings: KEPT_BACK_SOON });
    world.smtp.script(TRANSIENT_AFTER_DATA);
    const message = await rig.putMessage();
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 1 });
    await redriveFromDlq(rig);

    // The redriven copy's attempt fails too; its move to the DLQ fails once, so the copy is kept.
    const realDeadLetters = new SqsDispatchQueue(sqsClient(), rig.urls.sendDeadLetter);
    const handler = rig.newHandler({ deadLetters: new RefusingQueue(realDeadLetters, 1) });
    const kept = await rig.run(await rig.receive({ waitSeconds: 3, max: 1 }), handler);
    expect(kept.batchItemFailures).toHaveLength(1);
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 2 });

    world.smtp.script(); // the relay would accept now
    const [back] = await rig.receive({ waitSeconds: 8, max: 1 });
    if (back === undefined) throw new Error('the kept copy did not come back');
    expect((await rig.run([back], handler)).batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toHaveLength(2); // no attempt of its own
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 2 });
    expect(await rig.depth(rig.urls.sendDeadLetter)).toMatchObject({ stored: 1 });
  }, 20_000);

  it('keeps the copy of a message it made dead when the move to the DLQ fails, and moves it when the copy is back', async () => {
    const rig = await createSenderRig(world, { settings: KEPT_BACK_SOON });
    world.smtp.script(TRANSIENT_AFTER_DATA);
    const message = await rig.putMessage();
    await rig.dispatch(message);
    let moves = 0;
    const realDeadLetters = new SqsDispatchQueue(sqsClient(), rig.urls.sendDeadLetter);
    const flakyDeadLetters: DispatchQueue = {
      async enqueue(copies) {
        moves += 1;
        return moves === 1 ? { failed: copies } : realDeadLetters.enqueue(copies);
      },
    };
    // The hides the handler asks of the queue: the kept copy's is the setting, not a constant (0273).
    const visibility = new RecordingVisibility(rig.urls.send);
    const handler = rig.newHandler({ deadLetters: flakyDeadLetters, visibility });

    const first = await rig.receive({ waitSeconds: 3, max: 1 });
    const kept = await rig.run(first, handler);
    expect(kept.batchItemFailures).toHaveLength(1);
    expect(visibility.asked).toEqual([KEPT_BACK_SOON.shortRetrySeconds]);
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 1 });
    expect(await rig.depth(rig.urls.sendDeadLetter)).toMatchObject({ stored: 0 });

    const [back] = await rig.receive({ waitSeconds: 8, max: 1 });
    if (back === undefined) throw new Error('the kept copy did not come back');
    const moved = await rig.run([back], handler);
    expect(moved.batchItemFailures).toEqual([]);
    expect(moves).toBe(2);
    expect(rig.received(message.id)).toHaveLength(1); // no further SMTP attempt
    expect(await rig.depth(rig.urls.sendDeadLetter)).toMatchObject({ stored: 1 });
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
  }, 20_000);

  it('drops a redriven copy of a message that is already sent', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage({ status: 'sent', attempts: 1 });
    const transactionsBefore = world.smtp.transactions;
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(world.smtp.transactions).toBe(transactionsBefore);
    expect(await rig.state(message.id)).toEqual(message);
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
  });

  it('hides the copy for the drawn backoff: ChangeMessageVisibility with full jitter, due_at at its end', async () => {
    // random → 0.99 of [0, min(cap, base · 2^0)] = [0, 2] s → 2 s.
    const rig = await createSenderRig(world, {
      random: () => 0.99,
      settings: { retryBaseSeconds: 2, retryCapSeconds: 60 },
    });
    world.smtp.script(TRANSIENT_AFTER_DATA);
    const message = await rig.putMessage();
    await rig.dispatch(message);

    await rig.deliverNext();

    const state = await rig.state(message.id);
    expect(state.status).toBe('retrying');
    expect(state.due_at).toBe(new Date(rig.clock.ms + 2000).toISOString());
    expect(await rig.receive({ waitSeconds: 0 })).toEqual([]);
    expect(await rig.depth()).toMatchObject({ inFlight: 1 });
    const [back] = await rig.receive({ waitSeconds: 4, max: 1 });
    expect(back?.attributes.ApproximateReceiveCount).toBe('2');
  });

  it('retries an ambiguous send under on_ambiguous = retry with the same Message-ID (at-least-once)', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({ afterData: 'drop' }, {});
    const message = await rig.putMessage({ onAmbiguous: 'retry' });
    await rig.dispatch(message);

    await rig.deliverNext();
    expect((await rig.state(message.id)).status).toBe('retrying');
    await rig.deliverNext();

    const state = await rig.state(message.id);
    expect(state.status).toBe('sent');
    expect(state.history.map((entry) => entry.outcome)).toEqual(['ambiguous', 'sent']);
    const copies = rig.received(message.id);
    expect(copies.map((received) => received.outcome)).toEqual(['dropped', 'accepted']);
    expect(new Set(copies.map((received) => received.messageId))).toEqual(
      new Set([`<${message.id}@mail.test>`]),
    );
    expect(rig.metrics.of('Ambiguous')).toBe(1);
  });
});

describe('the send queue backstop', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  it('replaces a copy kept so often that the queue would dead-letter it, so the DLQ only holds what the sender put there', async () => {
    const rig = await createSenderRig(world, { settings: { maxAttempts: 1 } }); // backstop: 3 × 1 + 10 = 13
    const message = await rig.putMessage({
      status: 'sending',
      leaseOwner: 'another-sender',
      leaseUntil: new Date(rig.clock.ms + 30_000),
    });
    await rig.dispatch(message);
    const [copy] = await rig.receive({ waitSeconds: 3, max: 1 });
    if (copy === undefined) throw new Error('no copy');
    // Its twelfth receive: one more keep and SQS's redrive would move a live message's copy.
    const twelfth = { ...copy, attributes: { ...copy.attributes, ApproximateReceiveCount: '12' } };

    const response = await rig.run([twelfth]);

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.queue.enqueued).toEqual([{ payload: { v: 1, id: message.id, rev: 1 }, delaySeconds: 31 }]);
    expect(await rig.depth()).toMatchObject({ delayed: 1 });
    expect(await rig.depth(rig.urls.sendDeadLetter)).toMatchObject({ stored: 0 });
  });

  it('replaces a dead copy whose move to the DLQ keeps failing by the DLQ copy itself, marked "dlq"', async () => {
    const rig = await createSenderRig(world, { settings: KEPT_BACK_SOON }); // backstop 13
    world.smtp.script(TRANSIENT_AFTER_DATA);
    const message = await rig.putMessage();
    await rig.dispatch(message);
    // The DLQ refuses the sender's first two moves, then works again.
    const flaky = new RefusingQueue(new SqsDispatchQueue(sqsClient(), rig.urls.sendDeadLetter), 2);
    const handler = rig.newHandler({ deadLetters: flaky });

    const [first] = await rig.receive({ waitSeconds: 3, max: 1 });
    if (first === undefined) throw new Error('no copy');
    expect((await rig.run([first], handler)).batchItemFailures).toHaveLength(1);
    expect((await rig.state(message.id)).status).toBe('dead');
    expect(world.smtp.transactions).toBeGreaterThan(0);

    // The same copy back at its twelfth receive; the move fails once more and the backstop is near.
    const [again] = await rig.receive({ waitSeconds: 8, max: 1 });
    if (again === undefined) throw new Error('the dead copy did not come back');
    expect(again.messageId).toBe(first.messageId);
    const twelfth = { ...again, attributes: { ...again.attributes, ApproximateReceiveCount: '12' } };
    expect((await rig.run([twelfth], handler)).batchItemFailures).toEqual([]);

    // Nothing on the send queue would be dropped as a stray copy; the DLQ holds the marked copy.
    expect(rig.queue.enqueued).toEqual([]);
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
    const [parked] = await rig.receive({ queueUrl: rig.urls.sendDeadLetter, waitSeconds: 3, max: 1 });
    expect(parked === undefined ? undefined : parseDispatchPayload(parked.body)).toEqual({
      ok: true,
      payload: { v: 1, id: message.id, rev: 1, dlq: true, death: 1 },
    });
    expect((await rig.state(message.id)).status).toBe('dead');
  }, 20_000);

  it('keeps the "dlq" marker of a redriven copy it replaces', async () => {
    const rig = await createSenderRig(world, { settings: { maxAttempts: 1 } });
    const message = await rig.putMessage({
      status: 'sending',
      leaseOwner: 'another-sender',
      leaseUntil: new Date(rig.clock.ms + 30_000),
    });
    await rig.dispatch(JSON.stringify({ v: 1, id: message.id, rev: 1, dlq: true }));
    const [copy] = await rig.receive({ waitSeconds: 3, max: 1 });
    if (copy === undefined) throw new Error('no copy');
    const twelfth = { ...copy, attributes: { ...copy.attributes, ApproximateReceiveCount: '12' } };

    expect((await rig.run([twelfth])).batchItemFailures).toEqual([]);

    expect(rig.queue.enqueued).toEqual([
      { payload: { v: 1, id: message.id, rev: 1, dlq: true }, delaySeconds: 31 },
    ]);
  });
});

/** A queue that refuses its first `refusals` copies (a DLQ briefly unavailable), then passes them on. */
class RefusingQueue implements DispatchQueue {
  constructor(
    private readonly inner: DispatchQueue,
    private refusals: number,
  ) {}
  async enqueue(copies: readonly QueuedCopy[]) {
    if (this.refusals > 0) {
      this.refusals -= 1;
      return { failed: copies };
    }
    return this.inner.enqueue(copies);
  }
}
