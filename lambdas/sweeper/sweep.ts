import { setTimeout as wait } from 'node:timers/promises';
import { errorForLog } from '../core/errorForLog.js';
import { isTerminal, MESSAGE_STATUS } from '../core/messageStatus.js';
import { SWEEPER_METRIC } from '../core/metricNames.js';
import type { PauseState } from '../core/relayBreaker.js';
import { relayGauges, relayInUse } from '../core/relays.js';
import { runWithConcurrency } from '../core/runWithConcurrency.js';
import {
  decideSweep,
  PAUSE_UNREAD,
  pauseHoldsEverything,
  refusedGauge,
  type SendersHold,
  voidStampsDueBefore,
} from '../core/sweepDecision.js';
import { isLiveSide } from '../core/testSide.js';
import type { DeadLetterCopies } from '../ports/DeadLetterCopies.js';
import type { DispatchQueue, QueuedCopy } from '../ports/DispatchQueue.js';
import type { DueCursor, DueEntry, DueIndex } from '../ports/DueIndex.js';
import type { Log } from '../ports/Log.js';
import type { SweeperMetrics } from '../ports/SweeperMetrics.js';
import type { SweepRecords } from '../ports/SweepRecords.js';
import { INDEX_SHARDS } from '../store/tableLayout.js';
import {
  type BreakerCheck,
  checkRelays,
  type RelayCheck,
  type SweeperGate,
  type UnreadRelay,
  wasRead,
} from './relayToken.js';
import { type DeadLetterSweep, type RenewalClock, removeStaleDeadLetters } from './staleDeadLetters.js';
import { countWaiting, type WaitingCounts } from './waitingGauge.js';

export interface SweepDeps {
  readonly dueIndex: DueIndex;
  readonly records: SweepRecords;
  readonly queue: DispatchQueue;
  readonly now: () => Date;
  /** POSTDATE_SWEEP_GRACE_SECONDS: how overdue an entry must be before it is re-dispatched. */
  readonly graceSeconds: number;
  /** @default INDEX_SHARDS.due */
  readonly shards?: number;
  /** @default INDEX_SHARDS.waiting */
  readonly waitingShards?: number;
  /** At most this many re-dispatches per shard and run. @default maxReadsPerShard */
  readonly maxPerShard?: number;
  /**
   * At most this many entries read per shard and run, skipped ones included: a run pages past
   * entries it leaves alone (a paused backlog) up to this many. @default SWEEP_MAX_READS_PER_SHARD
   */
  readonly maxReadsPerShard?: number;
  /**
   * Milliseconds left before the invocation is killed (Lambda's `getRemainingTimeInMillis`): the pass
   * starts no page once only {@link SWEEP_RESERVED_MS} are left. Absent (the CLI, a test): no limit.
   */
  readonly remainingMs?: () => number;
  /** Waits out a shard's pace ({@link SWEEP_PACE}). @default setTimeout */
  readonly sleep?: (milliseconds: number) => Promise<void>;
  /** @default 100 */
  readonly pageSize?: number;
  readonly log?: Log;
  readonly metrics?: SweeperMetrics;
  /** The relay breaker (relayToken.ts); absent, the sweeper ignores it. */
  readonly gate?: SweeperGate;
  /** The send queue's DLQ, which each run tends (staleDeadLetters.ts); absent, it does not look. */
  readonly deadLetters?: DeadLetterCopies;
  /**
   * The send queue holds no copy sent before this (a purge; the local emulator's start): this run also
   * reads the stamped entries the backoff put ahead and re-dispatches those stamped before it
   * (core/sweepDecision.ts `stampIsVoid`, decision 0180). Given to one run, not to every run.
   */
  readonly queueEmptiedAt?: Date;
  /** What this environment remembers of the DLQ's copies between runs (createSweeperHandler.ts keeps one). */
  readonly deadLetterRenewal?: RenewalClock;
  /**
   * Where runs stopped in the shards they could not read to the end (createSweeperHandler.ts keeps one
   * per environment): this run starts a shard there, reads on to its end, then from its start, and
   * leaves here where it stops. A backlog runs leave alone (a paused kind) that is longer than a run
   * reads then hides nothing behind it for good (decision 0195); the function keeps them in the table
   * too, for its cold starts (decision 0199). Absent (the CLI's one-off sweep): every shard from its start.
   */
  readonly resumeFrom?: Map<number, DueCursor>;
}

