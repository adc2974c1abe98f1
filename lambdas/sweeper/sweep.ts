import { errorForLog } from '../core/errorForLog.js';
import { isTerminal, MESSAGE_STATUS } from '../core/messageStatus.js';
import { SWEEPER_METRIC } from '../core/metricNames.js';
import type { PauseState } from '../core/relayBreaker.js';
import { relayGauges, relayInUse } from '../core/relays.js';
import {
  decideSweep,
  PAUSE_UNREAD,
  pauseHoldsEverything,
  refusedGauge,
  type SendersHold,
} from '../core/sweepDecision.js';
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

/** The structured logger the sweeper writes to (Powertools Logger fits). */

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
  /** At most this many re-dispatches per shard and run, so one run stays bounded. @default 500 */
  readonly maxPerShard?: number;
  /**
   * At most this many entries read per shard and run, skipped ones included: a run pages past
   * entries it leaves alone (a paused backlog) up to this many. @default SWEEP_MAX_READS_PER_SHARD
   */
  readonly maxReadsPerShard?: number;
  /** @default 100 */
  readonly pageSize?: number;
  readonly log?: Log;
  readonly metrics?: SweeperMetrics;
  /** The relay breaker (relayToken.ts); absent, the sweeper ignores it. */
  readonly gate?: SweeperGate;
  /** The send queue's DLQ, which each run tends (staleDeadLetters.ts); absent, it does not look. */
  readonly deadLetters?: DeadLetterCopies;
  /** What this environment remembers of the DLQ's copies between runs (createSweeperHandler.ts keeps one). */
  readonly deadLetterRenewal?: RenewalClock;
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
   * Shards this run could not read to the end (more re-dispatches than `maxPerShard`, or more
   * entries than `maxReadsPerShard`): the run is incomplete. Re-dispatched entries move out of the
   * window, so the next run gets further; skipped ones (a paused backlog) do not.
   */
  readonly truncatedShards: readonly number[];
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
 * The entries one run reads per shard, paging past those it leaves alone: a paused backlog of up to
 * this many per shard (× 64 shards) hides no lost message behind it. It bounds a run's reads to
 * 64 000 index entries and state records (one Query and one consistent BatchGetItem per 100).
 */
export const SWEEP_MAX_READS_PER_SHARD = 1000;

