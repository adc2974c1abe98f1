import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { enqueueMessage } from '../../lambdas/api/routes/enqueue.js';
import { parseEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { buildOutboxTransactItems } from '../../lambdas/outbox/index.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import {
  groupHeadKey,
  replicaReadOutcome,
  replicasToWrite,
  replicaToRead,
} from '../../lambdas/store/groupHead.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { validBody } from '../api/events.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/**
 * The group head replicated (DESIGN §4 "No hot partitions" and Freshness; docs/decisions/0104): N
 * items (POSTDATE_GROUP_HEAD_REPLICAS) hold a group's head; a raise writes every one in the same
 * transaction, each on `attribute_not_exists OR version < :v`; a reader reads one at random, and a
 * reader whose replica is missing reads the first (the item a head had before replicas). Changing N
 * on a live deployment never loses a raise: a group's set of replicas never shrinks.
 */

const TENANT = 'acme';
const GROUP = 'order:7';
const T0 = new Date('2026-12-02T09:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
/** A `random` that makes replicaToRead pick `replica` of `replicas`. */
const picking = (replica: number, replicas: number) => () => (replica + 0.5) / replicas;

describe('the replica rule (pure)', () => {
  it('a reader picks each of the N replicas, and only those', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 32 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (n, u) => {
          const replica = replicaToRead(n, () => u);
          expect(Number.isInteger(replica) && replica >= 0 && replica < n).toBe(true);
        },
      ),
    );
    expect(new Set(Array.from({ length: 4 }, (_, r) => replicaToRead(4, picking(r, 4))))).toEqual(
      new Set([0, 1, 2, 3]),
    );
  });

  it('a missing replica other than the first sends the reader to the first; the first missing is no head', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 31 }),
        fc.option(fc.record({ version: fc.nat(), replicas: fc.integer({ min: 1, max: 32 }) }), {
          nil: undefined,
        }),
        (replica, item) => {
          const outcome = replicaReadOutcome(replica, item);
          if (item !== undefined) expect(outcome).toEqual({ kind: 'head', head: item });
          else if (replica === 0) expect(outcome).toEqual({ kind: 'head', head: null });
          else expect(outcome).toEqual({ kind: 'read-first' });
        },
      ),
    );
  });

  it('a head written before replicas counts as one', () => {
    expect(replicaReadOutcome(0, { version: 3 })).toEqual({
      kind: 'head',
      head: { version: 3, replicas: 1 },
    });
  });

  it('a raise writes at least the replicas configured and never fewer than the group has', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 32 }),
        fc.option(fc.integer({ min: 1, max: 32 }), { nil: undefined }),
        (configured, seen) => {
          const n = replicasToWrite(configured, seen);
          expect(n).toBe(Math.max(configured, seen ?? 1));
        },
      ),
    );
  });

  it('replica keys: the first is the head item of old, the others each a partition of their own', () => {
    expect(groupHeadKey(TENANT, GROUP, 0)).toEqual({ pk: `GROUP#${TENANT}#${GROUP}`, sk: 'HEAD' });
    expect(groupHeadKey(TENANT, GROUP, 3)).toEqual({ pk: `GROUP#${TENANT}#${GROUP}#3`, sk: 'HEAD#3' });
    // Group "a" replica 1 and group "a#1" replica 0 never meet: the sort key names the replica.
    expect(groupHeadKey(TENANT, 'a', 1)).not.toEqual(groupHeadKey(TENANT, 'a#1', 0));
  });
});

