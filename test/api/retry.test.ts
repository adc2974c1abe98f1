import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEvent } from '../../lambdas/api/route.js';
import { retryMessageRoute } from '../../lambdas/api/routes/messages.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { TENANT } from '../sender/records.js';
import {
  createSenderRig,
  type SenderWorld,
  startSenderWorld,
  TEST_SETTINGS,
} from '../sender/senderHarness.js';
import { documentClient } from '../support/awsLocal.js';

type SenderRig = Awaited<ReturnType<typeof createSenderRig>>;

/** `POST /v1/messages/{id}/retry` through its route and store, on the sender world's table and clock. */
function retryOverRoute(world: SenderWorld, rig: SenderRig, id: string, documents = world.documents) {
  const deps = {
    store: new DynamoApiStore(documents, world.tableName),
    config: {
      retentionDays: 30,
      allowedFrom: ['*'],
      defaultFrom: 'ops@example.com',
      maxHorizonDays: 400,
      maxAttempts: TEST_SETTINGS.maxAttempts,
    },
    now: rig.clock.now,
  };
  return retryMessageRoute(deps)({ tenant: TENANT, params: { id }, event: {} as ApiEvent });
}

/**
 * DESIGN §3, `POST /v1/messages/{id}/retry`: "manual retry of failed, dead or unknown: every recipient
 * not yet accepted is pending again (one still suppressed stays out)". The route and its store on
 * DynamoDB Local, the real sender, and a real smtp-server that first refuses and then accepts.
 */
describe('a manual retry sends to every recipient not yet accepted', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  const retryThroughRoute = (rig: SenderRig, id: string) => retryOverRoute(world, rig, id);

  it('a message whose every recipient got a 550 is failed; retried, with the relay now accepting, it is sent to them', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({ rcptTo: { code: 550, message: '5.7.1 Relaying denied by policy' } });
    const message = await rig.putMessage({ to: ['ada@example.org', 'bob@example.org'] });
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'failed', rcpt_rejected: [0, 1] });

    world.smtp.script();
    const answer = await retryThroughRoute(rig, message.id);
    expect(answer.statusCode).toBe(202);
    const retried = await rig.state(message.id);
    expect(retried).toMatchObject({ status: 'scheduled', rev: 2, rcpt_rejected: [] });

    await rig.dispatch({ id: message.id, rev: 2 });
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', rcpt_accepted: [0, 1] });
    const copies = rig.received(message.id);
    expect(copies.map((copy) => copy.to)).toEqual([['ada@example.org', 'bob@example.org']]);
  });

  it('a dead message: the retry leaves out the recipient already accepted and tries the deferred and the rejected', async () => {
    const rig = await createSenderRig(world);
    const refuse = (address: string) => {
      if (address === 'bob@example.org') return { code: 450, message: '4.2.1 Mailbox busy, try later' };
      if (address === 'cyd@example.org') return { code: 550, message: '5.7.1 Relaying denied by policy' };
      return undefined;
    };
    world.smtp.script({ rcptTo: refuse });
    const message = await rig.putMessage({ to: ['ada@example.org', 'bob@example.org', 'cyd@example.org'] });
    await rig.dispatch(message);
    // Three attempts (TEST_SETTINGS.maxAttempts): ada accepted in the first, bob deferred every time.
    for (let attempt = 0; attempt < 3; attempt++) await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({
      status: 'dead',
      rcpt_accepted: [0],
      rcpt_rejected: [2],
    });

    world.smtp.script();
    expect((await retryThroughRoute(rig, message.id)).statusCode).toBe(202);
    await rig.dispatch({ id: message.id, rev: 2 });
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', rcpt_accepted: [0, 1, 2] });
    expect(rig.received(message.id).map((copy) => copy.to)).toEqual([
      ['ada@example.org'],
      ['bob@example.org', 'cyd@example.org'],
    ]);
  });

  it('a failed message with a suppressed recipient: the retry sends to the others only', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({
      rcptTo: (address) =>
        address === 'dee@example.org'
          ? { code: 550, message: '5.1.1 User unknown' }
          : { code: 550, message: '5.7.1 Relaying denied by policy' },
    });
    const message = await rig.putMessage({ to: ['eve@example.org', 'dee@example.org'] });
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'failed', rcpt_rejected: [0, 1] });
    expect(
      await new DynamoApiStore(world.documents, world.tableName).suppressions.suppressedAmong(TENANT, [
        'dee@example.org',
      ]),
    ).toEqual(new Set(['dee@example.org']));

    world.smtp.script();
    expect((await retryThroughRoute(rig, message.id)).statusCode).toBe(202);
    await rig.dispatch({ id: message.id, rev: 2 });
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({
      status: 'sent',
      rcpt_accepted: [0],
      rcpt_suppressed: [1],
    });
    expect(rig.received(message.id).map((copy) => copy.to)).toEqual([['eve@example.org']]);
  });
});

