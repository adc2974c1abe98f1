import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { MailboxSimulator } from '../adapters/MailboxSimulator.js';
import type { Config } from '../core/config.js';
import { parseDispatchPayload } from '../core/dispatchPayload.js';
import { errorForLog } from '../core/errorForLog.js';
import { SENDER_METRIC } from '../core/metricNames.js';
import { backstopReceiveCount, receiveCountOf, visibilitySinceReceive } from '../core/queueLimits.js';
import { DEFAULT_RELAY } from '../core/relays.js';
import { type Lane, runInLanes } from '../core/runWithConcurrency.js';
import { createTemplateRenderer } from '../core/templateRenderer.js';
import type { AttachmentStore } from '../ports/AttachmentStore.js';
import type { CopyVisibility } from '../ports/CopyVisibility.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { Log } from '../ports/Log.js';
import type { Mailer } from '../ports/Mailer.js';
import { NO_METRICS, type SenderMetrics } from '../ports/SenderMetrics.js';
import type { SenderStore } from '../ports/SenderStore.js';
import type { TemplateVersions } from '../ports/TemplateStore.js';
import {
  type CopyVerdict,
  type InvocationTime,
  moveToDeadLetters,
  type SenderRelay,
  type SenderSettings,
  SHORT_RETRY_SECONDS,
} from './copyRun.js';
import { processCopy } from './processCopy.js';
import { type RelayGate, tokenBucket, UNLIMITED } from './relayGate.js';

export interface SenderDependencies {
  readonly store: SenderStore;
  /** Where template messages' pinned versions are read (DESIGN §10). */
  readonly templates: TemplateVersions;
  readonly mailer: Mailer;
  /** Test messages' mailer (DESIGN §14); default the mailbox simulator (adapters/MailboxSimulator.ts). */
  readonly simulator?: ((attemptsBefore: number) => Mailer) | undefined;
  /** Where attachments are asked for before MAIL FROM and read as they are sent (DESIGN §13, decision 0171). */
  readonly attachments?: Pick<AttachmentStore, 'describe' | 'open'> | undefined;
  /** Where early copies go back with their exact remaining delay. */
  readonly queue: DispatchQueue;
  /** The send queue's DLQ: copies of messages that became `dead` (DESIGN §5, "Dead means dead"). */
  readonly deadLetters: DispatchQueue;
  /** Sets when a kept copy is visible again (backoff, DLQ, live lease). */
  readonly visibility: CopyVisibility;
  readonly settings: SenderSettings;
  /**
   * The function timeout (POSTDATE_SENDER_TIMEOUT_SECONDS): the time an invocation has when it is
   * called without a Lambda context (tests). With one, `getRemainingTimeInMillis()` decides.
   */
  readonly timeoutSeconds: number;
  /**
   * This container's share of POSTDATE_MAX_SEND_RATE (the relay's rate for the fleet, in recipients
   * per second, divided by POSTDATE_SENDER_MAX_CONCURRENCY); undefined is unlimited.
   */
  readonly maxSendRate?: number | undefined;
  /** Copies of one batch worked on at once. @default SENDER_LANES */
  readonly concurrency?: number;
  readonly now: () => Date;
  readonly random: () => number;
  /** Waits in-process (a copy early by under a second, the rate limit). @default real timers */
  readonly sleep?: (milliseconds: number) => Promise<void>;
  /** A lease owner unique per attempt. @default a random UUID */
  readonly newLeaseOwner?: () => string;
  readonly log?: Log;
  readonly metrics?: SenderMetrics;
  /** The sending gate (relay breaker, operator pause: sender/relayGate.ts); absent, nothing waits. */
  readonly relayGate?: RelayGate;
  /** The name of the relay `mailer` sends through (DESIGN §15). @default 'default' */
  readonly relayName?: string;
  /**
   * The relays after the first, in order, each with its own mailer, gate and this container's share
   * of its rate (`maxSendRate`, recipients per second; absent: unlimited) (DESIGN §15).
   */
  readonly failover?: readonly FailoverRelay[];
}

