import { type DispatchDecision, decideDispatch } from '../core/dispatchDecision.js';
import { errorForLog } from '../core/errorForLog.js';
import { RELAY_METRIC, type RelayMetric } from '../core/metricNames.js';
import { sqsDelaySeconds } from '../core/queueLimits.js';
import { runWithConcurrency } from '../core/runWithConcurrency.js';
import type { DispatchQueue, QueuedCopy } from '../ports/DispatchQueue.js';
import type { Log } from '../ports/Log.js';
import { type Scheduler, scheduleName } from '../ports/Scheduler.js';
import { inStreamOrder } from '../store/streamRecord.js';
import { type ActPlan, planRelay } from './planRelay.js';
import type { RelayRecord, StateImage } from './relayRecord.js';

/** The structured logger the relay writes to (Powertools Logger fits). Never given an address. */

export interface RelayDeps {
  readonly queue: DispatchQueue;
  readonly scheduler: Scheduler;
  readonly now: () => Date;
  /** POSTDATE_DIRECT_DELAY_MAX_SECONDS: due within this → the queue with DelaySeconds. */
  readonly directDelayMaxSeconds: number;
  /** POSTDATE_SCHEDULE_LEAD_SECONDS: a schedule fires this much before send_at. */
  readonly scheduleLeadSeconds: number;
  readonly log?: Log;
  /** The relay's EMF metrics (core/metricNames.ts RELAY_METRIC); absent, nothing is counted. */
  readonly metrics?: { count(name: RelayMetric, value?: number): void };
  /** How many messages' records are worked on at once (records of one message stay in order). @default RELAY_LANES */
  readonly concurrency?: number;
}

export interface RelayOutcome {
  /** Sequence numbers of the records that failed, in stream order. */
  readonly failed: readonly string[];
  readonly queued: number;
  readonly scheduled: number;
  /** CreateSchedule answered "exists": a replayed record. */
  readonly alreadyScheduled: number;
  readonly deletedSchedules: number;
  readonly ignored: number;
  readonly invalid: number;
  /** Records of a newer writer (core/recordLayout.ts): never dispatched, counted in NewerWriterRefusals. */
  readonly refused: number;
}

/**
 * Relays stream records to the send queue or the scheduler. Never throws for one record: a record
 * whose work failed is returned in `failed` (the handler reports it as a batch item failure, and the
 * event source retries from the lowest one). Records of one message are handled strictly in stream
 * order, and after one of them fails the later ones of that message are failed too without being
 * tried, so a retry replays that message's records in the original order: a schedule is never
 * re-created after the record that deleted it. Every step is idempotent (schedule names come from
 * id and rev; queue duplicates are dropped by the sender's rev and status rules), so a replay is safe.
 */
