/**
 * Outbox records written by hand (DESIGN §4, §5a "nothing stranded"): an application that bypasses
 * the helper, or changes what it built, may write a state record the relay cannot read — an
 * attribute missing, one of the wrong type. The relay must not fail the batch on it (that would hold
 * up the shard behind it), and an operator must be able to see it and find the message: counted
 * (UnreadableRecords) and logged with the message's id. A record that is only odd (a send_at in the
 * past) is relayed at once. Behind the local stream event source with the relay's own filter.
 */
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RELAY_METRIC } from '../../lambdas/core/metricNames.js';
import type { SchedulerEmulator } from '../../local/scheduler/startSchedulerEmulator.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { helperItems } from './records.js';
import { relayRunner, relayWatch, relayWorld, startScheduler, wholeSecondNow } from './relayParts.js';

let scheduler: SchedulerEmulator;
beforeAll(async () => {
  scheduler = await startScheduler();
});
afterAll(async () => {
  await scheduler.stop();
});

const documents = documentClient();

describe('state records written by hand', () => {
  it('an unreadable one is skipped, counted and logged with its id; the records behind it are relayed', async () => {
    const now = wholeSecondNow();
    const { tableName, streamArn } = await freshTable();
    const { counted, logged, deps } = relayWatch();
    const t = await relayWorld(scheduler, now, deps);
    const runner = relayRunner(streamArn, t.deps);
    try {
      const noRev = helperItems(tableName, now, 'no-rev', ({ rev: _, ...item }) => item);
      const textRev = helperItems(tableName, now, 'text-rev', (item) => ({ ...item, rev: '1' }));
      const past = helperItems(tableName, now, 'past', (item) => ({
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
