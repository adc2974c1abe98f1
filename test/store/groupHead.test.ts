import { type DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { enqueueMessage } from '../../lambdas/api/routes/enqueue.js';
import { parseEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { groupHeadStep } from '../../lambdas/store/groupHead.js';
import { groupHeadPk } from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY } from '../../lambdas/store/tableLayout.js';
import { validBody } from '../api/events.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/**
 * The group head (DESIGN §4 Freshness): it keeps the highest version seen, and an enqueue writes it
 * only when its version rises above it — one hot item per group, so an enqueue at the head's own
 * version, or below it, must not write it (docs/decisions/0097-group-head-written-when-it-rises.md).
 */

const TENANT = 'acme';
const T0 = new Date('2026-12-01T09:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

describe('groupHeadStep: what an enqueue does to its group head (pure)', () => {
  it('raises a head that is absent or lower, writes nothing at the same version, checks a higher one', () => {
    expect(groupHeadStep(null, 3)).toBe('raise');
    expect(groupHeadStep(2, 3)).toBe('raise');
    expect(groupHeadStep(3, 3)).toBe('none');
    expect(groupHeadStep(4, 3)).toBe('check-above');
  });

  it('raises or keeps when the caller did not read the head (the public outbox)', () => {
    expect(groupHeadStep(undefined, 3)).toBe('raise-or-keep');
  });

  it('property: the head is written only when the version may rise above it', () => {
    fc.assert(
      fc.property(fc.option(fc.nat(), { nil: null }), fc.nat(), (head, version) => {
        const step = groupHeadStep(head, version);
        const rises = head === null || version > head;
        expect(step === 'raise').toBe(rises);
        expect(step === 'none').toBe(head === version);
        expect(step === 'check-above').toBe(head !== null && head > version);
      }),
    );
  });
});

/** A document client that counts the transactions that wrote a group head (an Update on it). */
function countingHeadWrites(documents: DynamoDBDocumentClient): {
  documents: DynamoDBDocumentClient;
  headWrites: () => number;
} {
  let writes = 0;
  const counting = {
    send: async (command: unknown) => {
      const result = await documents.send(command as never);
      if (command instanceof TransactWriteCommand) {
        const items = command.input.TransactItems ?? [];
        writes += items.filter((item) => item.Update !== undefined).length;
      }
      return result;
    },
  } as unknown as DynamoDBDocumentClient;
  return { documents: counting, headWrites: () => writes };
}

async function rig() {
  const { tableName } = await freshTable('grouphead');
  const real = documentClient();
  const counted = countingHeadWrites(real);
  const store = new DynamoApiStore(counted.documents, tableName);
  let keys = 0;
  const enqueue = (version: number, now: Date, groupKey = 'order:1') => {
    const parsed = parseEnqueueRequest(validBody({ group: { key: groupKey, version } }), {
      allowedFrom: ['*@example.com'],
      defaultFrom: 'ops@example.com',
      maxHorizonDays: 400,
      now,
    });
    if (!parsed.ok) throw new Error(parsed.problem.detail);
    keys += 1;
    return enqueueMessage(
      { store, sleep: async () => {} },
      {
        tenant: TENANT,
        idempotencyKey: `head-${keys}`,
        request: parsed.value,
        now,
        random: Math.random,
        retentionDays: 30,
      },
    );
  };
  const head = async (groupKey = 'order:1') => {
    const { Item } = await real.send(
      new GetCommand({
        TableName: tableName,
        Key: { pk: groupHeadPk(TENANT, groupKey), sk: ITEM_SORT_KEY.groupHead },
        ConsistentRead: true,
      }),
    );
    return Item === undefined ? undefined : { version: Item.version, updated_at: Item.updated_at };
  };
  return { enqueue, head, headWrites: counted.headWrites };
}

function statusOf(outcome: Awaited<ReturnType<typeof enqueueMessage>>): string {
  if (outcome.kind !== 'created') throw new Error(`expected a new message, got ${outcome.kind}`);
  return outcome.state.status;
}

describe('the group head as enqueue writes it (DynamoDB Local)', () => {
  it('an enqueue at the head’s own version does not write the head; the message is scheduled', async () => {
    const { enqueue, head, headWrites } = await rig();
    expect(statusOf(await enqueue(5, T0))).toBe('scheduled');
    expect(await head()).toEqual({ version: 5, updated_at: T0.toISOString() });
    expect(headWrites()).toBe(1);

    expect(statusOf(await enqueue(5, at(1000)))).toBe('scheduled');

    expect(await head()).toEqual({ version: 5, updated_at: T0.toISOString() });
    expect(headWrites()).toBe(1);
  });

  it('an enqueue below the head does not rewrite it; the message is superseded at once', async () => {
    const { enqueue, head, headWrites } = await rig();
    await enqueue(5, T0);

    expect(statusOf(await enqueue(4, at(1000)))).toBe('superseded');

    expect(await head()).toEqual({ version: 5, updated_at: T0.toISOString() });
    expect(headWrites()).toBe(1);
  });

  it('an enqueue above the head raises it', async () => {
    const { enqueue, head } = await rig();
    await enqueue(5, T0);
    expect(statusOf(await enqueue(6, at(1000)))).toBe('scheduled');
    expect(await head()).toEqual({ version: 6, updated_at: at(1000).toISOString() });
  });

  it('two raisers at once: the head ends at the higher version and never goes back', async () => {
    const { enqueue, head } = await rig();
    await enqueue(5, T0);

    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => enqueue(i % 2 === 0 ? 6 : 7, at(1000 + i))),
    );

    expect(await head()).toMatchObject({ version: 7 });
    const sevens = outcomes.filter((_, i) => i % 2 === 1).map(statusOf);
    expect(sevens).toEqual(['scheduled', 'scheduled', 'scheduled', 'scheduled']);
    // A six is scheduled when it was written before the head passed it, superseded after: either
    // way the sender's check (DESIGN §4) supersedes it before it could go out.
    for (const six of outcomes.filter((_, i) => i % 2 === 0)) {
      expect(['scheduled', 'superseded']).toContain(statusOf(six));
    }
  });

  it('ten raisers to the same version at once write the head once', async () => {
    const { enqueue, head, headWrites } = await rig();
    await enqueue(5, T0);
    const before = headWrites();

    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => enqueue(8, at(1000 + i))));

    expect(outcomes.map(statusOf)).toEqual(Array.from({ length: 10 }, () => 'scheduled'));
    expect(await head()).toMatchObject({ version: 8 });
    expect(headWrites() - before).toBe(1);
  });
});
