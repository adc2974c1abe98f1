import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { StoredSchedule } from './scheduleStore.js';
import { sendToQueueArn } from './sqsTarget.js';

/** Scheduler's defaults when a target has no RetryPolicy. */
const DEFAULT_RETRY_ATTEMPTS = 185;
const DEFAULT_EVENT_AGE_SECONDS = 86_400;
const MAX_RETRY_DELAY_MS = 60_000;

export type DeliveryOutcome = 'delivered' | 'dead-lettered' | 'dropped' | 'stopped';

export interface DeliveryResult {
  readonly outcome: DeliveryOutcome;
  /** Delivery attempts made (1 + retries). */
  readonly attempts: number;
  readonly lastError?: string;
}

export interface DeliveryOptions {
  readonly sqs: SQSClient;
  /** First retry delay; doubles per retry, capped at 60 s. */
  readonly retryBaseDelayMs: number;
  readonly signal: AbortSignal;
  /** Fault hook: make attempt `attempt` (1-based) fail as if the target had refused it. */
  readonly failAttempt?: (attempt: number) => boolean;
  readonly now?: () => number;
}

/**
 * Delivers a fired schedule's Input to its SQS target, retrying per the target's RetryPolicy
 * (attempts and event age) and, when both are spent, sending the Input to the DeadLetterConfig
 * queue with Scheduler's error attributes. Without a dead-letter queue the invocation is dropped.
 */
export async function deliverScheduleInput(
  schedule: StoredSchedule,
  firedAtMs: number,
  options: DeliveryOptions,
): Promise<DeliveryResult> {
  const now = options.now ?? Date.now;
  const { Target } = schedule;
  // An SQS message body cannot be empty; Scheduler sends "{}" for a target without Input (documented).
  const body = Target.Input ?? '{}';
  const maxRetries = Target.RetryPolicy?.MaximumRetryAttempts ?? DEFAULT_RETRY_ATTEMPTS;
  const maxAgeMs = (Target.RetryPolicy?.MaximumEventAgeInSeconds ?? DEFAULT_EVENT_AGE_SECONDS) * 1000;
  let attempts = 0;
  let lastError = '';
  for (;;) {
    attempts += 1;
    try {
      if (options.failAttempt?.(attempts))
        throw new Error('fault injected: the target refused the invocation');
      await sendToQueueArn(options.sqs, Target.Arn, body, {
        ...(Target.SqsParameters?.MessageGroupId
          ? { messageGroupId: Target.SqsParameters.MessageGroupId }
          : {}),
      });
      return { outcome: 'delivered', attempts };
    } catch (error) {
      lastError = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    }
    if (options.signal.aborted) return { outcome: 'stopped', attempts, lastError };
    const delay = Math.min(options.retryBaseDelayMs * 2 ** (attempts - 1), MAX_RETRY_DELAY_MS);
    if (attempts > maxRetries || now() + delay - firedAtMs > maxAgeMs) break;
    try {
      await sleep(delay, undefined, { signal: options.signal });
    } catch {
      return { outcome: 'stopped', attempts, lastError };
    }
  }
  const deadLetterArn = Target.DeadLetterConfig?.Arn;
  if (!deadLetterArn) return { outcome: 'dropped', attempts, lastError };
  try {
    await sendToQueueArn(options.sqs, deadLetterArn, body, {
      attributes: {
        ERROR_CODE: 'TargetDeliveryFailed',
        ERROR_MESSAGE: lastError.slice(0, 1000) || 'unknown error',
        EXECUTION_ID: randomUUID(),
        RETRY_ATTEMPTS: String(attempts - 1),
        SCHEDULE_ARN: schedule.Arn,
        TARGET_ARN: Target.Arn,
      },
    });
    return { outcome: 'dead-lettered', attempts, lastError };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { outcome: 'dropped', attempts, lastError: `${lastError}; dead-letter queue: ${reason}` };
  }
}