export interface SweepReport {
  /** Entries read from the index. */
  readonly examined: number;
  /** Copies put on the queue. */
  readonly redispatched: number;
  /** Copies the queue refused (they are found again by the next run). */
  readonly failed: number;
  /**
   * Entries left alone: terminal (an index read that lags a transition), gone, paused by an operator,
   * or no longer overdue by the record's own `due_at` (it moved on, or the sweeper's backoff for this
   * stall runs).
   */
  readonly skipped: number;
  /** Of those, the overdue messages an operator's pause holds (core/sweepDecision.ts). */
  readonly paused: number;
  /** Of those, the records a newer writer made: refused, left unstamped for the upgrade (decision 0166). */
  readonly refused: number;
  /** Re-dispatches whose stamp on the record failed (the next run may add one more copy: harmless). */
  readonly unstamped: number;
  /**
   * Shards this run could not read to the end (more re-dispatches than `maxPerShard`, more entries
   * than `maxReadsPerShard`, or its time ran out first): the run is incomplete. Re-dispatched entries
   * move out of the window, so the next run gets further; past skipped ones (a paused backlog) it gets
   * further by starting where this one stopped (`resumeFrom`).
   */
  readonly truncatedShards: readonly number[];
  /** The pass stopped with shards left to read: only {@link SWEEP_RESERVED_MS} of the run's time was left. */
  readonly outOfTime: boolean;
  /** Shards whose query (or record read) failed, with the error's name. */
  readonly shardErrors: readonly { readonly shard: number; readonly error: string }[];
  /**
   * Gate items this run could not read (or whose lost probe token it could not re-arm), with the
   * error's name: `pauses` (the gate item) or a relay's name. What it could not read held the mail
   * (SweepInput `pause`, core/relays.ts `RelayGateRead`); the run is incomplete.
   */
  readonly gateErrors: readonly { readonly gate: string; readonly error: string }[];
  /** Messages waiting for an operator, per status, as published to the gauge. */
  readonly waiting: WaitingCounts;
  /**
   * Why the senders held every live copy this run, if they did: no relay took mail, or the pauses
   * held every kind. Only test messages (DESIGN §14) could be re-dispatched; the live copies come
   * back by themselves, and the run after that re-dispatches what is really lost. A shard not read to
   * its end is then the held backlog, and is no incomplete run (createSweeperHandler.ts).
   */
  readonly held?: SendersHold;
  /** The first relay's breaker as this run found it (absent: unread). */
  readonly breaker?: BreakerCheck;
  /** Every relay's breaker as this run found it, in order (DESIGN §15); `breaker` is the first's. */
  readonly relays?: readonly (RelayCheck | UnreadRelay)[];
  /** What the run did in the DLQ: stale and second copies taken off, old ones renewed, missing ones made (absent: no DLQ wired). */
  readonly deadLetters?: DeadLetterSweep;
}

/**
 * How a run paces its pass (docs/capacity.md, "The sweeper's rescue"): `shardsAtOnce` shards at once,
 * a page at a time each, in turns (a shard with more to read goes to the back of the line, so a
 * run cut short has read a page of every shard before a second of any); a page of n entries takes at
 * least n / `entriesPerShardSecond` seconds, its stamps `stampsAtOnce` at a time. A stamp moves its
 * record's `due` entry — a delete and a put, 2 index write units on `due#{shard}` — so a run adds at
 * most 200 W/s to a shard; what that makes of a partition at 10,000 messages/s, against the 75 % the
 * layout allows (DESIGN §4), is docs/capacity.md §7. In all, at most 1,600 entries read and
 * re-dispatched a second.
 */
export const SWEEP_PACE = { shardsAtOnce: 16, entriesPerShardSecond: 100, stampsAtOnce: 4 } as const;

