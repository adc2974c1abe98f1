/**
 * DESIGN §5a, as the operator whose mail must not be stranded sees it: each kind of message stranded
 * on purpose (no copy anywhere) is found by the real sweeper, re-dispatched with its current rev, and
 * taken by the real sender to the end DESIGN gives it — sent once, held (a pause, quiet hours, §16),
 * or expired (`not_after`, §5) — and the sweeper never makes a second send: beside a copy in flight,
 * beside a second sweep, beside a sender's claim and send. Covers sweeper/sweep.ts with the sender
 * (sender/processCopy.ts) on DynamoDB Local, the SQS emulator and a real smtp-server; one clock, the
 * test's, for both. Decision 0257.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodemailerRelayProbe } from '../../lambdas/adapters/NodemailerRelayProbe.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import { pauseAfter } from '../../lambdas/core/relayBreaker.js';
import type { SweptRecord } from '../../lambdas/core/sweepDecision.js';
import type { SweepRecords } from '../../lambdas/ports/SweepRecords.js';
import { RelayGate } from '../../lambdas/sender/relayGate.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { type MessageStateRecord, messagePk } from '../../lambdas/store/messageRecord.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { type SweepDeps, sweep } from '../../lambdas/sweeper/sweep.js';
import {
  createSenderRig,
  FAST_SMTP_TIMEOUTS,
  RecordingLog,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
} from '../sender/senderHarness.js';
import { SWEEP_GATE_SETTINGS } from './sweepWorld.js';

const MINUTE = 60_000;
const GRACE_SECONDS = 300;
/** 21:30 UTC, inside a 21:00–22:00 UTC window. */
const IN_THE_WINDOW = Date.UTC(2026, 11, 3, 21, 30);
const WINDOW_END = Date.UTC(2026, 11, 3, 22, 0);
const QUIET = { timeZone: 'UTC', quietHours: { start: '21:00', end: '22:00' } };

let world: SenderWorld;
beforeAll(async () => {
  world = await startSenderWorld();
  world.smtp.script();
});
afterAll(async () => {
  await world.close();
});

/**
 * A sender rig and the real sweeper on its table and send queue, both on the rig's clock; the sender
 * reads the same sending gate (the operator's pauses) as the sweeper, uncached.
 */
async function strandWorld(options: { records?: (inner: SweepRecords) => SweepRecords } = {}) {
  const rig = await createSenderRig(world);
  rig.clock.ms = IN_THE_WINDOW;
  const log = new RecordingLog();
  const counted: { name: string; value: number }[] = [];
  const copies: { id: string; rev: number }[] = [];
  const delays = new Map<string, number[]>();
  const gate = new DynamoSendingGate(world.documents, world.tableName);
  const sender = rig.newHandler({
    relayGate: new RelayGate({
      store: gate,
      probe: new NodemailerRelayProbe({
        host: world.smtp.host,
        port: world.smtp.port,
        secure: false,
        requireTls: false,
        credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
        timeouts: FAST_SMTP_TIMEOUTS,
      }),
      queue: rig.queue,
      settings: SWEEP_GATE_SETTINGS,
      now: rig.clock.now,
      random: Math.random,
      cacheMs: 0,
      log: rig.log,
      metrics: rig.metrics,
    }),
  });
  const records = new DynamoSweepRecords(world.documents, world.tableName);
  const deps = (): SweepDeps => ({
    dueIndex: new DynamoDueIndex(world.documents, world.tableName),
    records: options.records === undefined ? records : options.records(records),
    queue: {
      enqueue: (queued) => {
        copies.push(...queued.map((copy) => copy.payload));
        for (const copy of queued)
          delays.set(copy.payload.id, [...(delays.get(copy.payload.id) ?? []), copy.delaySeconds]);
        return rig.queue.enqueue(queued);
      },
    },
    now: rig.clock.now,
    graceSeconds: GRACE_SECONDS,
    gate: { store: gate, settings: SWEEP_GATE_SETTINGS },
    log,
    metrics: { count: (name, value) => void counted.push({ name, value }) },
  });
  /** The sender takes every copy on the queue until none is left. */
  const drain = async () => {
    for (let records = await rig.receive(); records.length > 0; records = await rig.receive()) {
      await rig.run(records, sender);
    }
  };
  const sweepCopies = (id: string) => copies.filter((copy) => copy.id === id);
  /** A run told the send queue was emptied at `queueEmptiedAt` (the local stack's restart, decision 0264). */
  const sweepTold = (queueEmptiedAt: Date) => sweep({ ...deps(), queueEmptiedAt });
  const sweepDelays = (id: string) => delays.get(id) ?? [];
  return {
    rig,
    log,
    counted,
    gate,
    sweepOnce: () => sweep(deps()),
    sweepTold,
    drain,
    sweepCopies,
    sweepDelays,
  };
}

