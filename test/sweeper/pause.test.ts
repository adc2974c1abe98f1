import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { type PauseCommand, pauseAfter } from '../../lambdas/core/relayBreaker.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { dueShardPk, shardOf } from '../../lambdas/store/messageRecord.js';
import { SWEEP_CURSORS_KEY } from '../../lambdas/store/sweepCursors.js';
import { INDEX_SHARDS } from '../../lambdas/store/tableLayout.js';
import { isIncomplete, SweepIncompleteError } from '../../lambdas/sweeper/createSweeperHandler.js';
import { OutboxWriter, stateRecord } from '../relay/records.js';
import { putMessage } from '../sender/records.js';
import { sweepWorld } from './sweepWorld.js';

/**
 * DESIGN §5 and §5a: an operator's pause holds copies the way an open breaker does, so the sweeper
 * must not take a paused message for a lost one — a copy of it would only be handed back again. It
 * skips messages whose `tags.kind` is paused (or everything, but the kinds resumed since), and sweeps
 * them again once they are resumed.
 */
const MINUTE = 60_000;

async function world() {
  const { tableName, documents, gate, queue, run } = await sweepWorld('sweep-pause');
  const operator = async (command: PauseCommand) => {
    const { pause } = await gate.read();
    expect(await gate.writePause(pause, pauseAfter(pause, command, new Date()))).toBe('written');
  };
  const message = (kind: string | undefined, sendAt: Date, tenant?: string) =>
    putMessage(documents, tableName, sendAt, {
      tags: kind === undefined ? {} : { kind },
      ...(tenant ? { tenant } : {}),
    });
  return { queue, run, operator, message };
}

describe('the sweeper and the operator pause', () => {
  it('re-dispatches nothing of a paused kind over a 4-hour pause, other kinds as before, and the paused kind after resume', async () => {
    const w = await world();
    const t0 = new Date(Date.now() - 10 * MINUTE);
    const digest = await w.message('digest', t0);
    const invoice = await w.message('invoice', t0);
    // A test message of the paused kind: no pause holds its copies (DESIGN §14), so none holds its rescue.
    const testDigest = await w.message('digest', t0, testSideOf('acme'));
    await w.operator({ action: 'pause', kind: 'digest', reason: 'rollout' });

    // A sweep every hour of the pause: each one past the grace and the sweeper's longest backoff
    // (SWEEP_MAX_INTERVAL_SECONDS), so every run re-dispatches what no pause holds. A pause has no
    // clock of its own (core/relayBreaker.ts `isPaused`): hourly runs cover the 4 hours as well as
    // runs every 20 minutes did (decision 0275).
    for (let minutes = 0; minutes <= 240; minutes += 60) {
      await w.run(new Date(Date.now() + minutes * MINUTE));
    }
    expect(w.queue.of(digest.id)).toBe(0);
    expect(w.queue.of(invoice.id)).toBeGreaterThan(0);
    expect(w.queue.of(testDigest.id)).toBeGreaterThan(0);

    await w.operator({ action: 'resume', kind: 'digest' });
    await w.run(new Date(Date.now() + 260 * MINUTE));
    expect(w.queue.of(digest.id)).toBe(1);
  }, 120_000);

  it('with everything paused it skips every kind but those resumed since, and messages without a kind', async () => {
    const w = await world();
    const t0 = new Date(Date.now() - 10 * MINUTE);
    const digest = await w.message('digest', t0);
    const invoice = await w.message('invoice', t0);
    const plain = await w.message(undefined, t0);
    await w.operator({ action: 'pause', reason: 'incident' });
    await w.operator({ action: 'resume', kind: 'invoice' });

    const report = await w.run(new Date());
    expect(w.queue.of(digest.id)).toBe(0);
    expect(w.queue.of(plain.id)).toBe(0);
    expect(w.queue.of(invoice.id)).toBe(1);
    expect(report.redispatched).toBe(1);
  }, 60_000);
});

/**
 * DESIGN §5a: the sweeper "finds non-terminal messages whose time has passed but that are not
 * moving". A paused backlog is skipped without a write (its `due_at` stays), so it must not fill a
 * shard's window on every run and hide a lost message behind it; and a run that could not read a
 * shard to its end says so (an incomplete run: the function's Errors, the SweeperErrors alarm).
 */