/**
 * The time a run keeps from its pass for what follows it: the waiting counts and gauges (about a
 * second) and the DLQ's care, whose walk hides the copies it receives DEAD_LETTER_HIDE_SECONDS (30 s)
 * and ends within them.
 */
export const SWEEP_RESERVED_MS = 40_000;

/**
 * The entries one run reads per shard, paging past those it leaves alone (a longer paused backlog is
 * read on by the next runs, `resumeFrom`). More than a run's time lets it read of one
 * shard (at {@link SWEEP_PACE}, 100 a second over the 80 s a 120 s run gives its pass), so the time
 * binds first; without a time limit (the CLI) it bounds a run to 640,000 index entries and state
 * records (one Query and one consistent BatchGetItem per 100).
 */
export const SWEEP_MAX_READS_PER_SHARD = 10_000;

/**
 * The shard a run starts at: the run's minute, modulo the shards. Every run reads a page of every
 * shard before a second of any, so the start only decides which shards get the pages of a run cut
 * short; a run every 5 minutes starts 5 shards further than the last. No state is kept.
 */
export function firstShardOfRun(now: Date, shards: number): number {
  return Math.floor(now.getTime() / 60_000) % shards;
}

interface PageTally {
  redispatched: number;
  /** Of those, live messages': the `Redispatched` series, which no test message moves (DESIGN §14). */
  liveRedispatched: number;
  failed: number;
  skipped: number;
  paused: number;
  refused: number;
  unstamped: number;
}

/**
 * One anti-entropy pass (DESIGN §5a). For every shard of the sparse `due` index, reads the entries
 * whose `due_at` is older than now − grace — `scheduled` past send_at, `sending` past its lease,
 * `retrying` past its backoff — reads their records, and puts `{id, rev}` with the record's CURRENT
 * rev on the send queue with no delay, then stamps the record (core/sweepDecision.ts) so that a copy
 * merely waiting behind a backlog is not re-dispatched on every run. A live message an operator
 * paused, like every live message while no relay takes mail, is left to the senders that hold it (a
 * test message never is: no gate holds its copies, DESIGN §14), and the read goes on past it (a
 * skipped entry keeps its `due_at`, so it would fill the window of every run); a shard not read to
 * its end within the run's bounds is reported, and the run is incomplete — unless the senders held
 * every live copy (`held`): then the cut is the held backlog itself. The pass is paced
 * ({@link SWEEP_PACE}: no `due` shard made hot) and stops in time ({@link SWEEP_RESERVED_MS}).
 * It never writes a status or a rev, so it can run at any moment next to anything: a copy of a
 * message that meanwhile moved on is dropped by the sender's rev and status rules. It can never
 * cause a second send. Told that the queue was emptied (`queueEmptiedAt`), it also puts back, delayed
 * to its time and unstamped, every copy only that queue can have held (core/sweepDecision.ts
 * `copyLostWithQueue`, decision 0264).
 *
 * Then it counts the messages that wait for an operator and publishes the gauge, and tends the DLQ
 * (staleDeadLetters.ts): stale copies off, each waiting dead message's copy kept alive.
 */
export async function sweep(deps: SweepDeps): Promise<SweepReport> {
  const tally: PageTally = {
    redispatched: 0,
    liveRedispatched: 0,
    failed: 0,
    skipped: 0,
    paused: 0,
    refused: 0,
    unstamped: 0,
  };
  const gate = await readGate(deps);
  const pass = await sweepShards(deps, tally, gate);
  deps.metrics?.count(SWEEPER_METRIC.redispatched, tally.liveRedispatched);
  const refused = refusedGauge({ refused: tally.refused, wholeIndexRead: pass.wholeIndexRead });
  if (refused !== undefined) deps.metrics?.count(SWEEPER_METRIC.refusedRecords, refused);
  const waitingShards = deps.waitingShards ?? INDEX_SHARDS.waiting;
  const waiting = await publishWaiting(deps, waitingShards);
  const deadLetters = await tidyDeadLetters(deps, waiting);
  return {
    examined: pass.examined,
    ...tally,
    truncatedShards: pass.truncatedShards,
    outOfTime: pass.outOfTime,
    shardErrors: pass.shardErrors,
    gateErrors: gate.errors,
    waiting,
    ...(gate.held === undefined ? {} : { held: gate.held }),
    ...(gate.breaker === undefined ? {} : { breaker: gate.breaker }),
    ...(gate.relays === undefined ? {} : { relays: gate.relays }),
    ...(deadLetters === undefined ? {} : { deadLetters }),
  };
}

