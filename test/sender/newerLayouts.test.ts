/**
 * A stack older than the application's outbox helper (DESIGN §4; decision 0166): a copy of a
 * message whose state record a newer writer made (its layout above this stack's) is not sent by this
 * sender's older rules — not claimed, not sent, counted and logged — and the message waits unchanged
 * for the stack's upgrade (the sweeper brings its copy back every run meanwhile). On DynamoDB Local,
 * the SQS emulator and a real smtp-server, the records written by the outbox helper's transaction as
 * a newer helper would write them.
 */
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SENDER_METRIC } from '../../lambdas/core/metricNames.js';
import { RECORD_LAYOUT } from '../../lambdas/core/recordLayout.js';
import { buildOutboxWrite } from '../../lambdas/outbox/index.js';
import { TENANT } from './records.js';
import { createSenderRig, type SenderRig, type SenderWorld, startSenderWorld } from './senderHarness.js';

describe('a message a newer writer made', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
    world.smtp.script();
  });
  afterAll(async () => {
    await world.close();
  });

  async function enqueue(rig: SenderRig, change: Record<string, unknown>): Promise<string> {
    const write = buildOutboxWrite({
      tableName: world.tableName,
      tenant: TENANT,
      idempotencyKey: `newer-${Math.random()}`,
      now: new Date(rig.clock.ms - 1000),
      body: { to: ['ada@example.org'], from: 'ops@example.com', subject: 'Hi', text: 'Hello.' },
      validation: { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 },
    });
    const [state, ...rest] = write.items;
    const item = { ...(state?.Put?.Item ?? {}), ...change };
    const items = [{ Put: { ...state?.Put, TableName: world.tableName, Item: item } }, ...rest];
    await world.documents.send(new TransactWriteCommand({ TransactItems: items }));
    return write.messageId;
  }

  it('is not claimed or sent by an older sender: counted, logged, the record unchanged', async () => {
    const rig = await createSenderRig(world);
    const id = await enqueue(rig, { layout: RECORD_LAYOUT + 1 });
    const before = await rig.state(id);
    await rig.dispatch({ id, rev: 1 });

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(id)).toEqual([]);
    expect(await rig.state(id)).toEqual(before);
    expect(rig.metrics.of(SENDER_METRIC.newerWriterRefusals)).toBe(1);
    expect(rig.log.lines.filter((line) => line.level === 'error')).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/newer writer.*upgrade the stack/),
        attributes: expect.objectContaining({ id }),
      }),
    ]);
    expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
  });

  it('with a status this stack does not know is refused as a newer layout is, not dropped as absent', async () => {
    const rig = await createSenderRig(world);
    const id = await enqueue(rig, { status: 'held' });
    const before = await rig.state(id);
    await rig.dispatch({ id, rev: 1 });

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(id)).toEqual([]);
    expect(await rig.state(id)).toEqual(before);
    expect(rig.metrics.of(SENDER_METRIC.newerWriterRefusals)).toBe(1);
    expect(rig.log.lines.filter((line) => line.level === 'error')).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/newer writer.*upgrade the stack/),
        attributes: expect.objectContaining({ id, reason: 'status "held" is not one this stack knows' }),
      }),
    ]);
  });

  it("of this stack's layout is sent as usual", async () => {
    const rig = await createSenderRig(world);
    const id = await enqueue(rig, { layout: RECORD_LAYOUT });
    await rig.dispatch({ id, rev: 1 });

    await rig.deliverNext();

    expect((await rig.state(id)).status).toBe('sent');
    expect(rig.metrics.of(SENDER_METRIC.newerWriterRefusals)).toBe(0);
  });
});