/** A relay after the first, as the wiring gives it: the sender makes its token bucket. */
export type FailoverRelay = Omit<SenderRelay, 'rateLimiter'> & { readonly maxSendRate?: number | undefined };

/** The sender's settings from the validated configuration (DESIGN §8). */
export function senderSettings(config: Config, maxEarlyWaitMs = 1000): SenderSettings {
  return {
    maxAttempts: config.maxAttempts,
    retryBaseSeconds: config.retryBaseSeconds,
    retryCapSeconds: config.retryCapSeconds,
    leaseSeconds: config.leaseSeconds,
    retentionDays: config.retentionDays,
    maxEarlyWaitMs,
    timing: {
      smtpTimeoutSeconds: config.smtpTimeoutSeconds,
      smtpReplyTimeoutSeconds: config.smtpReplyTimeoutSeconds,
    },
    allowedFrom: config.allowedFrom,
    shortRetrySeconds: SHORT_RETRY_SECONDS,
  };
}

/** A log that goes nowhere: the default when the wiring gives none. */
export const SILENT: Log = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * The sender's handler logic for an SQS batch (partial batch responses): every copy is processed
 * (a few at a time) and ends acknowledged or reported as a failure with the visibility it needs.
 * It never throws for a copy; an unexpected error (e.g. DynamoDB unreachable) keeps that copy for
 * the queue's own visibility timeout and the others carry on.
 */