type Strand = Awaited<ReturnType<typeof strandWorld>>;

/** The operator pauses one kind. */
async function pauseKind(w: Strand, kind: string): Promise<void> {
  const { pause } = await w.gate.read();
  const paused = pauseAfter(pause, { action: 'pause', kind, reason: 'rollout' }, w.rig.clock.now());
  expect(await w.gate.writePause(pause, paused)).toBe('written');
}

/** A message whose copy is gone (a lost schedule, a purge), put straight into the table. */
function stranded(w: Strand, fixture: Parameters<SenderRig['putMessage']>[0]): Promise<MessageStateRecord> {
  return w.rig.putMessage(fixture);
}

function minutesAgo(minutes: number, w: Strand): Date {
  return new Date(w.rig.clock.ms - minutes * MINUTE);
}

describe('a stranded message, found by the sweeper and taken by the sender', () => {
  it('a lost schedule: scheduled past send_at + grace, re-dispatched with its current rev, sent once; a second sweep adds nothing', async () => {
    const w = await strandWorld();
    const message = await stranded(w, { rev: 3, sendAt: minutesAgo(10, w), tags: { kind: 'invoice' } });

    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toEqual([{ id: message.id, rev: 3 }]);
    await w.drain();
    expect(w.rig.accepted(message.id)).toHaveLength(1);
    expect((await w.rig.state(message.id)).status).toBe('sent');

    w.rig.clock.advance(60 * MINUTE);
    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(1);
    expect(w.counted).toContainEqual({ name: 'Redispatched', value: 1 });
  });

  it('not before the grace: scheduled just past send_at is left to its own copy', async () => {
    const w = await strandWorld();
    const message = await stranded(w, { sendAt: minutesAgo(4, w) });
    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toEqual([]);
  });

  it('a sender killed mid-send: sending with a lease expired by the grace, taken over and sent (retry policy)', async () => {
    const w = await strandWorld();
    const message = await stranded(w, {
      status: 'sending',
      sendAt: minutesAgo(20, w),
      leaseOwner: 'killed-sender',
      leaseUntil: minutesAgo(6, w),
      attempts: 1,
    });

    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toEqual([{ id: message.id, rev: 1 }]);
    await w.drain();
    expect(w.rig.accepted(message.id)).toHaveLength(1);
    expect((await w.rig.state(message.id)).status).toBe('sent');
  });

  it('a sender killed mid-send under on_ambiguous = hold: taken over to unknown, nothing sent', async () => {
    const w = await strandWorld();
    const message = await stranded(w, {
      status: 'sending',
      onAmbiguous: 'hold',
      sendAt: minutesAgo(20, w),
      leaseOwner: 'killed-sender',
      leaseUntil: minutesAgo(6, w),
      attempts: 1,
    });

    await w.sweepOnce();
    await w.drain();
    expect(w.rig.received(message.id)).toEqual([]);
    expect((await w.rig.state(message.id)).status).toBe('unknown');
  });

  it('a live lease is left alone, however overdue its send time', async () => {
    const w = await strandWorld();
    const message = await stranded(w, {
      status: 'sending',
      sendAt: minutesAgo(30, w),
      leaseOwner: 'live-sender',
      leaseUntil: new Date(w.rig.clock.ms + MINUTE),
      attempts: 1,
    });
    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toEqual([]);
  });

  it('retrying long overdue: re-dispatched and sent once', async () => {
    const w = await strandWorld();
    const message = await stranded(w, { status: 'retrying', rev: 2, sendAt: minutesAgo(30, w), attempts: 1 });

    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toEqual([{ id: message.id, rev: 2 }]);
    await w.drain();
    expect(w.rig.accepted(message.id)).toHaveLength(1);
    expect((await w.rig.state(message.id)).status).toBe('sent');
  });

  it('a paused kind is not dispatched, another kind is; after resume it is', async () => {
    const w = await strandWorld();
    const digest = await stranded(w, { sendAt: minutesAgo(10, w), tags: { kind: 'digest' } });
    const invoice = await stranded(w, { sendAt: minutesAgo(10, w), tags: { kind: 'invoice' } });
    const { pause } = await w.gate.read();
    const paused = pauseAfter(
      pause,
      { action: 'pause', kind: 'digest', reason: 'rollout' },
      w.rig.clock.now(),
    );
    expect(await w.gate.writePause(pause, paused)).toBe('written');

    await w.sweepOnce();
    expect(w.sweepCopies(digest.id)).toEqual([]);
    expect(w.sweepCopies(invoice.id)).toHaveLength(1);
    await w.drain();
    expect(w.rig.received(digest.id)).toEqual([]);
    expect(w.rig.accepted(invoice.id)).toHaveLength(1);

    const resumed = pauseAfter(paused, { action: 'resume', kind: 'digest' }, w.rig.clock.now());
    expect(await w.gate.writePause(paused, resumed)).toBe('written');
    await w.sweepOnce();
    expect(w.sweepCopies(digest.id)).toHaveLength(1);
    await w.drain();
    expect(w.rig.accepted(digest.id)).toHaveLength(1);
  });

  it('paused, but past its not_after: the rescued copy expires it (the sender settles the deadline before the pause), nothing sent', async () => {
    const w = await strandWorld();
    const message = await stranded(w, {
      sendAt: minutesAgo(20, w),
      notAfter: minutesAgo(10, w),
      tags: { kind: 'digest' },
    });
    await pauseKind(w, 'digest');

    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(1);
    await w.drain();
    expect(w.rig.received(message.id)).toEqual([]);
    expect((await w.rig.state(message.id)).status).toBe('expired');
  });

  it('paused, its sender killed mid-send: the takeover settles it (unknown under hold, alarmed and cancellable by an operator), nothing sent', async () => {
    const w = await strandWorld();
    const message = await stranded(w, {
      status: 'sending',
      onAmbiguous: 'hold',
      sendAt: minutesAgo(20, w),
      leaseOwner: 'killed-sender',
      leaseUntil: minutesAgo(6, w),
      attempts: 1,
      tags: { kind: 'digest' },
    });
    await pauseKind(w, 'digest');

    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(1);
    await w.drain();
    expect(w.rig.received(message.id)).toEqual([]);
    expect((await w.rig.state(message.id)).status).toBe('unknown');
  });

  it('paused, its sender killed mid-send (retry policy): settled to retrying and held by the pause, nothing sent, not re-dispatched again while paused', async () => {
    const w = await strandWorld();
    const message = await stranded(w, {
      status: 'sending',
      sendAt: minutesAgo(20, w),
      leaseOwner: 'killed-sender',
      leaseUntil: minutesAgo(6, w),
      attempts: 1,
      tags: { kind: 'digest' },
    });
    await pauseKind(w, 'digest');

    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(1);
    await w.drain();
    expect(w.rig.received(message.id)).toEqual([]);
    expect((await w.rig.state(message.id)).status).toBe('retrying');

    w.rig.clock.advance(60 * MINUTE);
    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(1);
  });

  it('due in quiet hours: the rescued copy is held to the window’s end (no send, no copy until then), then sent once', async () => {
    const w = await strandWorld();
    const message = await stranded(w, { sendAt: minutesAgo(10, w), ...QUIET });

    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(1);
    await w.drain();
    expect(w.rig.received(message.id)).toEqual([]);
    const held = await w.rig.state(message.id);
    expect(held.status).toBe('scheduled');
    expect(held.due_at).toBe(new Date(WINDOW_END).toISOString());

    // Later in the window, past the grace of the sweep's own stamp: the hold is no stall.
    w.rig.clock.ms = WINDOW_END - MINUTE;
    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(1);

    // The held copy is lost too (it waits in SQS for real minutes here): past the end and the grace,
    // the sweeper sends it, once.
    w.rig.clock.ms = WINDOW_END + GRACE_SECONDS * 1000 + MINUTE;
    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(2);
    await w.drain();
    expect(w.rig.accepted(message.id)).toHaveLength(1);
    expect((await w.rig.state(message.id)).status).toBe('sent');
  });

  it('not_after passed: the rescued copy expires the message, nothing sent', async () => {
    const w = await strandWorld();
    const message = await stranded(w, { sendAt: minutesAgo(20, w), notAfter: minutesAgo(10, w) });

    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(1);
    await w.drain();
    expect(w.rig.received(message.id)).toEqual([]);
    expect((await w.rig.state(message.id)).status).toBe('expired');
  });

  it('writes no address and no body into its log lines', async () => {
    const w = await strandWorld();
    await stranded(w, { sendAt: minutesAgo(10, w), to: ['grace.hopper@example.org'], text: 'secret-body' });
    await w.sweepOnce();
    expect(w.log.lines.some((line) => line.message === 'sweeper re-dispatched a stuck message')).toBe(true);
    expect(w.log.text()).not.toMatch(/@|secret-body|Campaign approved/);
  });
});

