import { DeleteCommand, type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { NEVER_OPENED, NOT_PAUSED, opened } from '../../lambdas/core/relayBreaker.js';
import { DEFAULT_RELAY } from '../../lambdas/core/relays.js';
import { DynamoSendingGate, SENDING_GATE_KEY, SendingGateItems } from '../../lambdas/store/sendingGate.js';
import { KEY } from '../../lambdas/store/tableLayout.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/**
 * DESIGN §4 (no hot partitions) and §15: the items under `GATE#sending` — the pauses and the relay
 * `default`'s breaker on `GATE`, every other relay's breaker on `RELAY#{name}` — are read by a
 * sender's relays' gates together, in one consistent Query of the key, shared for a period
 * (store/sendingGate.ts `SendingGateItems`). What each gate sees must be what it would read alone,
 * and the key must take one read a period however many gates ask. DynamoDB Local's table; the
 * requests are counted on the client, above the wire.
 */

const RELAYS = [DEFAULT_RELAY, 'primary', 'backup'] as const;
const SETTINGS = { probeIntervalMs: 1000, probeTimeoutMs: 3000 };

let tableName: string;

beforeAll(async () => {
  ({ tableName } = await freshTable('gate-items'));
});

/** A document client that counts the commands it sends, by name. */
function countingClient(): { documents: DynamoDBDocumentClient; sent: Map<string, number> } {
  const documents = documentClient();
  const sent = new Map<string, number>();
  documents.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? '';
      sent.set(name, (sent.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'countCommands' },
  );
  return { documents, sent };
}

async function clearGate(documents: DynamoDBDocumentClient): Promise<void> {
  const { Items = [] } = await documents.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': KEY.partition },
      ExpressionAttributeValues: { ':pk': SENDING_GATE_KEY[KEY.partition] },
      ConsistentRead: true,
    }),
  );
  for (const item of Items) {
    await documents.send(
      new DeleteCommand({
        TableName: tableName,
        Key: { [KEY.partition]: item[KEY.partition], [KEY.sort]: item[KEY.sort] },
      }),
    );
  }
}

describe("a sender's relays read the gate's items together", () => {
  it('each gate sees from the shared read what it reads alone: its breaker, its drain, the pauses', async () => {
    const documents = documentClient();
    const relayState = fc.record({ open: fc.boolean(), disabled: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.tuple(relayState, relayState, relayState), fc.boolean(), async (states, paused) => {
        await clearGate(documents);
        const at = new Date('2026-12-01T10:00:00.000Z');
        for (const [n, relay] of RELAYS.entries()) {
          const gate = new DynamoSendingGate(documents, tableName, relay);
          const state = states[n];
          if (state?.open) {
            const open = opened(NEVER_OPENED, { reason: `421: ${relay} down` }, at, SETTINGS, `${n + 1}`);
            if (open === undefined) throw new Error('a closed breaker opens');
            expect(await gate.writeBreaker(NEVER_OPENED, open)).toBe('written');
          }
          if (state?.disabled) await gate.setDisabled({ reason: `drain ${relay}`, at: at.toISOString() });
        }
        if (paused) {
          const pause = { version: 1, kinds: { marketing: { reason: 'campaign', at: at.toISOString() } } };
          expect(await new DynamoSendingGate(documents, tableName).writePause(NOT_PAUSED, pause)).toBe(
            'written',
          );
        }
        const items = new SendingGateItems(documents, tableName);
        for (const relay of RELAYS) {
          const alone = await new DynamoSendingGate(documents, tableName, relay).read();
          const shared = new DynamoSendingGate(documents, tableName, relay, items);
          expect((await shared.readRecent(1000)).gate).toEqual(alone);
          expect(await shared.read()).toEqual(alone);
        }
      }),
      { numRuns: 12 },
    );
  });

  it('the key takes one Query a period, whatever how many gates ask; a fresh read always goes to the table', async () => {
    await clearGate(documentClient());
    const { documents, sent } = countingClient();
    let clock = 1_000_000;
    const items = new SendingGateItems(documents, tableName, () => clock);
    const gates = RELAYS.map((relay) => new DynamoSendingGate(documents, tableName, relay, items));

    // The gates that ask together share one read; later ones in the period reuse it, with its age.
    await Promise.all(gates.map((gate) => gate.readRecent(1000)));
    expect(Object.fromEntries(sent)).toEqual({ QueryCommand: 1 });
    clock += 999;
    const reused = await Promise.all(gates.map((gate) => gate.readRecent(1000)));
    expect(reused.map(({ ageMs }) => ageMs)).toEqual([999, 999, 999]);
    expect(Object.fromEntries(sent)).toEqual({ QueryCommand: 1 });

    // A second old: read again, once.
    clock += 1;
    const again = await Promise.all(gates.map((gate) => gate.readRecent(1000)));
    expect(again.map(({ ageMs }) => ageMs)).toEqual([0, 0, 0]);
    expect(Object.fromEntries(sent)).toEqual({ QueryCommand: 2 });

    // A transition's read is fresh (it decides on the version it reads), and refreshes the shared one.
    const primary = gates[1];
    if (primary === undefined) throw new Error('three gates');
    const open = opened(NEVER_OPENED, { reason: '421: down' }, new Date(), SETTINGS, '7');
    if (open === undefined) throw new Error('a closed breaker opens');
    expect(await primary.writeBreaker(NEVER_OPENED, open)).toBe('written');
    clock += 10;
    expect((await primary.read()).breaker).toEqual(open);
    expect((await primary.readRecent(1000)).gate.breaker).toEqual(open);
    expect(Object.fromEntries(sent)).toEqual({ QueryCommand: 3, UpdateItemCommand: 1 });
  });
});