export function createSenderHandler(
  deps: SenderDependencies,
): (event: SQSEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>) => Promise<SQSBatchResponse> {
  const wait = deps.sleep ?? ((milliseconds: number) => sleep(milliseconds));
  const log = deps.log ?? SILENT;
  // One bucket per relay per warm container (DESIGN §5 "Rate", §15): created with the handler,
  // shared by every batch.
  const bucket = (rate: number | undefined) =>
    rate === undefined ? UNLIMITED : tokenBucket({ rate, now: () => deps.now().getTime(), sleep: wait });
  const firstRate = bucket(deps.maxSendRate);
  const copyDeps = {
    store: deps.store,
    mailer: deps.mailer,
    simulator: deps.simulator ?? ((attemptsBefore: number) => new MailboxSimulator({ attemptsBefore })),
    attachments: deps.attachments,
    queue: deps.queue,
    deadLetters: deps.deadLetters,
    settings: deps.settings,
    now: deps.now,
    random: deps.random,
    sleep: wait,
    newLeaseOwner: deps.newLeaseOwner ?? (() => randomUUID()),
    rateLimiter: firstRate,
    // One renderer per warm container: each template version is read and compiled once.
    templates: createTemplateRenderer((ref) => deps.templates.getVersion(ref.tenant, ref.name, ref.version)),
    log,
    metrics: deps.metrics ?? NO_METRICS,
    relayGate: deps.relayGate,
    relays: [
      {
        name: deps.relayName ?? DEFAULT_RELAY,
        mailer: deps.mailer,
        gate: deps.relayGate,
        rateLimiter: firstRate,
      },
      ...(deps.failover ?? []).map(({ maxSendRate, ...relay }) => ({
        ...relay,
        rateLimiter: bucket(maxSendRate),
      })),
    ],
  };

  const backstop = backstopReceiveCount(deps.settings.maxAttempts);

  async function verdictFor(record: SQSRecord, time: InvocationTime, lane: Lane): Promise<CopyVerdict> {
    try {
      return await processCopy(
        {
          sqsMessageId: record.messageId,
          body: record.body,
          receiveCount: receiveCountOf(record.attributes),
        },
        copyDeps,
        time,
        lane,
      );
    } catch (error) {
      copyDeps.metrics.count(SENDER_METRIC.unexpectedErrors);
      log.error('sender failed on a copy; it will come back', {
        sqsMessageId: record.messageId,
        error: errorForLog(error),
      });
      return {
        kind: 'keep',
        visibilitySeconds: UNEXPECTED_ERROR_VISIBILITY_SECONDS,
        reason: 'unexpected error',
      };
    }
  }

  /**
   * A copy kept so often that the queue's backstop (maxReceiveCount) would move it to the DLQ while
   * its message is alive — receives that were no attempt (a live lease, out of time, a release) —
   * is replaced by a fresh copy with the same body, so the DLQ holds only what the sender put there.
   * A `dead` message's own copy whose move to the DLQ keeps failing is replaced by that move
   * (copyRun.ts `moveToDeadLetters`): a fresh copy on the send queue would have an SQS id the record
   * does not know, and be dropped. Answers whether the copy was replaced (and may be deleted).
   */
  async function refreshed(record: SQSRecord, verdict: CopyVerdict): Promise<boolean> {
    if (verdict.kind !== 'keep' || receiveCountOf(record.attributes) < backstop - 1) return false;
    const parsed = parseDispatchPayload(record.body);
    if (!parsed.ok) return false;
    const { id, rev } = parsed.payload;
    if (verdict.deadCopy !== undefined) {
      // A move that fails again leaves the copy to the queue's backstop, which moves it itself.
      const copy = { sqsMessageId: record.messageId };
      const moved = await moveToDeadLetters(copyDeps, { id, rev, copy }, verdict.deadCopy);
      return moved.kind === 'ack';
    }
    const { failed } = await deps.queue.enqueue([
      { payload: parsed.payload, delaySeconds: verdict.visibilitySeconds ?? 0 },
    ]);
    return failed.length === 0;
  }

  return async function sendBatch(event: SQSEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>) {
    // The invocation's deadline on the sender's clock: every copy asks it before it claims.
    const startedMs = deps.now().getTime();
    const deadline = startedMs + (context?.getRemainingTimeInMillis() ?? deps.timeoutSeconds * 1000);
    const time: InvocationTime = { remainingMs: () => deadline - deps.now().getTime() };
    // A few copies work at once (SENDER_LANES); a copy waiting out its last moment before its send
    // time steps out of its lane meanwhile (processCopy.ts, decision 0098).
    const lanes = deps.concurrency ?? SENDER_LANES;
    const verdicts = await runInLanes(event.Records, lanes, async (record, _index, lane) => {
      const verdict = await verdictFor(record, time, lane);
      if (await refreshed(record, verdict)) return { record, verdict: { kind: 'ack', reason: 'refreshed' } };
      if (verdict.kind === 'keep' && verdict.visibilitySeconds !== undefined) {
        // Within the 12 hours SQS counts from the receive (the batch's, before this invocation began).
        const seconds = visibilitySinceReceive(verdict.visibilitySeconds, deps.now().getTime() - startedMs);
        const change = await deps.visibility.change(record.receiptHandle, seconds);
        if (!change.changed) {
          log.warn('sender could not change a copy visibility', {
            sqsMessageId: record.messageId,
            visibilitySeconds: verdict.visibilitySeconds,
            error: errorForLog(change.error),
          });
        }
      }
      return { record, verdict };
    });
    const response: SQSBatchResponse = {
      batchItemFailures: verdicts
        .filter(({ verdict }) => verdict.kind === 'keep')
        .map(({ record }) => ({ itemIdentifier: record.messageId })),
    };
    return response;
  };
}

/**
 * Copies of one batch worked on at once: as many as the mailer's pooled SMTP sessions
 * (NodemailerMailer's `maxConnections` default). An invocation lasts about ceil(batch / lanes)
 * copies, which the cost benchmark's duration model reads (bench/cost.ts).
 */
export const SENDER_LANES = 4;

/** An unexpected error (DynamoDB unreachable, say) brings the copy back soon, not after 6 × the timeout. */
const UNEXPECTED_ERROR_VISIBILITY_SECONDS = 30;
