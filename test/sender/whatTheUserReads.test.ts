/**
 * What a user reads of a message the sender moved: its view (DESIGN §3, `GET /v1/messages/{id}`:
 * `last_error`, `attempts`, `history`) and its events (DESIGN §11: one per status change, the view as
 * its data), after real sends to a scripted smtp-server. The view comes from the api handler, the
 * events from the event producer reading the table's own stream (DynamoDB Local). Decision 0223:
 * a `sent` message shows no last error however it came to be sent, and a claim given back without
 * an attempt (DESIGN §2: no attempt) is no `message.retrying`.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostdateEvent } from '../../lambdas/core/messageEvents.js';
import { createEventsHandler } from '../../lambdas/events/createEventsHandler.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { DynamoSuppressionList, SUPPRESSION_MAX_AGE_MS } from '../../lambdas/store/suppressionList.js';
import { DynamoWebhookStore } from '../../lambdas/store/webhookStore.js';
import { StreamTail } from '../relay/streamTail.js';
import { eventually } from '../support/eventually.js';
import { refusedPort } from '../support/refusedPort.js';
import { TENANT } from './records.js';
import {
  createSenderRig,
  getThroughApi,
  rescheduleThroughApi,
  type SenderRig,
  type SenderWorld,
  smtpMailer,
  startSenderWorld,
  storeWith,
} from './senderHarness.js';

let world: SenderWorld;
let list: DynamoSuppressionList;
let tail: StreamTail;
/** Every record of the table's stream read so far (the tail hands each one over once). */
const streamed: DynamoDBRecord[] = [];

beforeAll(async () => {
  world = await startSenderWorld();
  list = new DynamoSuppressionList(world.documents, world.tableName);
  tail = new StreamTail(world.streamArn);
});
afterAll(async () => {
  await world?.close();
});

interface View {
  readonly status: string;
  readonly attempts: number;
  readonly last_error: { readonly class: string; readonly code: string | null } | null;
  readonly recipients: Record<string, number>;
  readonly history: readonly { readonly outcome: string; readonly code: string | null }[];
}

/** The message as its user reads it: `GET /v1/messages/{id}`. */
async function viewOf(rig: SenderRig, id: string): Promise<View> {
  const answer = await getThroughApi(world, id, rig.clock.now);
  expect(answer.status).toBe(200);
  return answer.json as unknown as View;
}

/**
 * The message's events so far: the table's stream read until it carries the record's latest write,
 * then this message's records through the event producer, whose bus is recorded (no endpoint is
 * subscribed, so nothing is queued for a webhook).
 */
async function eventsOf(rig: SenderRig, id: string): Promise<PostdateEvent[]> {
  const latest = (await rig.state(id)).updated_at;
  const ownRecords = () => streamed.filter((record) => record.dynamodb?.NewImage?.id?.S === id);
  await eventually(
    `the stream to carry the write of ${latest}`,
    async () => {
      streamed.push(...(await tail.next()).Records);
      return ownRecords().some((record) => record.dynamodb?.NewImage?.updated_at?.S === latest);
    },
    { withinMs: 10_000 },
  );
  const published: PostdateEvent[] = [];
  const produce = createEventsHandler({
    bus: {
      publish: async (events) => {
        published.push(...events);
        return { failed: [] };
      },
    },
    store: new DynamoWebhookStore(world.documents, world.tableName),
    queue: { send: async () => ({ failed: [] }) },
    now: rig.clock.now,
    retryHours: 24,
    retentionDays: 30,
  });
  expect((await produce({ Records: ownRecords() })).batchItemFailures).toEqual([]);
  return published;
}

const eventData = (event: PostdateEvent) => event.data as unknown as View;

/** The message's one copy, received once it is visible (a deadline, no sleep) and run through `handler`. */
async function runOnce(rig: SenderRig, handler = rig.handler) {
  const records = await eventually(
    'a copy on the send queue',
    async () => {
      const received = await rig.receive({ max: 1, waitSeconds: 1 });
      return received.length === 1 ? received : undefined;
    },
    { withinMs: 15_000 },
  );
  await rig.run(records, handler);
}