async function rig() {
  const { tableName } = await freshTable('groupreplicas');
  const documents = documentClient();
  let keys = 0;
  const apiStore = (replicas: number, random: () => number = Math.random) =>
    new DynamoApiStore(documents, tableName, { groupHeadReplicas: replicas, random });
  const enqueue = async (replicas: number, version: number, now: Date) => {
    const parsed = parseEnqueueRequest(validBody({ group: { key: GROUP, version } }), {
      allowedFrom: ['*@example.com'],
      defaultFrom: 'ops@example.com',
      maxHorizonDays: 400,
      now,
    });
    if (!parsed.ok) throw new Error(parsed.problem.detail);
    keys += 1;
    const outcome = await enqueueMessage(
      { store: apiStore(replicas), sleep: async () => {} },
      {
        tenant: TENANT,
        idempotencyKey: `replica-${keys}`,
        request: parsed.value,
        now,
        random: Math.random,
        retentionDays: 30,
      },
    );
    if (outcome.kind !== 'created') throw new Error(`expected a new message, got ${outcome.kind}`);
    return outcome.state.status;
  };
  /** Every replica item as stored (undefined where absent). */
  const items = async (count: number) =>
    Promise.all(
      Array.from({ length: count }, async (_, replica) => {
        const { Item } = await documents.send(
          new GetCommand({
            TableName: tableName,
            Key: groupHeadKey(TENANT, GROUP, replica),
            ConsistentRead: true,
          }),
        );
        return Item === undefined ? undefined : { version: Item.version, replicas: Item.replicas };
      }),
    );
  /** What the sender, configured with `replicas`, reads on each replica it may pick. */
  const senderReads = (replicas: number) =>
    Promise.all(
      Array.from({ length: replicas }, (_, replica) =>
        new DynamoSenderStore(documents, tableName, {
          groupHeadReplicas: replicas,
          random: picking(replica, replicas),
        }).readGroupVersion(TENANT, GROUP),
      ),
    );
  /** What the api's enqueue, configured with `replicas`, reads on each replica (consistently). */
  const apiReads = (replicas: number) =>
    Promise.all(
      Array.from(
        { length: replicas },
        async (_, replica) =>
          (
            await apiStore(replicas, picking(replica, replicas)).readGroupHead(TENANT, GROUP, {
              consistent: true,
            })
          )?.version,
      ),
    );
  /** The public outbox's items for a message of this group, written in their own transaction. */
  const outbox = async (version: number, groupHeadReplicas?: number) => {
    keys += 1;
    const parsed = parseEnqueueRequest(validBody({ group: { key: GROUP, version } }), {
      allowedFrom: ['*@example.com'],
      defaultFrom: 'ops@example.com',
      maxHorizonDays: 400,
      now: T0,
    });
    if (!parsed.ok) throw new Error(parsed.problem.detail);
    const items = buildOutboxTransactItems({
      tableName,
      tenant: TENANT,
      idempotencyKey: `outbox-${keys}`,
      request: parsed.value,
      now: T0,
      ...(groupHeadReplicas === undefined ? {} : { groupHeadReplicas }),
    });
    await documents.send(new TransactWriteCommand({ TransactItems: items }));
  };
  return { enqueue, items, senderReads, apiReads, apiStore, outbox };
}