/** What the run found of the sending gate, and what the senders hold because of it. */
interface GateFound {
  readonly pause: PauseState | typeof PAUSE_UNREAD | undefined;
  /** No relay takes mail: the senders hold every live copy. */
  readonly noRelay: boolean;
  readonly held: SendersHold | undefined;
  readonly breaker: BreakerCheck | undefined;
  readonly relays: readonly (RelayCheck | UnreadRelay)[] | undefined;
  readonly errors: readonly { readonly gate: string; readonly error: string }[];
}

/**
 * Reads the pauses and every relay's breaker (re-arming lost probe tokens) and publishes the relay
 * alarms' gauges. Never throws: a gate item it cannot read holds the mail (core/relays.ts
 * `RelayGateRead`, core/sweepDecision.ts `PAUSE_UNREAD`) and is reported.
 */
async function readGate(deps: SweepDeps): Promise<GateFound> {
  const errors: { gate: string; error: string }[] = [];
  if (deps.gate === undefined) {
    return {
      pause: undefined,
      noRelay: false,
      held: undefined,
      breaker: undefined,
      relays: undefined,
      errors,
    };
  }
  const pause = await readPauses(deps.gate, errors, deps.log);
  const relays = await checkRelays(deps.gate, deps.queue, deps.now(), deps.log);
  for (const relay of relays) {
    if (!wasRead(relay)) errors.push({ gate: relay.relay, error: relay.unread });
    else if (relay.error !== undefined) errors.push({ gate: relay.relay, error: relay.error });
  }
  // What each relay's gate says, undefined where it could not be read: that relay takes no mail.
  const gates = relays.map((relay) => (wasRead(relay) ? relay : undefined));
  // The relay alarms' gauges (DESIGN §15, docs/runbook.md §5, §5a), every run: a relay's while its
  // breaker holds its mail (a disabled relay's is 0), and one while mail leaves through a later relay.
  // A gauge that rests on a gate not read is not published: its alarm keeps its state.
  const gauges = relayGauges(gates, deps.now(), deps.gate.settings);
  for (const [index, relay] of relays.entries()) {
    const unavailable = gauges.unavailable[index];
    if (unavailable !== undefined)
      deps.metrics?.count(SWEEPER_METRIC.relayUnavailable, unavailable, relay.relay);
  }
  if (gauges.failover !== undefined) deps.metrics?.count(SWEEPER_METRIC.relayFailover, gauges.failover);
  // While no relay takes mail (every one unavailable, disabled or unread), the senders hold every
  // live copy; a test message's they never hold, so the pass still runs for it (core/sweepDecision.ts).
  const noRelay = relayInUse(gates, deps.now(), deps.gate.settings) === undefined;
  // The gate item unread holds every live message whatever the relays (its pauses are unknown).
  const held: SendersHold | undefined =
    pause === PAUSE_UNREAD
      ? 'gate-unread'
      : noRelay
        ? 'no-relay'
        : pauseHoldsEverything(pause)
          ? 'paused'
          : undefined;
  const first = relays[0];
  const breaker =
    first === undefined || !wasRead(first)
      ? undefined
      : { state: first.state, tokenRearmed: first.tokenRearmed };
  return { pause, noRelay, held, breaker, relays, errors };
}

/** One shard's place in the pass. */
interface ShardTurn {
  readonly shard: number;
  /** Where its next page starts (undefined: at its start). */
  cursor: DueCursor | undefined;
  /** Begun where an earlier run stopped (`resumeFrom`), and its start not read yet. */
  resumed: boolean;
  /** Read to its end (and, when resumed, from its start on). */
  done: boolean;
  read: number;
  planned: number;
}

