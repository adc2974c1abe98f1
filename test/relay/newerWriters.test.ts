/**
 * A stack older than the application's outbox helper (DESIGN §4; decision 0166): the helper writes
 * the layout of its records on every state record, and a relay that meets a layout newer than its
 * own, or a status it does not know, refuses it — no copy, no schedule — and counts it (metric) and
 * logs it, so an operator sees that the stack must be upgraded, instead of the record being dropped
 * in silence. Behind the local stream event source with the relay's own filter, the records written
 * by the outbox helper's transaction as a newer helper would write them.
 */
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RELAY_METRIC } from '../../lambdas/core/metricNames.js';
import { RECORD_LAYOUT } from '../../lambdas/core/recordLayout.js';
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

describe('records of a newer writer, on an older stack', () => {
  it("are refused by the relay, counted and logged, never dispatched; the stack's own are relayed", async () => {
    const now = wholeSecondNow();
    const { tableName, streamArn } = await freshTable();
    const { counted, logged, deps } = relayWatch();
    const t = await relayWorld(scheduler, now, deps);
    const runner = relayRunner(streamArn, t.deps);
    try {
      const newer = helperItems(tableName, now, 'newer-layout', (item) => ({
        ...item,
        layout: RECORD_LAYOUT + 1,
      }));
      const unknownStatus = helperItems(tableName, now, 'unknown-status', (item) => ({
        ...item,
        status: 'held',
      }));
      const current = helperItems(tableName, now, 'current');
      for (const { items } of [newer, unknownStatus, current])
        await documents.send(new TransactWriteCommand({ TransactItems: items }));
      await runner.idle();

      expect(t.queue.copies.map((copy) => copy.payload.id)).toEqual([current.id]);
      expect(await t.scheduleNames()).toEqual([]);
      expect(counted).toEqual([RELAY_METRIC.newerWriterRefusals, RELAY_METRIC.newerWriterRefusals]);
      expect(logged.map((line) => [line.attributes.messageId, line.attributes.reason])).toEqual([
        [newer.id, `layout ${RECORD_LAYOUT + 1} is newer than this stack's ${RECORD_LAYOUT}`],
        [unknownStatus.id, 'status "held" is not one this stack knows'],
      ]);
      expect(logged.every((line) => /upgrade the stack/.test(line.message))).toBe(true);
    } finally {
      await runner.stop();
    }
  });

  it('the helper writes the layout on the state record it builds, as the api does', () => {
    const now = wholeSecondNow();
    const { items } = helperItems('outbox', now, 'plain');
    expect(items[0]?.Put?.Item).toMatchObject({ layout: RECORD_LAYOUT });
  });
});