describe('a sent message shows no last error (DESIGN §3, decision 0223)', () => {
  it('when its last pending recipient was suppressed after a deferral: its view and its message.sent; the history keeps the attempts', async () => {
    const rig = await createSenderRig(world); // random 0: every backoff 0 s
    world.smtp.script({
      rcptTo: (address) =>
        address === 'later@example.com'
          ? { code: 450, message: '4.2.1 Mailbox busy, try again later' }
          : undefined,
    });
    const message = await rig.putMessage({ to: ['now@example.com', 'later@example.com'] });
    await rig.dispatch(message);
    await runOnce(rig); // now@ accepted, later@ deferred
    await runOnce(rig); // later@ deferred again: the attempt failed, its 450 is the last error
    expect(await viewOf(rig, message.id)).toMatchObject({
      status: 'retrying',
      attempts: 2,
      last_error: { class: 'transient', code: '450' },
    });

    await list.put({ tenant: TENANT, address: 'later@example.com', reason: 'complaint', now: new Date() });
    // The sender looked it up before: the add applies within SUPPRESSION_MAX_AGE_MS (decision 0173).
    rig.clock.advance(SUPPRESSION_MAX_AGE_MS);
    const transactionsBefore = world.smtp.transactions;
    await runOnce(rig);
    expect(world.smtp.transactions).toBe(transactionsBefore);

    const sent = await viewOf(rig, message.id);
    expect(sent).toMatchObject({
      status: 'sent',
      attempts: 2,
      last_error: null,
      recipients: { accepted: 1, pending: 0, rejected: 0, suppressed: 1 },
    });
    expect(sent.history.map((entry) => entry.outcome)).toEqual(['sent', 'transient']);
    const events = await eventsOf(rig, message.id);
    const sentEvent = events.find((event) => event.type === 'message.sent');
    expect(sentEvent && eventData(sentEvent)).toMatchObject({ status: 'sent', last_error: null });
  }, 30_000);

  it('when a later attempt refused its last pending recipient for good: the refusal is counted and in the history', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script(
      {
        rcptTo: (address) =>
          address === 'policy@example.com' ? { code: 450, message: '4.2.1 Busy' } : undefined,
      },
      { rcptTo: { code: 550, message: '5.7.1 Refused by policy' } },
    );
    // Not the address the test above suppressed: the list is the tenant's, shared by the file.
    const message = await rig.putMessage({ to: ['now@example.com', 'policy@example.com'] });
    await rig.dispatch(message);
    await runOnce(rig); // now@ accepted, policy@ deferred
    await runOnce(rig); // policy@ refused for good: nobody is pending, one accepted

    const sent = await viewOf(rig, message.id);
    expect(sent).toMatchObject({
      status: 'sent',
      attempts: 2,
      last_error: null,
      recipients: { accepted: 1, pending: 0, rejected: 1, suppressed: 0 },
    });
    expect(sent.history.map((entry) => entry.outcome)).toEqual(['sent', 'permanent']);
    const events = await eventsOf(rig, message.id);
    const sentEvent = events.find((event) => event.type === 'message.sent');
    expect(sentEvent && eventData(sentEvent)).toMatchObject({ status: 'sent', last_error: null });
  }, 30_000);
});

describe('a message that is not sent shows why (DESIGN §2 `retrying`: a transient failure; §3 `last_error`)', () => {
  it('retrying after an attempt the relay took for one recipient and deferred for another: the deferral, in its view and its message.retrying', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({
      rcptTo: (address) =>
        address === 'busy@example.com'
          ? { code: 452, message: '4.2.2 Mailbox full, try again later' }
          : undefined,
    });
    const message = await rig.putMessage({ to: ['now@example.com', 'busy@example.com'], rcptTotal: 2 });
    await rig.dispatch(message);
    await runOnce(rig); // now@ accepted, busy@ deferred: still pending

    const view = await viewOf(rig, message.id);
    expect(view).toMatchObject({
      status: 'retrying',
      attempts: 1,
      recipients: { accepted: 1, pending: 1 },
      last_error: { class: 'transient', code: '452' },
    });
    const events = await eventsOf(rig, message.id);
    const retrying = events.find((event) => event.type === 'message.retrying');
    expect(retrying && eventData(retrying)).toMatchObject({
      last_error: { class: 'transient', code: '452' },
    });
  }, 30_000);
});

