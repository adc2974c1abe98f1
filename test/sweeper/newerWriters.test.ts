import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { SWEEPER_METRIC } from '../../lambdas/core/metricNames.js';
import { RECORD_LAYOUT } from '../../lambdas/core/recordLayout.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { SWEEP_RESERVED_MS } from '../../lambdas/sweeper/sweep.js';
import { putMessage, readState } from '../sender/records.js';
import { sweepWorld } from './sweepWorld.js';

/**
 * Decision 0166: a stack older than the application's outbox helper refuses a record a newer writer
 * made, and the message waits, unsent, for the stack's upgrade; the upgraded sweeper then dispatches
 * it. A refused message is no lost one: the sweeper must not send a copy of it every run (the sender
 * refuses each, and the alarm went on and off with each), and the alarm stays on while it waits.
 */
const MINUTE = 60_000;

async function setLayout(
  w: Awaited<ReturnType<typeof sweepWorld>>,
  id: string,
  layout: number,
): Promise<void> {
  await w.documents.send(
    new UpdateCommand({
      TableName: w.tableName,
      Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState },
      UpdateExpression: 'SET #layout = :layout',
      ExpressionAttributeNames: { '#layout': 'layout' },
      ExpressionAttributeValues: { ':layout': layout },
    }),
  );
}

describe('a message a newer writer made, on an older stack', () => {
  it('is never re-dispatched nor stamped while it waits, the refused gauge is 1 every run, and after the upgrade the next run dispatches it', async () => {
    const w = await sweepWorld('sweep-newer');
    const t0 = Date.now();
    const newer = await putMessage(w.documents, w.tableName, new Date(t0), {
      sendAt: new Date(t0 - 180 * MINUTE),
    });
    await setLayout(w, newer.id, RECORD_LAYOUT + 1);
    const ours = await putMessage(w.documents, w.tableName, new Date(t0), {
      sendAt: new Date(t0 - 180 * MINUTE),
    });
    const before = await readState(w.documents, w.tableName, newer.id);

    // A sweep every 5 minutes for 20 minutes, not the hour of decision 0166 (31 s; decision 0263):
    // an unstamped record in the window is read by every run, so a copy each run shows at the second;
    // a stamped one fails the state check below, and its first re-dispatch (grace × 2, 10 minutes)
    // comes twice within the 20.
    const refused: number[] = [];
    for (let minutes = 0; minutes <= 20; minutes += 5) {
      const from = w.gauges.length;
      await w.run(new Date(t0 + minutes * MINUTE));
      refused.push(
        ...w.gauges
          .slice(from)
          .filter((gauge) => gauge.name === SWEEPER_METRIC.refusedRecords)
          .map((gauge) => gauge.value),
      );
    }

    expect(w.queue.of(ours.id)).toBeGreaterThan(0);
    expect(w.queue.of(newer.id)).toBe(0);
    expect(await readState(w.documents, w.tableName, newer.id)).toEqual(before);
    expect(refused).toEqual(Array.from({ length: 5 }, () => 1));

    // The stack is upgraded: the record is of a layout it knows.
    await setLayout(w, newer.id, RECORD_LAYOUT);
    const from = w.gauges.length;
    await w.run(new Date(t0 + 25 * MINUTE));

    expect(w.queue.of(newer.id)).toBe(1);
    expect(w.gauges.slice(from).filter((gauge) => gauge.name === SWEEPER_METRIC.refusedRecords)).toEqual([
      expect.objectContaining({ value: 0 }),
    ]);
  }, 120_000);

  it('keeps the alarm as it is when a run ran out of time before the shard that holds it: no gauge, then 1 once a run reads it', async () => {
    const w = await sweepWorld('sweep-newer-cut');
    const t0 = Date.now();
    const newer = await putMessage(w.documents, w.tableName, new Date(t0), {
      sendAt: new Date(t0 - 180 * MINUTE),
    });
    await setLayout(w, newer.id, RECORD_LAYOUT + 1);
    const refusedGauges = (from: number) =>
      w.gauges.slice(from).filter((gauge) => gauge.name === SWEEPER_METRIC.refusedRecords);

    // Only the reserve left: the run reads no shard, so it cannot know whether any refused record waits.
    const cut = await w.run(new Date(t0), { remainingMs: () => SWEEP_RESERVED_MS });

    expect(cut).toMatchObject({ examined: 0, outOfTime: true });
    expect(refusedGauges(0)).toEqual([]);

    const from = w.gauges.length;
    await w.run(new Date(t0 + 5 * MINUTE));
    expect(refusedGauges(from)).toEqual([expect.objectContaining({ value: 1 })]);
  }, 120_000);
});