export async function relayRecords(records: readonly RelayRecord[], deps: RelayDeps): Promise<RelayOutcome> {
  const counts = {
    queued: 0,
    scheduled: 0,
    alreadyScheduled: 0,
    deletedSchedules: 0,
    ignored: 0,
    invalid: 0,
    refused: 0,
  };
  const failed = new Set<string>();
  const byMessage = new Map<string, { record: RelayRecord; plan: ActPlan }[]>();

  for (const record of records) {
    const plan = planRelay(record);
    if (plan.kind === 'ignore') {
      counts.ignored++;
      continue;
    }
    if (plan.kind === 'refused') {
      // A newer outbox helper wrote it (decision 0166): sent by our older rules it could go wrong,
      // and failing it would hold up the shard. Refused and counted; the sweeper's gauge alarms once
      // it is overdue, and once the stack is upgraded the sweeper dispatches what still waits.
      counts.refused++;
      deps.metrics?.count(RELAY_METRIC.newerWriterRefusals);
      deps.log?.error('relay refused a state record of a newer writer: upgrade the stack', {
        sequenceNumber: record.sequenceNumber,
        messageId: plan.id,
        reason: plan.reason,
      });
      continue;
    }
    if (plan.kind === 'invalid') {
      // A state image the relay cannot read (written by hand past the outbox helper, or a writer's
      // bug) no retry can fix; failing it would hold up the whole shard until the event source gives
      // up. It is counted and logged as an error instead, with the message's id to find it by.
      counts.invalid++;
      deps.metrics?.count(RELAY_METRIC.unreadableRecords);
      deps.log?.error('relay skipped an unreadable state record', {
        sequenceNumber: record.sequenceNumber,
        ...(plan.id === undefined ? {} : { messageId: plan.id }),
        reason: plan.reason,
      });
      continue;
    }
    const list = byMessage.get(plan.id) ?? [];
    list.push({ record, plan });
    byMessage.set(plan.id, list);
  }

  // Queue copies are collected and sent together at the end (SendMessageBatch, ten per request),
  // each with the record it came from and its send time: the delay is computed again just before the
  // send, so the time spent on the batch's schedules is not added to the message's lateness.
  const pendingCopies: PendingCopy[] = [];

  const relayMessage = async (steps: { record: RelayRecord; plan: ActPlan }[]): Promise<void> => {
    let broken = false;
    for (const { record, plan } of steps) {
      if (broken) {
        failed.add(record.sequenceNumber);
        continue;
      }
      try {
        for (const name of plan.deleteSchedules) {
          if ((await deps.scheduler.deleteIfExists(name)) === 'deleted') counts.deletedSchedules++;
        }
        if (plan.dispatch !== null) {
          const route = routeDispatch(plan.dispatch, deps);
          if (route.path === 'queue') {
            const backup = record.eventName === 'INSERT' && plan.dispatch.api_copy === true;
            pendingCopies.push({
              payload: { id: plan.dispatch.id, rev: plan.dispatch.rev },
              sendAtMs: Date.parse(plan.dispatch.send_at),
              sequenceNumber: record.sequenceNumber,
              minDelaySeconds: backup ? API_COPY_BACKUP_DELAY_SECONDS : 0,
            });
          } else {
            const created = await deps.scheduler.createOnce({
              name: scheduleName(plan.dispatch),
              fireAt: route.fireAt,
              payload: { id: plan.dispatch.id, rev: plan.dispatch.rev },
            });
            if (created === 'created') counts.scheduled++;
            else counts.alreadyScheduled++;
          }
        }
      } catch (error) {
        broken = true;
        failed.add(record.sequenceNumber);
        deps.log?.warn('relay could not handle a record', {
          sequenceNumber: record.sequenceNumber,
          messageId: plan.id,
          error: errorForLog(error),
        });
      }
    }
  };

  await runWithConcurrency([...byMessage.values()], deps.concurrency ?? RELAY_LANES, relayMessage);

  if (pendingCopies.length > 0) {
    const nowMs = deps.now().getTime();
    const sequenceOf = new Map<QueuedCopy, string>(
      pendingCopies.map((pending) => [
        {
          payload: pending.payload,
          // A backup waits its few seconds past the due time, and never less than that from now.
          delaySeconds: sqsDelaySeconds(
            Math.max(0, (pending.sendAtMs - nowMs) / 1000) + pending.minDelaySeconds,
          ),
        },
        pending.sequenceNumber,
      ]),
    );
    const copies = [...sequenceOf.keys()];
    let unsent: readonly QueuedCopy[];
    try {
      const result = await deps.queue.enqueue(copies);
      unsent = result.failed;
      if (unsent.length > 0 && result.error !== undefined) {
        deps.log?.warn('relay could not enqueue some copies', {
          failed: unsent.length,
          error: errorForLog(result.error),
        });
      }
    } catch (error) {
      unsent = copies;
      deps.log?.warn('relay could not reach the send queue', { error: errorForLog(error) });
    }
    for (const copy of unsent) {
      const sequenceNumber = sequenceOf.get(copy);
      if (sequenceNumber !== undefined) failed.add(sequenceNumber);
    }
    counts.queued += copies.length - unsent.length;
  }

  return { failed: inStreamOrder(records, failed), ...counts };
}

/** Messages of one batch relayed at once (the cost benchmark's duration model reads it: bench/cost.ts). */
export const RELAY_LANES = 8;

interface PendingCopy {
  readonly payload: QueuedCopy['payload'];
  readonly sendAtMs: number;
  readonly sequenceNumber: string;
  /** A backup of the api's own copy waits this much past the due time (API_COPY_BACKUP_DELAY_SECONDS). */
  readonly minDelaySeconds: number;
}

/**
 * How long past its due time the relay holds back its copy of a message the api already put on the
 * queue (`api_copy`, INSERT only): longer than a send on a healthy relay takes, so the sender finds the
 * message `sent` and drops the copy after one read, instead of finding it `sending` and hiding the
 * copy in flight for the whole lease. It is still the backup: if the api's copy never made it, the
 * message goes this much later.
 */
export const API_COPY_BACKUP_DELAY_SECONDS = 5;

function routeDispatch(image: StateImage, deps: RelayDeps): DispatchDecision {
  return decideDispatch({
    sendAt: new Date(image.send_at),
    now: deps.now(),
    directDelayMaxSeconds: deps.directDelayMaxSeconds,
    scheduleLeadSeconds: deps.scheduleLeadSeconds,
  });
}