/**
 * DESIGN §3 (`POST /v1/messages/{id}/retry`: "manual retry of failed, dead or unknown") and §5
 * ("after POSTDATE_MAX_ATTEMPTS attempts the message is dead"): a retried message gets the attempts
 * a DLQ redrive would give it, and `attempts` keeps counting (§2). The route and its store on
 * DynamoDB Local, the real sender (TEST_SETTINGS: 3 attempts), a real smtp-server that defers.
 */
describe('a manual retry grants a fresh budget of attempts', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  const greylisted = { rcptTo: { code: 451, message: '4.7.1 Greylisted, try again later' } };

  const retryThroughRoute = (rig: SenderRig, id: string) => retryOverRoute(world, rig, id);

  it('a dead message retried is dead again only after POSTDATE_MAX_ATTEMPTS more deferrals', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script(greylisted);
    const message = await rig.putMessage({ to: ['ada@example.org'] });
    await rig.dispatch(message);
    for (let attempt = 0; attempt < TEST_SETTINGS.maxAttempts; attempt++) await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 3 });

    expect((await retryThroughRoute(rig, message.id)).statusCode).toBe(202);
    await rig.dispatch({ id: message.id, rev: 2 });
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', attempts: 4 });
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', attempts: 5 });
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 6 });
  }, 60_000);

  it('a failed message retried late in its budget still gets POSTDATE_MAX_ATTEMPTS attempts', async () => {
    const rig = await createSenderRig(world);
    // One deferral, then a rejection: failed after 2 of its 3 attempts.
    let replies = 0;
    world.smtp.script({
      rcptTo: () =>
        replies++ === 0
          ? { code: 451, message: '4.7.1 Greylisted, try again later' }
          : { code: 550, message: '5.7.1 Relaying denied by policy' },
    });
    const message = await rig.putMessage({ to: ['bob@example.org'] });
    await rig.dispatch(message);
    await rig.deliverNext();
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'failed', attempts: 2 });

    world.smtp.script(greylisted);
    expect((await retryThroughRoute(rig, message.id)).statusCode).toBe(202);
    await rig.dispatch({ id: message.id, rev: 2 });
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', attempts: 3 });
  }, 60_000);
});

/**
 * A manual retry whose UpdateItem lands and whose answer is lost on the way back: the SDK sends the
 * same conditional write again, which finds the record already `scheduled` at rev + 1. DESIGN §3's
 * retry is 202 for a `failed` message: the write that landed is this request's own, not a conflict.
 */
describe('a manual retry recognises its own write when its answer was lost', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  /** A table client whose first UpdateItem lands and then throws below the SDK's retry step. */
  function firstUpdateAnswerLost() {
    const documents = documentClient();
    let lost = 0;
    documents.middlewareStack.add(
      (next, context) => async (args) => {
        const output = await next(args);
        if (context.commandName === 'UpdateItemCommand' && lost === 0) {
          lost += 1;
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET' });
        }
        return output;
      },
      { step: 'deserialize', priority: 'high', name: 'loseFirstUpdateAnswer' },
    );
    return { documents, lost: () => lost };
  }

  it('answers 202 and the message is scheduled once, at rev 2', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({ rcptTo: { code: 550, message: '5.7.1 Relaying denied by policy' } });
    const message = await rig.putMessage({ to: ['ada@example.org'] });
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'failed' });

    const faulty = firstUpdateAnswerLost();
    const answer = await retryOverRoute(world, rig, message.id, faulty.documents);
    expect(faulty.lost()).toBe(1);
    expect(answer.statusCode).toBe(202);
    expect(await rig.state(message.id)).toMatchObject({ status: 'scheduled', rev: 2 });
  }, 60_000);
});