interface PassFound {
  readonly examined: number;
  readonly truncatedShards: readonly number[];
  readonly shardErrors: readonly { readonly shard: number; readonly error: string }[];
  readonly outOfTime: boolean;
  /** Every shard read to its end and none unreadable: what the pass counted is all there is. */
  readonly wholeIndexRead: boolean;
}

/**
 * The pass over the `due` shards, paced ({@link SWEEP_PACE}): the shards wait in a line from the run's
 * first shard ({@link firstShardOfRun}); each of `shardsAtOnce` workers takes the next, sweeps one
 * page of it, and puts it at the back while it has more to read within the run's bounds. No page
 * starts once only {@link SWEEP_RESERVED_MS} of the run's time is left.
 */
async function sweepShards(deps: SweepDeps, tally: PageTally, gate: GateFound): Promise<PassFound> {
  const shards = deps.shards ?? INDEX_SHARDS.due;
  const maxReadsPerShard = deps.maxReadsPerShard ?? SWEEP_MAX_READS_PER_SHARD;
  const maxPerShard = deps.maxPerShard ?? maxReadsPerShard;
  const pageSize = deps.pageSize ?? 100;
  const sleep = deps.sleep ?? ((milliseconds: number) => wait(milliseconds));
  const before = readUntil(deps).toISOString();
  const holds = { pause: gate.pause, noRelay: gate.noRelay, queueEmptiedAt: deps.queueEmptiedAt };
  const first = firstShardOfRun(deps.now(), shards);
  const line: ShardTurn[] = Array.from({ length: shards }, (_, i) => {
    const shard = (first + i) % shards;
    const from = deps.resumeFrom?.get(shard);
    return { shard, cursor: from, resumed: from !== undefined, done: false, read: 0, planned: 0 };
  });
  const turns = [...line];
  const left: number[] = [];
  const shardErrors: { shard: number; error: string }[] = [];
  let examined = 0;
  let outOfTime = false;
  const timeIsUp = () => deps.remainingMs !== undefined && deps.remainingMs() <= SWEEP_RESERVED_MS;

  async function sweepTurn(turn: ShardTurn): Promise<boolean> {
    // A page never holds more entries than re-dispatches or reads are left.
    const limit = Math.min(pageSize, maxPerShard - turn.planned, maxReadsPerShard - turn.read);
    const page = await deps.dueIndex.overdue({ shard: turn.shard, before, limit, cursor: turn.cursor });
    turn.cursor = page.cursor;
    // A shard begun where the last run stopped goes on from its start once its end is read.
    if (turn.cursor === undefined) {
      if (turn.resumed) turn.resumed = false;
      else turn.done = true;
    }
    turn.read += page.entries.length;
    examined += page.entries.length;
    const pace = sleep((page.entries.length * 1000) / SWEEP_PACE.entriesPerShardSecond);
    turn.planned += await sweepPage(deps, page.entries, tally, holds);
    await pace;
    // More to read, within the bounds: back in line.
    return !turn.done && turn.planned < maxPerShard && turn.read < maxReadsPerShard;
  }

  async function worker(): Promise<void> {
    for (let turn = line.shift(); turn !== undefined; turn = line.shift()) {
      if (timeIsUp()) {
        outOfTime = true;
        left.push(turn.shard);
        continue;
      }
      try {
        if (await sweepTurn(turn)) line.push(turn);
        else if (!turn.done) left.push(turn.shard);
      } catch (error) {
        const name = error instanceof Error ? error.name : 'non-error';
        shardErrors.push({ shard: turn.shard, error: name });
        deps.log?.warn('sweeper could not read a shard of the due index', { shard: turn.shard, error: name });
      }
    }
  }

  await Promise.all(Array.from({ length: Math.min(SWEEP_PACE.shardsAtOnce, shards) }, worker));
  // The next run starts each shard where this one stopped; an unreadable one where it was to start.
  for (const turn of turns) {
    if (deps.resumeFrom === undefined || shardErrors.some(({ shard }) => shard === turn.shard)) continue;
    if (turn.done || turn.cursor === undefined) deps.resumeFrom.delete(turn.shard);
    else deps.resumeFrom.set(turn.shard, turn.cursor);
  }
  if (outOfTime)
    deps.log?.warn('sweeper ran out of time: shards left for the next run', { shards: left.length });
  return {
    examined,
    truncatedShards: left.sort((a, b) => a - b),
    shardErrors: shardErrors.sort((a, b) => a.shard - b.shard),
    outOfTime,
    wholeIndexRead: left.length === 0 && shardErrors.length === 0,
  };
}

