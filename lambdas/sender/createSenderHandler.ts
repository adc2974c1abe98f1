import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { Config } from '../core/config.js';
import { errorForLog } from '../core/errorForLog.js';
import { runWithConcurrency } from '../core/runWithConcurrency.js';
import type { CopyVisibility } from '../ports/CopyVisibility.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { Mailer } from '../ports/Mailer.js';
import type { SenderStore } from '../store/senderTransitions.js';
import { type CopyVerdict, processCopy, type SenderLog, type SenderSettings } from './processCopy.js';
import { NO_METRICS, type SenderMetrics } from './senderMetrics.js';
import { tokenBucket, UNLIMITED } from './sendRateLimiter.js';

export interface SenderDependencies {
  readonly store: SenderStore;
  readonly mailer: Mailer;
  /** Where early copies go back with their exact remaining delay. */
  readonly queue: DispatchQueue;
  /** Sets when a kept copy is visible again (backoff, DLQ, live lease). */
  readonly visibility: CopyVisibility;
  readonly settings: SenderSettings;
  /** POSTDATE_MAX_SEND_RATE, messages per second per container; undefined is unlimited. */
  readonly maxSendRate?: number | undefined;
  /** Copies of one batch worked on at once. @default 4 */
  readonly concurrency?: number;
  readonly now: () => Date;
  readonly random: () => number;
  /** Waits in-process (a copy early by under a second, the rate limit). @default real timers */
  readonly sleep?: (milliseconds: number) => Promise<void>;
  /** A lease owner unique per attempt. @default a random UUID */
  readonly newLeaseOwner?: () => string;
  readonly log?: SenderLog;
  readonly metrics?: SenderMetrics;
}

/** The sender's settings from the validated configuration (DESIGN §8). */
export function senderSettings(config: Config, maxEarlyWaitMs = 1000): SenderSettings {
  return {
    maxAttempts: config.maxAttempts,
    retryBaseSeconds: config.retryBaseSeconds,
    retryCapSeconds: config.retryCapSeconds,
    leaseSeconds: config.leaseSeconds,
    retentionDays: config.retentionDays,
    maxEarlyWaitMs,
  };
}

const SILENT: SenderLog = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * The sender's handler logic for an SQS batch (partial batch responses): every copy is processed
 * (a few at a time) and ends acknowledged or reported as a failure with the visibility it needs.
 * It never throws for a copy; an unexpected error (e.g. DynamoDB unreachable) keeps that copy for
 * the queue's own visibility timeout and the others carry on.
 */
export function createSenderHandler(
  deps: SenderDependencies,
): (event: SQSEvent) => Promise<SQSBatchResponse> {
  const wait = deps.sleep ?? ((milliseconds: number) => sleep(milliseconds));
  const log = deps.log ?? SILENT;
  const copyDeps = {
    store: deps.store,
    mailer: deps.mailer,
    queue: deps.queue,
    settings: deps.settings,
    now: deps.now,
    random: deps.random,
    sleep: wait,
    newLeaseOwner: deps.newLeaseOwner ?? (() => randomUUID()),
    // One bucket per warm container: created with the handler, shared by every batch.
    rateLimiter:
      deps.maxSendRate === undefined
        ? UNLIMITED
        : tokenBucket({ rate: deps.maxSendRate, now: () => deps.now().getTime(), sleep: wait }),
    log,
    metrics: deps.metrics ?? NO_METRICS,
  };

  async function verdictFor(record: SQSRecord): Promise<CopyVerdict> {
    try {
      return await processCopy(
        {
          sqsMessageId: record.messageId,
          body: record.body,
          receiveCount: receiveCountOf(record),
        },
        copyDeps,
      );
    } catch (error) {
      log.error('sender failed on a copy; it will come back', {
        sqsMessageId: record.messageId,
        error: errorForLog(error),
      });
      return { kind: 'keep', visibilitySeconds: undefined, reason: 'unexpected error' };
    }
  }

  return async function sendBatch(event: SQSEvent): Promise<SQSBatchResponse> {
    const verdicts = await runWithConcurrency(event.Records, deps.concurrency ?? 4, async (record) => {
      const verdict = await verdictFor(record);
      if (verdict.kind === 'keep' && verdict.visibilitySeconds !== undefined) {
        const changed = await deps.visibility.change(record.receiptHandle, verdict.visibilitySeconds);
        if (!changed) {
          log.warn('sender could not change a copy visibility', {
            sqsMessageId: record.messageId,
            visibilitySeconds: verdict.visibilitySeconds,
          });
        }
      }
      return { record, verdict };
    });
    return {
      batchItemFailures: verdicts
        .filter(({ verdict }) => verdict.kind === 'keep')
        .map(({ record }) => ({ itemIdentifier: record.messageId })),
    };
  };
}

function receiveCountOf(record: SQSRecord): number {
  const count = Number(record.attributes.ApproximateReceiveCount);
  return Number.isInteger(count) && count >= 1 ? count : 1;
}
