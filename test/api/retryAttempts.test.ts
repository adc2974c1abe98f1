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

  async function retryThroughRoute(rig: Awaited<ReturnType<typeof createSenderRig>>, id: string) {
    const deps = {
      store: new DynamoApiStore(world.documents, world.tableName),
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