describe('the replicated head on DynamoDB Local', () => {
  it('a raise writes every replica in its transaction, and readers of every replica see it', async () => {
    const { enqueue, items, senderReads, apiReads } = await rig();
    expect(await enqueue(4, 3, T0)).toBe('scheduled');
    expect(await items(4)).toEqual(Array.from({ length: 4 }, () => ({ version: 3, replicas: 4 })));
    expect(await senderReads(4)).toEqual([3, 3, 3, 3]);
    expect(await apiReads(4)).toEqual([3, 3, 3, 3]);
  });

  it('two raisers at once: every replica ends at the higher version', async () => {
    const { enqueue, items, senderReads } = await rig();
    await enqueue(4, 1, T0);
    await Promise.all(Array.from({ length: 6 }, (_, i) => enqueue(4, i % 2 === 0 ? 7 : 9, at(1000 + i))));
    expect((await items(4)).map((item) => item?.version)).toEqual([9, 9, 9, 9]);
    expect(await senderReads(4)).toEqual([9, 9, 9, 9]);
  });

  it('a lower version rewrites no replica; its message is superseded', async () => {
    const { enqueue, items } = await rig();
    await enqueue(4, 9, T0);
    const before = await items(4);
    expect(await enqueue(4, 5, at(1000))).toBe('superseded');
    expect(await items(4)).toEqual(before);
  });

  it('N from 1 to 4 with an existing head: readers of missing replicas fall back, the next raise fills them', async () => {
    const { enqueue, items, senderReads, apiReads } = await rig();
    await enqueue(1, 2, T0);
    expect(await items(4)).toEqual([{ version: 2, replicas: 1 }, undefined, undefined, undefined]);

    // Deployed with 4: no replica but the first exists yet, and every reader still sees 2.
    expect(await senderReads(4)).toEqual([2, 2, 2, 2]);
    expect(await apiReads(4)).toEqual([2, 2, 2, 2]);
    // An enqueue at the head's version writes nothing; its message is scheduled (and checked at send).
    expect(await enqueue(4, 2, at(500))).toBe('scheduled');

    expect(await enqueue(4, 3, at(1000))).toBe('scheduled');
    expect(await items(4)).toEqual(Array.from({ length: 4 }, () => ({ version: 3, replicas: 4 })));
    expect(await senderReads(4)).toEqual([3, 3, 3, 3]);
  });

  it('N lowered from 4 to 1: the group keeps its 4, so a reader still on 4 never reads a stale replica', async () => {
    const { enqueue, items, senderReads } = await rig();
    await enqueue(4, 3, T0);
    expect(await enqueue(1, 4, at(1000))).toBe('scheduled');
    expect(await items(4)).toEqual(Array.from({ length: 4 }, () => ({ version: 4, replicas: 4 })));
    expect(await senderReads(4)).toEqual([4, 4, 4, 4]);
    expect(await senderReads(1)).toEqual([4]);
  });

  it('property: whatever N each raise and each reader has, every reader of every replica sees the highest raise', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ replicas: fc.integer({ min: 1, max: 5 }), rise: fc.integer({ min: 0, max: 2 }) }),
          {
            minLength: 1,
            maxLength: 5,
          },
        ),
        async (raises) => {
          const { enqueue, senderReads } = await rig();
          let version = 0;
          for (const [i, raise] of raises.entries()) {
            version += raise.rise;
            await enqueue(raise.replicas, version, at(i * 1000));
            for (const readers of [1, 3, 5]) {
              expect(await senderReads(readers)).toEqual(Array.from({ length: readers }, () => version));
            }
          }
        },
      ),
      { numRuns: 12 },
    );
  });

  it('PUT /v1/groups: raises every replica, and answers a lower version with the head as it is', async () => {
    const { apiStore, items, senderReads } = await rig();
    expect(await apiStore(3).raiseGroup({ tenant: TENANT, groupKey: GROUP, version: 5, now: T0 })).toEqual({
      version: 5,
      updated_at: T0.toISOString(),
    });
    expect(await items(3)).toEqual(Array.from({ length: 3 }, () => ({ version: 5, replicas: 3 })));
    expect(
      await apiStore(3).raiseGroup({ tenant: TENANT, groupKey: GROUP, version: 4, now: at(1000) }),
    ).toEqual({
      version: 5,
      updated_at: T0.toISOString(),
    });
    // Lowered to 1: the raise still writes the group's 3.
    await apiStore(1).raiseGroup({ tenant: TENANT, groupKey: GROUP, version: 6, now: at(2000) });
    expect(await senderReads(3)).toEqual([6, 6, 6]);
  });

  it('the public outbox raises every replica given the stack’s count, and without it never leaves one stale', async () => {
    const { outbox, items, senderReads } = await rig();
    await outbox(2, 3);
    expect(await items(3)).toEqual(Array.from({ length: 3 }, () => ({ version: 2, replicas: 3 })));
    // An outbox caller that does not pass the count: its raise of replica 0 alone is refused.
    await expect(outbox(3)).rejects.toBeInstanceOf(TransactionCanceledException);
    expect(await senderReads(3)).toEqual([2, 2, 2]);
  });
});