interface PageTally {
  redispatched: number;
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
 * every live copy (`held`): then the cut is the held backlog itself.
 * It never writes a status or a rev, so it can run at any moment next to anything: a copy of a
 * message that meanwhile moved on is dropped by the sender's rev and status rules. It can never
 * cause a second send.
 *
 * Then it counts the messages that wait for an operator and publishes the gauge, and tends the DLQ
 * (staleDeadLetters.ts): stale copies off, each waiting dead message's copy kept alive.
 */
export async function sweep(deps: SweepDeps): Promise<SweepReport> {
  const shards = deps.shards ?? INDEX_SHARDS.due;
  const maxPerShard = deps.maxPerShard ?? 500;
  const maxReadsPerShard = deps.maxReadsPerShard ?? SWEEP_MAX_READS_PER_SHARD;
  const pageSize = deps.pageSize ?? 100;
  const before = new Date(deps.now().getTime() - deps.graceSeconds * 1000).toISOString();
  let examined = 0;
  const tally: PageTally = { redispatched: 0, failed: 0, skipped: 0, paused: 0, refused: 0, unstamped: 0 };
  const truncatedShards: number[] = [];
  const shardErrors: { shard: number; error: string }[] = [];
  const gateErrors: { gate: string; error: string }[] = [];
  const pause = deps.gate === undefined ? undefined : await readPauses(deps.gate, gateErrors, deps.log);
  const relays =
    deps.gate === undefined ? undefined : await checkRelays(deps.gate, deps.queue, deps.now(), deps.log);
  for (const relay of relays ?? []) {
    if (!wasRead(relay)) gateErrors.push({ gate: relay.relay, error: relay.unread });
    else if (relay.error !== undefined) gateErrors.push({ gate: relay.relay, error: relay.error });
  }
  // What each relay's gate says, undefined where it could not be read: that relay takes no mail.
  const gates = relays?.map((relay) => (wasRead(relay) ? relay : undefined));
  // The relay alarms' gauges (DESIGN §15, docs/runbook.md §5, §5a), every run: a relay's while its
  // breaker holds its mail (a disabled relay's is 0), and one while mail leaves through a later relay.
  // A gauge that rests on a gate not read is not published: its alarm keeps its state.
  if (relays !== undefined && gates !== undefined && deps.gate !== undefined) {
    const gauges = relayGauges(gates, deps.now(), deps.gate.settings);
    for (const [index, relay] of relays.entries()) {
      const unavailable = gauges.unavailable[index];
      if (unavailable !== undefined)
        deps.metrics?.count(SWEEPER_METRIC.relayUnavailable, unavailable, relay.relay);
    }
    if (gauges.failover !== undefined) deps.metrics?.count(SWEEPER_METRIC.relayFailover, gauges.failover);
  }
  // While no relay takes mail (every one unavailable, disabled or unread), the senders hold every
  // live copy; a test message's they never hold, so the pass still runs for it (core/sweepDecision.ts).
  const noRelay =
    gates !== undefined && deps.gate !== undefined
      ? relayInUse(gates, deps.now(), deps.gate.settings) === undefined
      : false;
  // The gate item unread holds every live message whatever the relays (its pauses are unknown).
  const held: SendersHold | undefined =
    pause === PAUSE_UNREAD
      ? 'gate-unread'
      : noRelay
        ? 'no-relay'
        : pauseHoldsEverything(pause)
          ? 'paused'
          : undefined;
  const first = relays?.[0];
  const breaker =
    first === undefined || !wasRead(first)
      ? undefined
      : { state: first.state, tokenRearmed: first.tokenRearmed };

  for (let shard = 0; shard < shards; shard++) {
    let cursor: DueCursor | undefined;
    let read = 0;
    let planned = 0;
    try {
      do {
        // A page never holds more entries than re-dispatches or reads are left.
        const limit = Math.min(pageSize, maxPerShard - planned, maxReadsPerShard - read);
        const page = await deps.dueIndex.overdue({ shard, before, limit, cursor });
        cursor = page.cursor;
        read += page.entries.length;
        examined += page.entries.length;
        planned += await sweepPage(deps, page.entries, tally, { pause, noRelay });
      } while (cursor !== undefined && planned < maxPerShard && read < maxReadsPerShard);
      if (cursor !== undefined) truncatedShards.push(shard);
    } catch (error) {
      const name = error instanceof Error ? error.name : 'non-error';
      shardErrors.push({ shard, error: name });
      deps.log?.warn('sweeper could not read a shard of the due index', { shard, error: name });
    }
  }
  deps.metrics?.count(SWEEPER_METRIC.redispatched, tally.redispatched);
  const refused = refusedGauge({
    refused: tally.refused,
    wholeIndexRead: shardErrors.length === 0 && truncatedShards.length === 0,
  });
  if (refused !== undefined) deps.metrics?.count(SWEEPER_METRIC.refusedRecords, refused);
  const waitingShards = deps.waitingShards ?? INDEX_SHARDS.waiting;
  const waiting = await publishWaiting(deps, waitingShards);
  const deadLetters = await tidyDeadLetters(deps, waiting);
  return {
    examined,
    ...tally,
    truncatedShards,
    shardErrors,
    gateErrors,
    waiting,
    ...(held === undefined ? {} : { held }),
    ...(breaker === undefined ? {} : { breaker }),
    ...(relays === undefined ? {} : { relays }),
    ...(deadLetters === undefined ? {} : { deadLetters }),
  };
}

/** Sweeps one page of entries; returns how many it meant to re-dispatch (refused copies included). */
async function sweepPage(
  deps: SweepDeps,
  entries: readonly DueEntry[],
  tally: PageTally,
  holds: { readonly pause: PauseState | typeof PAUSE_UNREAD | undefined; readonly noRelay: boolean },
): Promise<number> {
  const live = entries.filter((entry) => !isTerminal(entry.status));
  tally.skipped += entries.length - live.length;
  if (live.length === 0) return 0;
  const records = await deps.records.read(live.map((entry) => entry.id));
  const now = deps.now();
  const planned: { copy: QueuedCopy; stamp: Parameters<SweepRecords['recordRedispatch']>[0] }[] = [];
  for (const entry of live) {
    const record = records.get(entry.id);
    const decision = decideSweep({
      record,
      now,
      graceSeconds: deps.graceSeconds,
      noRelay: holds.noRelay,
      ...(holds.pause === undefined ? {} : { pause: holds.pause }),
    });
    if (decision.action === 'skip' || record === undefined) {
      tally.skipped++;
      if (decision.action === 'skip' && decision.reason === 'paused') tally.paused++;
      if (decision.action === 'skip' && decision.reason === 'refused') tally.refused++;
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
  for (const plan of planned) {
    if (result.failed.includes(plan.copy)) continue;
    tally.redispatched++;
    deps.log?.info('sweeper re-dispatched a stuck message', {
      messageId: plan.stamp.id,
      rev: plan.stamp.rev,
      sweepCount: plan.stamp.sweepCount,
    });
    try {
      await deps.records.recordRedispatch(plan.stamp);
    } catch (error) {
      tally.unstamped++;
      deps.log?.warn('sweeper could not stamp a re-dispatch', {
        messageId: plan.stamp.id,
        error: error instanceof Error ? error.name : 'non-error',
      });
    }
  }
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