describe('a claim given back without an attempt is no message.retrying (DESIGN §2, §11, decision 0223)', () => {
  it('the relay found down, a read failed after the claim: no event; each failed attempt: one', async () => {
    const rig = await createSenderRig(world); // random 0: every backoff 0 s
    const message = await rig.putMessage();
    await rig.dispatch(message);

    // The relay is down: the connection is refused before MAIL FROM (no attempt, DESIGN §5).
    const down = smtpMailer({ host: '127.0.0.1', port: await refusedPort() });
    try {
      await runOnce(rig, rig.newHandler({ mailer: down }));
    } finally {
      await down.close();
    }
    expect(await rig.state(message.id)).toMatchObject({ attempts: 0 });

    // The relay is back and defers the message after DATA: one attempt, which failed.
    world.smtp.script({ afterData: { code: 451, message: '4.3.0 Try again later' } }, {});
    await runOnce(rig);
    expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', attempts: 1 });

    // The suppression list cannot be read after the next claim: the claim goes back unused.
    const real = new DynamoSenderStore(world.documents, world.tableName);
    const unreadable = storeWith(real, {
      suppressions: Object.assign(Object.create(real.suppressions), {
        suppressedAmong: () => Promise.reject(new Error('throttled')),
      }),
    });
    await runOnce(rig, rig.newHandler({ store: unreadable }));
    // A retrying message given back waits as retrying again (decision 0280).
    expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', attempts: 1 });
    expect(rig.metrics.of('Released')).toBe(1);

    // The copy is held back by the release: a second one, as the sweeper would put, sends it.
    rig.clock.advance(60_000);
    await rig.dispatch(message);
    await runOnce(rig);
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 2 });

    const events = await eventsOf(rig, message.id);
    expect(events.map((event) => [event.type, eventData(event).attempts])).toEqual([
      ['message.scheduled', 0],
      ['message.retrying', 1],
      ['message.sent', 2],
    ]);
  }, 30_000);
});

describe('a claim given back before its first attempt leaves the message scheduled (DESIGN §2: `retrying` is a transient failure, and none happened; §3 PATCH)', () => {
  it('reads scheduled with no event, is rescheduled by PATCH (200), and is sent once at the new time', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage();
    await rig.dispatch(message);

    // The suppression list cannot be read after the claim: the claim goes back, no attempt.
    const real = new DynamoSenderStore(world.documents, world.tableName);
    const unreadable = storeWith(real, {
      suppressions: Object.assign(Object.create(real.suppressions), {
        suppressedAmong: () => Promise.reject(new Error('throttled')),
      }),
    });
    await runOnce(rig, rig.newHandler({ store: unreadable }));
    expect(rig.metrics.of('Released')).toBe(1);
    expect(await viewOf(rig, message.id)).toMatchObject({
      status: 'scheduled',
      attempts: 0,
      last_error: null,
    });

    // Still waiting, never attempted: the user may move it (DESIGN §3: reschedule a scheduled message).
    const later = new Date(rig.clock.now().getTime() + 3_600_000).toISOString();
    const moved = await rescheduleThroughApi(world, message.id, rig.clock.now, { send_at: later });
    expect(moved.status).toBe(200);
    expect(moved.json).toMatchObject({ status: 'scheduled', send_at: later, rev: message.rev + 1 });

    // The old copy is stale (its rev); the new one goes at the new time, once.
    rig.clock.advance(3_600_000);
    await rig.dispatch({ id: message.id, rev: message.rev + 1 });
    await runOnce(rig);
    await runOnce(rig);
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 1 });
    expect(rig.accepted(message.id)).toHaveLength(1);

    const events = await eventsOf(rig, message.id);
    expect(events.map((event) => [event.type, eventData(event).status])).toEqual([
      ['message.scheduled', 'scheduled'],
      ['message.sent', 'sent'],
    ]);
  }, 30_000);
});
