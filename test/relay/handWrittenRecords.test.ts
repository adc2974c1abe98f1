/**
 * Outbox records written by hand (DESIGN §4, §5a "nothing stranded"): an application that bypasses
 * the helper, or changes what it built, may write a state record the relay cannot read — an
 * attribute missing, one of the wrong type. The relay must not fail the batch on it (that would hold
 * up the shard behind it), and an operator must be able to see it and find the message: counted
 * (UnreadableRecords) and logged with the message's id. A record that is only odd (a send_at in the
 * past) is relayed at once. Behind the local stream event source with the relay's own filter.
 */
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RELAY_METRIC } from '../../lambdas/core/metricNames.js';
import { buildOutboxWrite, type TransactWriteItem } from '../../lambdas/outbox/index.js';
import { createRelayHandler } from '../../lambdas/relay/createRelayHandler.js';
import { RELAY_STREAM_FILTER } from '../../lambdas/store/tableLayout.js';
import { startStreamRunner } from '../../local/runners/streamRunner.js';
import type { SchedulerEmulator } from '../../local/scheduler/startSchedulerEmulator.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { relayWorld, startScheduler, wholeSecondNow } from './relayParts.js';

let scheduler: SchedulerEmulator;
beforeAll(async () => {
  scheduler = await startScheduler();
});
afterAll(async () => {
  await scheduler.stop();
});

const documents = documentClient();

/** The helper's items for a message due now, its state record then changed by hand. */
function handWritten(
  tableName: string,
  now: Date,
  key: string,
  change: (item: Record<string, unknown>) => Record<string, unknown>,
): { id: string; items: TransactWriteItem[] } {
  const write = buildOutboxWrite({
    tableName,
    tenant: 'acme',
    idempotencyKey: key,
    now,
    body: { to: ['ada@example.org'], from: 'ops@example.com', subject: 'Hi', text: 'Hello.' },
    validation: { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 },
  });
  const [state, ...rest] = write.items;
  const item = change({ ...(state?.Put?.Item ?? {}) });
  return {
    id: write.messageId,
    items: [{ Put: { ...state?.Put, TableName: tableName, Item: item } }, ...rest],
  };
}

describe('state records written by hand', () => {
  it('an unreadable one is skipped, counted and logged with its id; the records behind it are relayed', async () => {
    const now = wholeSecondNow();
    const { tableName, streamArn } = await freshTable();
    const counted: string[] = [];
    const logged: { message: string; attributes: Record<string, unknown> }[] = [];
    const t = await relayWorld(scheduler, now, {
      metrics: { count: (name) => counted.push(name) },
      log: {
        info: () => {},
        warn: () => {},
        error: (message, attributes) => logged.push({ message, attributes }),
      },
    });
    const runner = startStreamRunner({
      dynamodbEndpoint: inject('dynamodbEndpoint'),
      streamArn,
      handler: createRelayHandler(t.deps),
      filter: RELAY_STREAM_FILTER,
      pollIntervalMs: 50,
    });
    try {
      const noRev = handWritten(tableName, now, 'no-rev', ({ rev: _, ...item }) => item);
      const textRev = handWritten(tableName, now, 'text-rev', (item) => ({ ...item, rev: '1' }));
      const past = handWritten(tableName, now, 'past', (item) => ({
        ...item,
        send_at: new Date(now.getTime() - 3_600_000).toISOString(),
      }));
      for (const { items } of [noRev, textRev, past])
        await documents.send(new TransactWriteCommand({ TransactItems: items }));
      await runner.idle();

      expect(t.queue.copies.map((copy) => copy.payload.id)).toEqual([past.id]);
      expect(counted).toEqual([RELAY_METRIC.unreadableRecords, RELAY_METRIC.unreadableRecords]);
      expect(logged.map((line) => [line.attributes.messageId, line.attributes.reason])).toEqual([
        [noRev.id, 'new image: image has no positive integer rev'],
        [textRev.id, 'new image: image has no positive integer rev'],
      ]);
    } finally {
      await runner.stop();
    }
  });
});