/**
 * The end of the window a run reads: entries overdue by the grace — and, told the queue was emptied,
 * every stamp made before that too (core/sweepDecision.ts `voidStampsDueBefore`), an hour past the
 * emptying, which holds every copy due within 15 minutes of it (`copyLostWithQueue`).
 */
function readUntil(deps: SweepDeps): Date {
  const overdue = deps.now().getTime() - deps.graceSeconds * 1000;
  if (deps.queueEmptiedAt === undefined) return new Date(overdue);
  return new Date(Math.max(overdue, voidStampsDueBefore(deps.queueEmptiedAt, deps.graceSeconds).getTime()));
}

/** Sweeps one page of entries; returns how many it meant to re-dispatch (refused copies included). */
async function sweepPage(
  deps: SweepDeps,
  entries: readonly DueEntry[],
  tally: PageTally,
  holds: {
    readonly pause: PauseState | typeof PAUSE_UNREAD | undefined;
    readonly noRelay: boolean;
    readonly queueEmptiedAt: Date | undefined;
  },
): Promise<number> {
  const live = entries.filter((entry) => !isTerminal(entry.status));
  tally.skipped += entries.length - live.length;
  if (live.length === 0) return 0;
  const records = await deps.records.read(live.map((entry) => entry.id));
  const now = deps.now();
  const planned: {
    copy: QueuedCopy;
    /** Absent: a lost copy replaced (core/sweepDecision.ts `replace`), which writes nothing. */
    stamp?: Parameters<SweepRecords['recordRedispatch']>[0];
    live: boolean;
  }[] = [];
  for (const entry of live) {
    const record = records.get(entry.id);
    const decision = decideSweep({
      record,
      now,
      graceSeconds: deps.graceSeconds,
      noRelay: holds.noRelay,
      ...(holds.pause === undefined ? {} : { pause: holds.pause }),
      ...(holds.queueEmptiedAt === undefined ? {} : { queueEmptiedAt: holds.queueEmptiedAt }),
    });
    if (decision.action === 'skip' || record === undefined) {
      tally.skipped++;
      if (decision.action === 'skip' && decision.reason === 'paused') tally.paused++;
      if (decision.action === 'skip' && decision.reason === 'refused') tally.refused++;
      continue;
    }
    // A refused record is never re-dispatched (decideSweep); the narrowing only tells TypeScript.
    const isLive = !('refusal' in record) && isLiveSide(record.tenant);
    if (decision.action === 'replace') {
      planned.push({
        copy: { payload: { id: entry.id, rev: decision.rev }, delaySeconds: decision.delaySeconds },
        live: isLive,
      });
      continue;
    }
    planned.push({
      copy: { payload: { id: entry.id, rev: decision.rev }, delaySeconds: 0 },
      stamp: {
        id: entry.id,
        rev: decision.rev,
        status: decision.status,
        seenDueAt: decision.seenDueAt,
        nextDueAt: decision.nextDueAt,
        sweepCount: decision.sweepCount,
        now,
      },
      live: isLive,
    });
  }
  if (planned.length === 0) return 0;
  // The copy first: a stamp that then fails costs at most one more harmless copy; a stamp before a
  // refused copy would put off a lost message's rescue by the backoff.
  const result = await deps.queue.enqueue(planned.map((plan) => plan.copy));
  tally.failed += result.failed.length;
  if (result.failed.length > 0 && result.error !== undefined) {
    deps.log?.warn('sweeper could not re-dispatch some copies', {
      failed: result.failed.length,
      error: errorForLog(result.error),
    });
  }
  const sent = planned.filter((plan) => !result.failed.includes(plan.copy));
  tally.redispatched += sent.length;
  tally.liveRedispatched += sent.filter((plan) => plan.live).length;
  // A few stamps at once: the shard's pace, not the latency, bounds its `due` writes (SWEEP_PACE).
  for (const plan of sent) {
    if (plan.stamp !== undefined) continue;
    deps.log?.info('sweeper replaced a copy the emptied queue lost', {
      messageId: plan.copy.payload.id,
      rev: plan.copy.payload.rev,
      delaySeconds: plan.copy.delaySeconds,
    });
  }
  const stamps = sent.flatMap((plan) => (plan.stamp === undefined ? [] : [plan.stamp]));
  await runWithConcurrency(stamps, SWEEP_PACE.stampsAtOnce, async (stamp) => {
    deps.log?.info('sweeper re-dispatched a stuck message', {
      messageId: stamp.id,
      rev: stamp.rev,
      sweepCount: stamp.sweepCount,
    });
    try {
      await deps.records.recordRedispatch(stamp);
    } catch (error) {
      tally.unstamped++;
      deps.log?.warn('sweeper could not stamp a re-dispatch', {
        messageId: stamp.id,
        error: error instanceof Error ? error.name : 'non-error',
      });
    }
  });
  return planned.length;
}

