import { describe, expect, it } from 'vitest';
import type { MessageStatus } from '../../lambdas/core/messageStatus.js';
import type { SweeperMetricName } from '../../lambdas/core/metricNames.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import type { DispatchQueue } from '../../lambdas/ports/DispatchQueue.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { createSweeperHandler, isIncomplete } from '../../lambdas/sweeper/createSweeperHandler.js';
import { seconds, wholeSecondNow } from '../relay/relayParts.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { senderOutcomes } from './waitingMessages.js';

/**
 * Issue 15 §5: the `unknown` and `dead` alarms stay in alarm while such messages exist. The sweeper
 * publishes, every run, how many messages wait for an operator per status — counted from where the
 * product's own transitions put them — and a count it could not read is not published at all (a
 * partial count would let an alarm clear).
 */
const noCopies: DispatchQueue = { enqueue: async () => ({ failed: [] }) };

async function setUp() {
  const t0 = wholeSecondNow();
  const { tableName } = await freshTable();
  const published: { name: SweeperMetricName; value: number }[] = [];
  const documents = documentClient();
  const sweepOnce = (dueIndexTable = tableName) =>
    createSweeperHandler({
      dueIndex: new DynamoDueIndex(documents, dueIndexTable),
      records: new DynamoSweepRecords(documents, tableName),
      queue: noCopies,
      now: () => seconds(t0, 10),
      graceSeconds: 300,
      metrics: { count: (name, value) => published.push({ name, value }) },
    })();
  const endedAs = senderOutcomes(tableName, t0);
  const gauge = (status: MessageStatus) =>
    published.filter(
      (metric) => metric.name === `Waiting${status.charAt(0).toUpperCase()}${status.slice(1)}`,
    );
  return {
    t0,
    tableName,
    published,
    sweepOnce,
    endedAs,
    gauge,
    api: new DynamoApiStore(documents, tableName),
  };
}

describe('the gauge of messages waiting for an operator', () => {
  it('publishes 0 for every waiting status when none exists, so a firing alarm clears', async () => {
    const t = await setUp();
    const report = await t.sweepOnce();
    expect(report.waiting.counts).toEqual({ failed: 0, dead: 0, unknown: 0 });
    expect(t.published).toEqual(
      expect.arrayContaining([
        { name: 'WaitingFailed', value: 0 },
        { name: 'WaitingDead', value: 0 },
        { name: 'WaitingUnknown', value: 0 },
      ]),
    );
  });

  it('counts the messages the sender left failed, dead or unknown, run after run, and not the sent ones', async () => {
    const t = await setUp();
    await t.endedAs('dead');
    await t.endedAs('dead');
    await t.endedAs('unknown');
    await t.endedAs('failed');
    await t.endedAs('sent');

    const first = await t.sweepOnce();
    const second = await t.sweepOnce();

    for (const report of [first, second]) {
      expect(report.waiting.counts).toEqual({ failed: 1, dead: 2, unknown: 1 });
    }
    // Still there on the second run: the alarm does not clear after one period.
    expect(t.gauge('dead').map((metric) => metric.value)).toEqual([2, 2]);
    expect(t.gauge('unknown').map((metric) => metric.value)).toEqual([1, 1]);
  });

  it('never counts a test message (DESIGN §14): a test key’s dead, unknown or failed one moves no live alarm', async () => {
    const t = await setUp();
    const testSide = testSideOf('acme');
    await t.endedAs('dead', { tenant: testSide });
    await t.endedAs('unknown', { tenant: testSide });
    await t.endedAs('failed', { tenant: testSide });
    await t.endedAs('dead');

    expect((await t.sweepOnce()).waiting.counts).toEqual({ failed: 0, dead: 1, unknown: 0 });
  });

  it('drops a message from the count once an operator retries it', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    await t.endedAs('unknown');

    const retried = await t.api.retry({
      tenant: dead.tenant,
      id: dead.id,
      now: seconds(t.t0, 5),
      maxAttempts: 8,
    });
    expect(retried.kind).toBe('updated');

    expect((await t.sweepOnce()).waiting.counts).toEqual({ failed: 0, dead: 0, unknown: 1 });
  });

  it('publishes no count it could not read, and calls the run incomplete', async () => {
    const t = await setUp();
    await t.endedAs('dead');

    const report = await t.sweepOnce('no-such-table');

    expect(report.waiting.counts).toEqual({});
    expect(report.waiting.errors.map((failure) => failure.status).sort()).toEqual([
      'dead',
      'failed',
      'unknown',
    ]);
    expect(t.published.filter((metric) => metric.name.startsWith('Waiting'))).toEqual([]);
    expect(isIncomplete(report)).toBe(true);
  });
});
