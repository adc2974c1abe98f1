import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  type SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { formatAtExpression } from '../core/dispatchDecision.js';
import { encodeDispatchPayload } from '../core/dispatchPayload.js';
import type { OneTimeSchedule, Scheduler } from '../ports/Scheduler.js';

export interface EventBridgeSchedulerOptions {
  /** The schedule group (POSTDATE_SCHEDULE_GROUP). */
  readonly groupName: string;
  /** The send queue's ARN (POSTDATE_SEND_QUEUE_ARN): every schedule's target. */
  readonly sendQueueArn: string;
  /** The role the scheduler assumes to send to the queue (POSTDATE_SCHEDULER_ROLE_ARN). */
  readonly roleArn: string;
  /** Where the scheduler puts a payload it could not deliver (POSTDATE_SCHEDULE_DLQ_ARN). */
  readonly deadLetterArn: string;
  /** @default 185 (the service's maximum) */
  readonly maximumRetryAttempts?: number;
  /**
   * How long the scheduler keeps retrying a delivery. After an hour the sweeper has long re-dispatched
   * the message from the table, so retrying longer only adds a stale copy.
   * @default 3600
   */
  readonly maximumEventAgeSeconds?: number;
}

/**
 * The Scheduler port on EventBridge Scheduler: one-time `at()` schedules in UTC, no flexible window,
 * deleted by the service after they fire, targeting the send queue with the payload as input.
 * `ConflictException` and `ResourceNotFoundException` are the two replay outcomes; both are
 * translated here, everything else is thrown unchanged.
 */
export class EventBridgeScheduler implements Scheduler {
  constructor(
    private readonly client: SchedulerClient,
    private readonly options: EventBridgeSchedulerOptions,
  ) {}

  async createOnce(schedule: OneTimeSchedule): Promise<'created' | 'exists'> {
    try {
      await this.client.send(
        new CreateScheduleCommand({
          Name: schedule.name,
          GroupName: this.options.groupName,
          ScheduleExpression: formatAtExpression(schedule.fireAt),
          ScheduleExpressionTimezone: 'UTC',
          FlexibleTimeWindow: { Mode: 'OFF' },
          ActionAfterCompletion: 'DELETE',
          State: 'ENABLED',
          Target: {
            Arn: this.options.sendQueueArn,
            RoleArn: this.options.roleArn,
            Input: encodeDispatchPayload(schedule.payload),
            RetryPolicy: {
              MaximumRetryAttempts: this.options.maximumRetryAttempts ?? 185,
              MaximumEventAgeInSeconds: this.options.maximumEventAgeSeconds ?? 3600,
            },
            DeadLetterConfig: { Arn: this.options.deadLetterArn },
          },
        }),
      );
      return 'created';
    } catch (error) {
      if (error instanceof ConflictException) return 'exists';
      throw error;
    }
  }

  async deleteIfExists(name: string): Promise<'deleted' | 'absent'> {
    try {
      await this.client.send(new DeleteScheduleCommand({ Name: name, GroupName: this.options.groupName }));
      return 'deleted';
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return 'absent';
      throw error;
    }
  }
}
