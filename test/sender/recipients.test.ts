import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { messageView } from '../../lambdas/store/messageView.js';
import { ITEM_SORT_KEY } from '../../lambdas/store/tableLayout.js';
import {
  contextWithRemaining,
  createSenderRig,
  enqueueThroughApi,
  type SenderWorld,
  startSenderWorld,
} from './senderHarness.js';

/**
 * DESIGN §5, "Recipients one by one": a recipient the relay accepted is never sent the message
 * again; one deferred with a 4xx at RCPT stays pending and is retried (same Message-ID, only the
 * pending recipients in the envelope); one rejected with a 5xx is recorded and not retried. The
 * message is `sent` when no recipient is pending and at least one was accepted.
 */

describe('the sender, recipient by recipient', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  it('counts each place of a mailbox named twice in two spellings, and retries only the deferred one, once (decision 0237)', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script(
      {
        rcptTo: (address) =>
          address.toLowerCase() === 'bob@example.net'
            ? { code: 450, message: '4.2.1 Mailbox busy, try later' }
            : undefined,
      },
      {},
    );
    const message = await rig.putMessage({
      to: ['ADA@bücher.example', 'bob@example.net'],
      cc: ['Ada <ada@xn--bcher-kva.example>', 'BOB@Example.NET'],
    });
    await rig.dispatch(message);

    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', rcpt_accepted: [0, 2] });
    await rig.deliverNext();
    const sent = await rig.state(message.id);
    expect(sent).toMatchObject({ status: 'sent', attempts: 2, rcpt_accepted: [0, 1, 2, 3] });
    expect(messageView({ ...sent, rcpt_total: 4 }, { withHistory: false }).recipients).toEqual({
      accepted: 4,
      pending: 0,
      rejected: 0,
      suppressed: 0,
    });
    // One RCPT TO for Ada in her first spelling (the sink shows the domain in Unicode), then Bob's.
    expect(rig.received(message.id).map((copy) => copy.to)).toEqual([
      ['ADA@bücher.example'],
      ['bob@example.net'],
    ]);
  });

  it('retries only the recipient deferred with a 4xx, never the accepted one nor the rejected one', async () => {
    const rig = await createSenderRig(world);
    const to = ['ada@example.org', 'Bob <bob@example.net>'];
    const cc = ['cyd@example.com'];
    world.smtp.script(
      {
        rcptTo: (address) => {
          if (address === 'bob@example.net') return { code: 450, message: '4.2.1 Mailbox busy, try later' };
          if (address === 'cyd@example.com') return { code: 550, message: '5.1.1 User unknown' };
          return undefined;
        },
      },
      {},
    );
    const message = await rig.putMessage({ to, cc });
    await rig.dispatch(message);

    const first = await rig.deliverNext();
    expect(first.response.batchItemFailures).toHaveLength(1);
    const waiting = await rig.state(message.id);
    expect(waiting).toMatchObject({
      status: 'retrying',
      attempts: 1,
      rcpt_accepted: [0],
      rcpt_rejected: [2],
    });

    const second = await rig.deliverNext();
    expect(second.response.batchItemFailures).toEqual([]);
    const sent = await rig.state(message.id);
    expect(sent).toMatchObject({ status: 'sent', attempts: 2, rcpt_accepted: [0, 1], rcpt_rejected: [2] });
    expect(sent.history.map((entry) => entry.outcome)).toEqual(['sent', 'sent']);
    expect(messageView({ ...sent, rcpt_total: 3 }, { withHistory: false }).recipients).toEqual({
      accepted: 2,
      pending: 0,
      rejected: 1,
      suppressed: 0,
    });

    // What the relay saw: the first envelope had all three, the retry only Bob; same Message-ID.
    const copies = rig.received(message.id);
    expect(copies.map((copy) => copy.to)).toEqual([['ada@example.org'], ['bob@example.net']]);
    expect(new Set(copies.map((copy) => copy.messageId))).toEqual(new Set([`<${message.id}@mail.test>`]));
    // The headers still show everyone, as on the first attempt.
    expect(copies[1]?.raw).toMatch(/^To: ada@example.org, Bob <bob@example.net>$/m);
    expect(rig.log.text()).not.toMatch(/(ada|bob|cyd)@/);
  });

  it('fails a message whose every recipient was rejected for good, and sends a message whose only pending recipient is rejected later', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({ rcptTo: { code: 550, message: '5.1.1 User unknown' } });
    const rejected = await rig.putMessage({ to: ['gone@example.org', 'lost@example.org'] });
    await rig.dispatch(rejected);
    await rig.deliverNext();
    expect(await rig.state(rejected.id)).toMatchObject({
      status: 'failed',
      rcpt_accepted: [],
      rcpt_rejected: [0, 1],
    });

    world.smtp.script(
      {
        rcptTo: (address) =>
          address === 'later@example.org' ? { code: 451, message: '4.3.0 Greylisted' } : undefined,
      },
      { rcptTo: { code: 550, message: '5.1.1 User unknown' } },
    );
    const partly = await rig.putMessage({ to: ['ada@example.org', 'later@example.org'] });
    await rig.dispatch(partly);
    await rig.deliverNext();
    await rig.deliverNext();
    expect(await rig.state(partly.id)).toMatchObject({
      status: 'sent',
      rcpt_accepted: [0],
      rcpt_rejected: [1],
    });
  });

  /**
   * DESIGN §5 "Rate": the rate is counted in recipients as SES counts them. A message with more
   * recipients than the bucket's burst goes (it cannot be split), but the relay counts every one of
   * them: the next message waits until they are paid for.
   */
  it('the send rate counts every recipient of a message larger than its burst: the next message waits for them', async () => {
    const rig = await createSenderRig(world, { maxSendRate: 2 });
    world.smtp.script();
    const to = ['a@example.org', 'b@example.org', 'c@example.org', 'd@example.org', 'e@example.org'];
    const first = await rig.putMessage({ to, rcptTotal: to.length });
    const second = await rig.putMessage({ to, rcptTotal: to.length });
    await rig.dispatch(first);
    await rig.dispatch(second);
    const records = await rig.receive({ max: 2, waitSeconds: 3 });
    expect(records).toHaveLength(2);
    await rig.run(records, rig.newHandler({ concurrency: 1 }), contextWithRemaining(60_000));

    for (const message of [first, second]) expect((await rig.state(message.id)).status).toBe('sent');
    // The first goes with the burst (2) in hand and owes 3; the second waits for those 3 and its own
    // burst of 2: 5 recipients at 2 a second, 2.5 s on the sender's clock.
    expect(rig.sleeps.reduce((sum, milliseconds) => sum + milliseconds, 0)).toBe(2500);
  });

  /**
   * DESIGN §5 "Rate" counts recipients as SES counts them: the recipients of the transaction, one per
   * RCPT TO. A mailbox named twice (in `to` and `bcc`, in two spellings) gets one RCPT TO (decisions
   * 0234, 0237), so it takes one of the rate's recipients, not two (decision 0248).
   */
  it('the send rate counts a mailbox named twice in one message once, as it gets one RCPT TO', async () => {
    const rig = await createSenderRig(world, { maxSendRate: 1 });
    world.smtp.script();
    const enqueued = await Promise.all(
      [
        { to: ['ada@example.org'], bcc: ['ADA@Example.ORG'] },
        { to: ['bob@example.org'], bcc: [] },
      ].map(async ({ to, bcc }, n) => {
        const answer = await enqueueThroughApi(
          world,
          `rate-once-${n}-${Math.random()}`,
          { from: 'ops@example.com', to, bcc, subject: 'Your invoice', text: 'Attached.' },
          rig.clock.now,
        );
        expect(answer.status).toBe(202);
        return String(answer.json.id);
      }),
    );
    // Ada's first, then Bob's, through one sender (one bucket).
    const handler = rig.newHandler();
    for (const id of enqueued) {
      await rig.dispatch({ id, rev: 1 });
      const records = await rig.receive({ max: 1, waitSeconds: 3 });
      expect(records).toHaveLength(1);
      await rig.run(records, handler, contextWithRemaining(60_000));
    }

    for (const id of enqueued) expect((await rig.state(id)).status).toBe('sent');
    // One RCPT TO for Ada, her first spelling; one for Bob.
    expect(enqueued.flatMap((id) => rig.received(id).map((copy) => copy.to))).toEqual([
      ['ada@example.org'],
      ['bob@example.org'],
    ]);
    // Ada's message takes the burst's one recipient; Bob's waits one second for its own, not two.
    expect(rig.sleeps.reduce((sum, milliseconds) => sum + milliseconds, 0)).toBe(1000);
  });

  /**
   * `rcpt_places` is the rate's count only (decision 0248): who is sent to is the envelope's and the
   * progress's business. A record whose `rcpt_places` is wrong (here: every place one mailbox) still
   * sends each mailbox one RCPT TO and settles every place: nobody skipped, nobody twice (0250).
   */
  it('sends every mailbox once whatever rcpt_places says: it counts the rate, it never picks the recipients', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const answer = await enqueueThroughApi(
      world,
      `places-wrong-${Math.random()}`,
      {
        from: 'ops@example.com',
        to: ['ada@example.org', 'bob@example.org'],
        bcc: ['ADA@Example.ORG'],
        subject: 'Hi',
        text: 'Hi.',
      },
      rig.clock.now,
    );
    expect(answer.status).toBe(202);
    const id = String(answer.json.id);
    expect((await rig.state(id)).rcpt_places).toEqual([0, 1, 0]);
    await world.documents.send(
      new UpdateCommand({
        TableName: world.tableName,
        Key: { pk: messagePk(id), sk: ITEM_SORT_KEY.messageState },
        UpdateExpression: 'SET rcpt_places = :wrong',
        ExpressionAttributeValues: { ':wrong': [0, 0, 0] },
      }),
    );
    await rig.dispatch({ id, rev: 1 });
    const records = await rig.receive({ max: 1, waitSeconds: 3 });
    expect(records).toHaveLength(1);
    await rig.run(records, rig.newHandler(), contextWithRemaining(60_000));

    const state = await rig.state(id);
    expect(state.status).toBe('sent');
    expect(state.rcpt_accepted).toEqual([0, 1, 2]);
    expect(rig.received(id).map((copy) => copy.to)).toEqual([['ada@example.org', 'bob@example.org']]);
  });
});