describe('the sweeper never makes a second send', () => {
  it('beside a copy in flight: its extra copy is dropped, the relay sees the message once', async () => {
    const w = await strandWorld();
    const message = await stranded(w, { sendAt: minutesAgo(10, w) });
    await w.rig.dispatch(message); // the copy that was only late, not lost

    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(1);
    await w.drain();
    expect(w.rig.received(message.id)).toHaveLength(1);
    expect((await w.rig.state(message.id)).status).toBe('sent');
  });

  it('beside a second sweep at the same moment: one stamp lands, and the relay sees the message once', async () => {
    const w = await strandWorld();
    const message = await stranded(w, { sendAt: minutesAgo(10, w) });

    await Promise.all([w.sweepOnce(), w.sweepOnce()]);
    expect(w.sweepCopies(message.id).length).toBeGreaterThanOrEqual(1);
    const stamped = await w.rig.state(message.id);
    expect((stamped as unknown as SweptRecord).sweep_count).toBe(1);
    await w.drain();
    expect(w.rig.received(message.id)).toHaveLength(1);
    expect((await w.rig.state(message.id)).status).toBe('sent');
  });

  it('beside a sender that claims and sends between its read and its copy: the stale copy is dropped, nothing stamped', async () => {
    let claimed: Promise<void> | undefined;
    let w: Strand | undefined;
    w = await strandWorld({
      records: (inner) => ({
        ...inner,
        recordDeadLetter: (letter) => inner.recordDeadLetter(letter),
        recordRedispatch: (input) => inner.recordRedispatch(input),
        read: async (ids) => {
          const read = await inner.read(ids);
          // The sweeper decided on what it read; the sender takes the message's own copy now.
          if (w !== undefined) claimed ??= w.rig.dispatch(message).then(() => w?.drain());
          await claimed;
          return read;
        },
      }),
    });
    const message = await stranded(w, { sendAt: minutesAgo(10, w) });

    const report = await w.sweepOnce();
    expect(w.rig.accepted(message.id)).toHaveLength(1);
    expect(w.sweepCopies(message.id)).toHaveLength(1);
    await w.drain();
    expect(w.rig.received(message.id)).toHaveLength(1);
    const state = await w.rig.state(message.id);
    expect(state.status).toBe('sent');
    expect((state as unknown as SweptRecord).sweep_count).toBeUndefined();
    expect(report.unstamped).toBe(0);
  });
});

