import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import { demand, JOURNEYS, RESCUE } from '../../bench/capacityModel.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { INDEX } from '../../lambdas/store/tableLayout.js';
import {
  createSenderRig,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
} from '../sender/senderHarness.js';
import { enqueueTextMail } from '../store/enqueueTextMail.js';

/**
 * docs/capacity.md's index quotas and hot keys are computed from the model's write units per index
 * (bench/capacityModel.ts). DynamoDB bills an index again on every write that moves or changes its
 * entry (a key that moves is a delete and a put); these units are DynamoDB's own account of the real
 * enqueue and the real sender's claim and outcome on DynamoDB Local (`ReturnConsumedCapacity:
 * 'INDEXES'`), so a write that touches an index the model does not count fails here.
 */

const RETENTION_DAYS = 30;
let world: SenderWorld;
let rig: SenderRig;
let api: DynamoApiStore;
/** Index write units of every table write on the shared client, by index name. */
const indexUnits: Record<string, number> = {};

beforeAll(async () => {
  world = await startSenderWorld();
  rig = await createSenderRig(world, { settings: { retentionDays: RETENTION_DAYS } });
  api = new DynamoApiStore(world.documents, world.tableName);
  world.documents.middlewareStack.add(
    (next, context) => async (args) => {
      const writes = ['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand'];
      if (!writes.includes(context.commandName ?? '')) return next(args);
      const input = args.input as { ReturnConsumedCapacity?: string };
      const result = await next({ ...args, input: { ...input, ReturnConsumedCapacity: 'INDEXES' } });
      const consumed = (result.output as { ConsumedCapacity?: { GlobalSecondaryIndexes?: object } })
        .ConsumedCapacity;
      for (const [index, units] of Object.entries(consumed?.GlobalSecondaryIndexes ?? {})) {
        indexUnits[index] = (indexUnits[index] ?? 0) + (units as { CapacityUnits: number }).CapacityUnits;
      }
      return result;
    },
    { step: 'initialize', name: 'indexUnits' },
  );
});
afterAll(async () => world?.close());

describe('the capacity model counts the index writes DynamoDB bills', () => {
  it('an immediate message, enqueued and sent: by_status, by_tenant and due as the model has them', async () => {
    const now = rig.clock.now();
    const state = await enqueueTextMail(api, {
      text: mailText(1024),
      now,
      idempotencyKey: `capacity-${now.getTime()}`,
      retentionDays: RETENTION_DAYS,
    });
    await rig.dispatch({ id: state.id, rev: state.rev });
    await rig.deliverNext();
    expect((await rig.state(state.id)).status).toBe('sent');

    const model = demand(JOURNEYS.immediate).limits;
    expect(indexUnits).toEqual({
      [INDEX.byStatus.indexName]: model.byStatusWrites,
      [INDEX.byTenant.indexName]: model.byTenantWrites,
      [INDEX.due.indexName]: model.dueWrites,
    });
  });

  it("the sweeper's stamp moves the message's `due` entry: a delete and a put, as the rescue's model has it", async () => {
    const now = rig.clock.now();
    const state = await enqueueTextMail(api, {
      text: mailText(1024),
      now,
      idempotencyKey: `capacity-stamp-${now.getTime()}`,
      retentionDays: RETENTION_DAYS,
    });
    const before = { ...indexUnits };

    const stamped = await new DynamoSweepRecords(world.documents, world.tableName).recordRedispatch({
      id: state.id,
      rev: state.rev,
      status: state.status,
      seenDueAt: state.due_at as string,
      nextDueAt: new Date(now.getTime() + 300_000).toISOString(),
      sweepCount: 1,
      now,
    });

    expect(stamped).toBe('recorded');
    const moved = Object.fromEntries(
      Object.entries(indexUnits).map(([index, units]) => [index, units - (before[index] ?? 0)]),
    );
    expect(moved).toEqual({
      [INDEX.byStatus.indexName]: 0,
      [INDEX.byTenant.indexName]: 0,
      [INDEX.due.indexName]: RESCUE.stampDueWrites,
    });
  });
});
