import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { messagesDiscard } from '../../cli/messagesCommands.js';
import { memoryOutput } from '../../cli/output.js';
import type { DispatchQueue } from '../../lambdas/ports/DispatchQueue.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { createSweeperHandler } from '../../lambdas/sweeper/createSweeperHandler.js';
import { seconds, wholeSecondNow } from '../relay/relayParts.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { senderOutcomes } from './waitingMessages.js';

/**
 * DESIGN §2: `dead`, `failed` and `unknown` wait for an operator, and no TTL deletes them or their
 * bodies while they wait. The sender takes the body's TTL away in a second write after the state's;
 * a sender killed between the two leaves a body that still expires. The sweeper mends that.
 */
const noCopies: DispatchQueue = { enqueue: async () => ({ failed: [] }) };

async function setUp() {
  const t0 = wholeSecondNow();
  const { tableName } = await freshTable();
  const documents = documentClient();
  let clock = seconds(t0, 60);
  const sweepOnce = createSweeperHandler({
    dueIndex: new DynamoDueIndex(documents, tableName),
    records: new DynamoSweepRecords(documents, tableName),
    queue: noCopies,
    now: () => clock,
    graceSeconds: 300,
  });
  const bodyKey = (id: string) => ({ pk: messagePk(id), sk: 'BODY' });
  return {
    t0,
    sweepAt: (at: Date) => {
      clock = at;
      return sweepOnce();
    },
    endedAs: senderOutcomes(tableName, t0),
    /** What a sender killed between its two writes leaves: the body keeps a TTL. */
    async crashBeforeBodyWrite(id: string) {
      await documents.send(
        new UpdateCommand({
          TableName: tableName,
          Key: bodyKey(id),
          UpdateExpression: 'SET expires_at = :ttl',
          ExpressionAttributeValues: { ':ttl': Math.floor(t0.getTime() / 1000) + 3 * 86_400 },
        }),
      );
    },
    async bodyTtl(id: string) {
      const { Item } = await documents.send(new GetCommand({ TableName: tableName, Key: bodyKey(id) }));
      return Item?.expires_at as number | undefined;
    },
    cli: {
      documents,
      tableName,
      store: new DynamoApiStore(documents, tableName),
      now: () => seconds(t0, 30),
      tenants: async () => ['acme'],
      retentionDays: 30,
      messageIdDomain: 'mail.example.com',
    },
  };
}

describe('the sweeper holds the bodies of messages that wait for an operator', () => {
  it('removes a TTL a crash left on the body of a dead, unknown or failed message', async () => {
    const t = await setUp();
    const waiting = [await t.endedAs('dead'), await t.endedAs('unknown'), await t.endedAs('failed')];
    for (const message of waiting) await t.crashBeforeBodyWrite(message.id);

    const report = await t.sweepAt(seconds(t.t0, 120));

    expect(report.bodiesHeld).toBe(3);
    for (const message of waiting) expect(await t.bodyTtl(message.id)).toBeUndefined();
    // Nothing to do the next time.
    expect((await t.sweepAt(seconds(t.t0, 420))).bodiesHeld).toBe(0);
  });

  it('leaves the body of a message that stopped waiting: discarded, it expires with its record', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    await messagesDiscard(t.cli, [dead.id], memoryOutput());
    const discardedTtl = await t.bodyTtl(dead.id);
    expect(discardedTtl).toBeGreaterThan(0);

    const report = await t.sweepAt(seconds(t.t0, 120));

    expect(report.bodiesHeld).toBe(0);
    expect(await t.bodyTtl(dead.id)).toBe(discardedTtl);
  });

  it('leaves the bodies of sent messages alone', async () => {
    const t = await setUp();
    const sent = await t.endedAs('sent');
    const ttl = await t.bodyTtl(sent.id);

    expect((await t.sweepAt(seconds(t.t0, 120))).bodiesHeld).toBe(0);
    expect(await t.bodyTtl(sent.id)).toBe(ttl);
  });
});
