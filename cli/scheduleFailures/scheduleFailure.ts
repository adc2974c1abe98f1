/**
 * What EventBridge Scheduler leaves on a schedule's dead-letter queue when it could not deliver the
 * schedule to the send queue: the target's input as the body (our `{v, id, rev}` copy) and message
 * attributes that say why — ERROR_CODE, ERROR_MESSAGE, SCHEDULE_ARN, TARGET_ARN, RETRY_ATTEMPTS,
 * EXECUTION_ID (the local emulator, local/scheduler/deliverScheduleInput.ts, sends the same).
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type DispatchPayload, parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { type DeadLetter, SqsDeadLetterQueue } from '../deadLetters/SqsDeadLetterQueue.js';

export interface ScheduleFailureDeps {
  readonly sqs: SQSClient;
  /** The schedules' dead-letter queue (stack output ScheduleDeadLetterQueueUrl). */
  readonly scheduleDlqUrl: string;
  /** Where a redriven copy goes (redrive only). */
  readonly sendQueueUrl: string;
  readonly table: { readonly documents: DynamoDBDocumentClient; readonly tableName: string };
  readonly now: () => Date;
  /** Long-poll seconds for each receive; 0 in tests. @default 1 */
  readonly waitSeconds?: number;
}

/** One dead-lettered schedule as the commands read it; never the message's addresses or content. */
export interface ScheduleFailure {
  /** The copy the schedule carried, or null when its body is not a `{v, id, rev}` payload. */
  readonly copy: DispatchPayload | null;
  /** Why the body is unreadable, when it is. */
  readonly unreadable: string | null;
  /** Scheduler's ERROR_CODE (e.g. AWS.SQS.QueueDoesNotExist, AccessDenied, TargetDeliveryFailed). */
  readonly errorCode: string | null;
  /** The schedule's name: the last part of SCHEDULE_ARN (`…:schedule/{group}/{name}`). */
  readonly scheduleName: string | null;
  readonly sqsMessageId: string | null;
}

export function readScheduleFailure(letter: DeadLetter): ScheduleFailure {
  const parsed = parseDispatchPayload(letter.body);
  const arn = letter.attributes.SCHEDULE_ARN;
  return {
    copy: parsed.ok ? parsed.payload : null,
    unreadable: parsed.ok ? null : parsed.reason,
    errorCode: letter.attributes.ERROR_CODE ?? null,
    scheduleName: arn === undefined ? null : arn.slice(arn.lastIndexOf('/') + 1) || null,
    sqsMessageId: letter.sqsMessageId,
  };
}

export function scheduleDeadLetterQueue(
  deps: Pick<ScheduleFailureDeps, 'sqs' | 'scheduleDlqUrl' | 'waitSeconds'>,
): SqsDeadLetterQueue {
  return new SqsDeadLetterQueue(deps.sqs, deps.scheduleDlqUrl, {
    ...(deps.waitSeconds !== undefined ? { waitSeconds: deps.waitSeconds } : {}),
    name: 'the schedule DLQ',
  });
}