describe('after the queue was emptied (the local stack restarted on its data dir, decision 0264)', () => {
  // Each record written before the emptying, its copy only on the lost queue; the run is told when.
  const SECOND = 1000;
  const emptiedNow = (w: Strand) => {
    w.rig.clock.advance(SECOND);
    return w.rig.clock.now();
  };

  it('a message due in 40 s, its delayed copy lost: replaced at once with the 40 s left, the record not written', async () => {
    const w = await strandWorld();
    const message = await stranded(w, { rev: 2, sendAt: new Date(w.rig.clock.ms + 41 * SECOND) });
    await w.sweepTold(emptiedNow(w));
    expect(w.sweepCopies(message.id)).toEqual([{ id: message.id, rev: 2 }]);
    expect(w.sweepDelays(message.id)).toEqual([40]);
    const after = await w.rig.state(message.id);
    expect(after.due_at).toBe(message.due_at);
    expect(after).not.toHaveProperty('swept_at');
    // A run not told adds nothing: the copy is on the queue.
    await w.sweepOnce();
    expect(w.sweepCopies(message.id)).toHaveLength(1);
  });

  it('a retry waiting out its backoff: replaced with the time left to its retry, which the sender keeps', async () => {
    const w = await strandWorld();
    const message = await stranded(w, { status: 'retrying', rev: 2, sendAt: minutesAgo(30, w), attempts: 1 });
    const retryAt = new Date(w.rig.clock.ms + 120 * SECOND).toISOString();
    await world.documents.send(
      new UpdateCommand({
        TableName: world.tableName,
        Key: { pk: messagePk(message.id), sk: 'STATE' },
        UpdateExpression: 'SET due_at = :retry',
        ExpressionAttributeValues: { ':retry': retryAt },
      }),
    );
    await w.sweepTold(emptiedNow(w));
    expect(w.sweepCopies(message.id)).toEqual([{ id: message.id, rev: 2 }]);
    expect(w.sweepDelays(message.id)).toEqual([119]);
  });

  it('a lease in flight when the queue went: replaced to come when the lease ends, for the takeover', async () => {
    const w = await strandWorld();
    const message = await stranded(w, {
      status: 'sending',
      sendAt: minutesAgo(1, w),
      leaseOwner: 'gone-with-the-restart',
      leaseUntil: new Date(w.rig.clock.ms + 90 * SECOND),
      attempts: 1,
    });
    await w.sweepTold(emptiedNow(w));
    expect(w.sweepCopies(message.id)).toEqual([{ id: message.id, rev: 1 }]);
    expect(w.sweepDelays(message.id)).toEqual([89]);
  });

  it('a paused message and one in quiet hours: replaced, and still held by the sender; nothing sent', async () => {
    const w = await strandWorld();
    await pauseKind(w, 'digest');
    const paused = await stranded(w, { sendAt: minutesAgo(10, w), tags: { kind: 'digest' } });
    const quiet = await stranded(w, { sendAt: minutesAgo(1, w), ...QUIET });
    await w.sweepTold(emptiedNow(w));
    expect(w.sweepDelays(paused.id)).toEqual([0]);
    expect(w.sweepDelays(quiet.id)).toEqual([0]);
    await w.drain();
    expect(w.rig.received(paused.id)).toEqual([]);
    expect(w.rig.received(quiet.id)).toEqual([]);
    expect((await w.rig.state(paused.id)).status).toBe('scheduled');
    expect((await w.rig.state(quiet.id)).due_at).toBe(new Date(WINDOW_END).toISOString());
  });

  it('nothing for a message written since the emptying, or due 15 minutes or more after it (its schedule is kept)', async () => {
    const w = await strandWorld();
    const far = await stranded(w, { sendAt: new Date(w.rig.clock.ms + 16 * MINUTE) });
    const queueEmptiedAt = emptiedNow(w);
    // The fixture writes a record as of a minute before the clock.
    w.rig.clock.advance(61 * SECOND);
    const since = await stranded(w, { sendAt: new Date(w.rig.clock.ms + 30 * SECOND) });
    await w.sweepTold(queueEmptiedAt);
    expect(w.sweepCopies(far.id)).toEqual([]);
    expect(w.sweepCopies(since.id)).toEqual([]);
  });
});