describe('the sweeper behind a paused backlog', () => {
  /**
   * Messages in one shard of the `due` index (`shard`, or the first one drawn), each of the kind
   * given: overdue, oldest first, or due at `sendAts`.
   */
  async function inOneShard(
    w: Awaited<ReturnType<typeof sweepWorld>>,
    kinds: readonly string[],
    options: {
      readonly tenants?: readonly (string | undefined)[];
      readonly sendAts?: readonly Date[];
      readonly shard?: number;
    } = {},
  ) {
    const outbox = new OutboxWriter(w.tableName);
    const t0 = new Date(Date.now() - 60 * MINUTE);
    let shard = options.shard;
    const ids: string[] = [];
    while (ids.length < kinds.length) {
      const tenant = options.tenants?.[ids.length];
      const record = stateRecord({
        sendAt: options.sendAts?.[ids.length] ?? new Date(t0.getTime() + ids.length * 1000),
        createdAt: t0,
        ...(tenant ? { tenant } : {}),
      });
      const at = shardOf(record.id, INDEX_SHARDS.due);
      shard ??= at;
      if (at !== shard) continue;
      await outbox.put({ ...record, tags: { kind: kinds[ids.length] ?? 'none' } });
      ids.push(record.id);
    }
    return { shard: shard ?? 0, ids };
  }

  async function pausedWorld() {
    const w = await sweepWorld('sweep-behind');
    const { pause } = await w.gate.read();
    const paused = pauseAfter(pause, { action: 'pause', kind: 'digest', reason: 'rollout' }, new Date());
    expect(await w.gate.writePause(pause, paused)).toBe('written');
    return w;
  }

  it('re-dispatches a lost message behind more paused entries than a run re-dispatches, in the same run', async () => {
    const w = await pausedWorld();
    const { ids } = await inOneShard(w, ['digest', 'digest', 'digest', 'invoice']);
    const invoice = ids[3] ?? '';

    const report = await w.run(new Date(), { maxPerShard: 2, pageSize: 1 });

    expect(w.queue.of(invoice)).toBe(1);
    expect(report).toMatchObject({ paused: 3, redispatched: 1, truncatedShards: [] });
    expect(isIncomplete(report)).toBe(false);
  }, 60_000);

  it('says which shard it could not read to the end within its read budget, and the run is incomplete', async () => {
    const w = await pausedWorld();
    const { shard, ids } = await inOneShard(w, ['digest', 'digest', 'digest', 'digest', 'invoice']);

    const report = await w.run(new Date(), { maxReadsPerShard: 3, pageSize: 1 });

    expect(w.queue.of(ids[4] ?? '')).toBe(0);
    expect(report).toMatchObject({ examined: 3, paused: 3, truncatedShards: [shard] });
    expect(isIncomplete(report)).toBe(true);
    expect(new SweepIncompleteError(report).message).toContain('1 shard(s) not read to the end');
  }, 60_000);

  it('reaches a lost message behind a paused backlog larger than a run reads on the next run, and the backlog on the runs after (no starvation)', async () => {
    const w = await pausedWorld();
    const { shard, ids } = await inOneShard(w, ['digest', 'digest', 'digest', 'digest', 'invoice']);
    const invoice = ids[4] ?? '';
    // What the sweeper function keeps from one run to the next (createSweeperHandler.ts).
    const resumeFrom = new Map();
    const bounds = { maxReadsPerShard: 3, pageSize: 1, resumeFrom };

    const first = await w.run(new Date(), bounds);
    expect(first).toMatchObject({ examined: 3, paused: 3, truncatedShards: [shard] });
    expect(w.queue.of(invoice)).toBe(0);

    // The next run goes on where the first stopped, then from the shard's start.
    const second = await w.run(new Date(), bounds);
    expect(w.queue.of(invoice)).toBe(1);
    expect(second).toMatchObject({ examined: 3, paused: 2, redispatched: 1 });

    // Resumed, every digest is re-dispatched within the runs it takes to read the shard once.
    const { pause } = await w.gate.read();
    expect(await w.gate.writePause(pause, pauseAfter(pause, { action: 'resume' }, new Date()))).toBe(
      'written',
    );
    for (let run = 0; run < 2; run++) await w.run(new Date(), bounds);
    expect(ids.map((id) => w.queue.of(id))).toEqual([1, 1, 1, 1, 1]);
  }, 60_000);

  it('reaches a lost message behind a paused backlog larger than a run reads though every run is a cold start, and a one-off sweep between them moves nothing', async () => {
    const w = await pausedWorld();
    const backlog = ['digest', 'digest', 'digest', 'digest', 'digest', 'digest', 'digest'];
    const { shard, ids } = await inOneShard(w, [...backlog, 'invoice']);
    const invoice = ids[backlog.length] ?? '';
    const bounds = { maxReadsPerShard: 3, pageSize: 1 };

    // ⌈7 / 3⌉ = 3 runs, each in an environment of its own (nothing remembered in memory), each
    // followed by a one-off sweep (the CLI's redrive, which keeps no place in the shards).
    const runs = Math.ceil(backlog.length / bounds.maxReadsPerShard);
    for (let run = 0; run < runs && w.queue.of(invoice) === 0; run++) {
      const report = await w.coldStart(new Date(), bounds)();
      expect(report).toMatchObject({ examined: 3, truncatedShards: [shard] });
      expect(await w.run(new Date(), bounds)).toMatchObject({ examined: 3, paused: 3 });
    }
    expect(w.queue.of(invoice)).toBe(1);
    expect(ids.slice(0, backlog.length).map((id) => w.queue.of(id))).toEqual(backlog.map(() => 0));
  }, 60_000);

  it('reads its cursors once an environment and writes them only when a run moved them', async () => {
    const w = await sweepWorld('sweep-cursor-writes');
    const { ids } = await inOneShard(w, ['invoice']);
    const sweeper = w.coldStart(new Date());
    await sweeper();
    await sweeper();
    await w.coldStart(new Date())();
    expect(w.queue.of(ids[0] ?? '')).toBe(1);
    // Every shard read to its end: nothing to keep, nothing written.
    expect(w.cursorCalls).toEqual({ reads: 2, writes: 0 });
  }, 60_000);

  it('reads a shard from its start when the cursor kept for it is not one of its keys', async () => {
    const w = await sweepWorld('sweep-cursor-shape');
    const { shard, ids } = await inOneShard(w, ['invoice']);
    const past = new Date(Date.now() - 90 * MINUTE).toISOString();
    const elsewhere = { pk: 'MSG#elsewhere', sk: 'STATE', due_pk: dueShardPk(shard + 1), due_at: past };
    await w.documents.send(
      new PutCommand({
        TableName: w.tableName,
        Item: { ...SWEEP_CURSORS_KEY, cursors: { [shard]: elsewhere, [shard + 1]: { due_at: 5 } } },
      }),
    );

    const report = await w.coldStart(new Date())();
    expect(report).toMatchObject({ shardErrors: [], redispatched: 1 });
    expect(w.queue.of(ids[0] ?? '')).toBe(1);
  }, 60_000);

  it('goes on past a cursor that a run told `queueEmptiedAt` left beyond the next window (the shard is read, not failed)', async () => {
    const w = await sweepWorld('sweep-window');
    const now = new Date();
    // A lost message, then two due within the grace: a run told the queue was emptied reads those too,
    // and puts back the copy of the one it reads, delayed to its time (written before: decision 0264).
    const at = (minutes: number) => new Date(now.getTime() + minutes * MINUTE);
    const { shard } = await inOneShard(w, ['invoice', 'invoice', 'invoice'], {
      sendAts: [at(-60), at(1), at(2)],
    });
    const sweeper = w.coldStart(now, { maxReadsPerShard: 2, pageSize: 1 });
    const emptied = await sweeper(undefined, { queueEmptiedAt: now });
    expect(emptied).toMatchObject({ examined: 2, redispatched: 2, truncatedShards: [shard] });

    // Lost since, in the same shard: the next run (and the next cold start) reads the shard and finds it.
    const { ids } = await inOneShard(w, ['invoice'], { sendAts: [at(-30)], shard });
    const next = await sweeper();
    expect(next).toMatchObject({ shardErrors: [], redispatched: 1 });
    expect(w.queue.of(ids[0] ?? '')).toBe(1);
    expect(await w.coldStart(now, { maxReadsPerShard: 2, pageSize: 1 })()).toMatchObject({
      shardErrors: [],
    });
  }, 60_000);

  it('with every kind paused it re-dispatches only test messages, and a held backlog past its read budget is no incomplete run', async () => {
    const w = await sweepWorld('sweep-all-paused');
    const { pause } = await w.gate.read();
    const all = pauseAfter(pause, { action: 'pause', reason: 'incident' }, new Date());
    expect(await w.gate.writePause(pause, all)).toBe('written');
    const { shard, ids } = await inOneShard(w, ['digest', 'invoice', 'digest'], {
      tenants: [undefined, testSideOf('acme')],
    });

    const found = await w.run(new Date());
    expect(ids.map((id) => w.queue.of(id))).toEqual([0, 1, 0]);
    expect(found).toMatchObject({ paused: 2, redispatched: 1, truncatedShards: [] });

    // The held live backlog fills the read budget: the run says so, and no alarm fires for it.
    const cut = await w.run(new Date(), { maxReadsPerShard: 2, pageSize: 1 });
    expect(cut).toMatchObject({ held: 'paused', truncatedShards: [shard] });
    expect(isIncomplete(cut)).toBe(false);
  }, 60_000);
});