/**
 * The operator's pauses, from the gate item; {@link PAUSE_UNREAD} when it cannot be read: a gate
 * that cannot be read holds the mail, in the senders and so in the sweeper (core/sweepDecision.ts).
 */
async function readPauses(
  gate: SweeperGate,
  gateErrors: { gate: string; error: string }[],
  log: Log | undefined,
): Promise<PauseState | typeof PAUSE_UNREAD> {
  try {
    return (await gate.store.read()).pause;
  } catch (error) {
    const unread = { gate: 'pauses', error: error instanceof Error ? error.name : 'non-error' };
    gateErrors.push(unread);
    log?.warn('sweeper could not read the pauses: live messages are held this run', unread);
    return PAUSE_UNREAD;
  }
}

async function publishWaiting(deps: SweepDeps, shards: number): Promise<WaitingCounts> {
  const waiting = await countWaiting(deps.dueIndex, shards);
  for (const [status, count] of Object.entries(waiting.counts)) {
    deps.metrics?.count(SWEEPER_METRIC.waiting[status as keyof typeof SWEEPER_METRIC.waiting], count);
  }
  for (const failure of waiting.errors) {
    deps.log?.warn('sweeper could not count the messages waiting for an operator', failure);
  }
  return waiting;
}

async function tidyDeadLetters(
  deps: SweepDeps,
  waiting: WaitingCounts,
): Promise<DeadLetterSweep | undefined> {
  if (deps.deadLetters === undefined) return undefined;
  const { dueIndex } = deps;
  const waitingShards = deps.waitingShards ?? INDEX_SHARDS.waiting;
  const result = await removeStaleDeadLetters({
    deadLetters: deps.deadLetters,
    records: deps.records,
    waitingDead: waiting.counts.dead,
    uncopiedDead: waiting.uncopiedDead,
    listWaitingDead: async () => {
      const entries: DueEntry[] = [];
      for (let shard = 0; shard < waitingShards; shard++)
        entries.push(...(await dueIndex.waiting(MESSAGE_STATUS.dead, shard)));
      return entries;
    },
    now: deps.now,
    renewal: deps.deadLetterRenewal ?? {},
    ...(deps.log === undefined ? {} : { log: deps.log }),
  });
  deps.metrics?.count(SWEEPER_METRIC.staleDeadLettersRemoved, result.removed);
  // Counts only: no message id, no body.
  if (result.error !== undefined) deps.log?.warn('sweeper could not finish tending the DLQ', { ...result });
  else if (result.made > 0)
    deps.log?.warn('sweeper made copies in the DLQ for dead messages that had none', { ...result });
  else if (result.walked !== undefined)
    deps.log?.info('sweeper tended the DLQ (stale copies off, old ones renewed)', { ...result });
  return result;
}
