import { isRecurringExpression, parseAtExpression, ScheduleExpressionError } from './atExpression.js';
import {
  type ScheduleStore,
  type ScheduleTarget,
  type StoredGroup,
  type StoredSchedule,
  scheduleKey,
} from './scheduleStore.js';

export type SchedulerErrorType = 'ConflictException' | 'ResourceNotFoundException' | 'ValidationException';

const STATUS: Record<SchedulerErrorType, number> = {
  ConflictException: 409,
  ResourceNotFoundException: 404,
  ValidationException: 400,
};

/** An error the emulator answers with, in the Scheduler API's shape (status, `x-amzn-errortype`, `{Message}`). */
export class SchedulerApiError extends Error {
  override readonly name = 'SchedulerApiError';
  readonly status: number;
  constructor(
    readonly type: SchedulerErrorType,
    message: string,
  ) {
    super(message);
    this.status = STATUS[type];
  }
}

export const DEFAULT_GROUP = 'default';
const REGION = 'us-east-1';
const ACCOUNT = '123456789012';
const NAME_PATTERN = /^[0-9a-zA-Z-_.]{1,64}$/;
const SQS_ARN_PATTERN = /^arn:aws[\w-]*:sqs:[\w-]+:\d{12}:[\w-]{1,80}(\.fifo)?$/;

/** The JSON body of CreateSchedule and UpdateSchedule (timestamps in epoch seconds). */
export interface ScheduleInput {
  ScheduleExpression?: unknown;
  ScheduleExpressionTimezone?: unknown;
  GroupName?: unknown;
  Description?: unknown;
  State?: unknown;
  ActionAfterCompletion?: unknown;
  FlexibleTimeWindow?: unknown;
  Target?: unknown;
  StartDate?: unknown;
  EndDate?: unknown;
  KmsKeyArn?: unknown;
  ClientToken?: unknown;
}

export interface ListInput {
  readonly groupName?: string;
  readonly namePrefix?: string;
  readonly state?: string;
  readonly maxResults?: number;
  readonly nextToken?: string;
}

/**
 * The Scheduler operations over the store. Validation follows the API reference closely enough
 * that a request the real service rejects is rejected here too, with the same error name.
 */
export class SchedulerService {
  constructor(
    private readonly store: ScheduleStore,
    private readonly now: () => number,
    private readonly onChange: (key: string) => void,
  ) {}

  createSchedule(name: string, input: ScheduleInput): { ScheduleArn: string } {
    const groupName = this.#groupName(input.GroupName);
    this.#requireGroup(groupName);
    if (this.store.getSchedule(groupName, name)) {
      throw new SchedulerApiError('ConflictException', `Schedule ${name} already exists.`);
    }
    const nowSeconds = this.now() / 1000;
    const schedule = this.#validate(name, groupName, input, nowSeconds, nowSeconds);
    this.store.putSchedule(schedule);
    this.onChange(scheduleKey(groupName, name));
    return { ScheduleArn: schedule.Arn };
  }

  updateSchedule(name: string, input: ScheduleInput): { ScheduleArn: string } {
    const groupName = this.#groupName(input.GroupName);
    const existing = this.#require(groupName, name);
    const schedule = this.#validate(name, groupName, input, existing.CreationDate, this.now() / 1000);
    this.store.putSchedule(schedule);
    this.onChange(scheduleKey(groupName, name));
    return { ScheduleArn: schedule.Arn };
  }

  getSchedule(name: string, groupName: string | undefined): Record<string, unknown> {
    const schedule = this.#require(this.#groupName(groupName), name);
    return {
      Arn: schedule.Arn,
      GroupName: schedule.GroupName,
      Name: schedule.Name,
      ScheduleExpression: schedule.ScheduleExpression,
      ScheduleExpressionTimezone: schedule.ScheduleExpressionTimezone,
      Description: schedule.Description,
      StartDate: schedule.StartDate,
      EndDate: schedule.EndDate,
      State: schedule.State,
      CreationDate: schedule.CreationDate,
      LastModificationDate: schedule.LastModificationDate,
      KmsKeyArn: schedule.KmsKeyArn,
      Target: schedule.Target,
      FlexibleTimeWindow: schedule.FlexibleTimeWindow,
      ActionAfterCompletion: schedule.ActionAfterCompletion,
    };
  }

  deleteSchedule(name: string, groupName: string | undefined): Record<string, never> {
    const group = this.#groupName(groupName);
    this.#require(group, name);
    this.store.deleteSchedule(group, name);
    this.onChange(scheduleKey(group, name));
    return {};
  }

  listSchedules(input: ListInput): { Schedules: Record<string, unknown>[]; NextToken?: string } {
    const maxResults = input.maxResults ?? 100;
    if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > 100) {
      throw new SchedulerApiError('ValidationException', 'MaxResults must be between 1 and 100.');
    }
    if (input.state !== undefined && input.state !== 'ENABLED' && input.state !== 'DISABLED') {
      throw new SchedulerApiError('ValidationException', `Invalid State ${input.state}.`);
    }
    let after = '';
    if (input.nextToken) {
      after = Buffer.from(input.nextToken, 'base64url').toString('utf8');
      if (!after) throw new SchedulerApiError('ValidationException', 'Invalid NextToken.');
    }
    const matching = this.store
      .schedules()
      .filter((s) => input.groupName === undefined || s.GroupName === input.groupName)
      .filter((s) => input.namePrefix === undefined || s.Name.startsWith(input.namePrefix))
      .filter((s) => input.state === undefined || s.State === input.state)
      .filter((s) => scheduleKey(s.GroupName, s.Name) > after);
    const page = matching.slice(0, maxResults);
    const last = page[page.length - 1];
    return {
      Schedules: page.map((s) => ({
        Arn: s.Arn,
        Name: s.Name,
        GroupName: s.GroupName,
        State: s.State,
        CreationDate: s.CreationDate,
        LastModificationDate: s.LastModificationDate,
        Target: { Arn: s.Target.Arn },
      })),
      ...(matching.length > maxResults && last
        ? { NextToken: Buffer.from(scheduleKey(last.GroupName, last.Name)).toString('base64url') }
        : {}),
    };
  }

  createScheduleGroup(name: string): { ScheduleGroupArn: string } {
    if (!NAME_PATTERN.test(name)) throw new SchedulerApiError('ValidationException', `Invalid Name ${name}.`);
    if (this.#group(name))
      throw new SchedulerApiError('ConflictException', `Schedule group ${name} already exists.`);
    const nowSeconds = this.now() / 1000;
    const group: StoredGroup = {
      Name: name,
      Arn: groupArn(name),
      CreationDate: nowSeconds,
      LastModificationDate: nowSeconds,
    };
    this.store.putGroup(group);
    return { ScheduleGroupArn: group.Arn };
  }

  getScheduleGroup(name: string): Record<string, unknown> {
    const group = this.#group(name);
    if (!group)
      throw new SchedulerApiError('ResourceNotFoundException', `Schedule group ${name} does not exist.`);
    return { ...group, State: 'ACTIVE' };
  }

  #group(name: string): StoredGroup | undefined {
    if (name === DEFAULT_GROUP) {
      return { Name: DEFAULT_GROUP, Arn: groupArn(DEFAULT_GROUP), CreationDate: 0, LastModificationDate: 0 };
    }
    return this.store.getGroup(name);
  }

  #groupName(value: unknown): string {
    if (value === undefined || value === null || value === '') return DEFAULT_GROUP;
    if (typeof value !== 'string' || !NAME_PATTERN.test(value)) {
      throw new SchedulerApiError('ValidationException', `Invalid GroupName ${String(value)}.`);
    }
    return value;
  }

  #requireGroup(groupName: string): void {
    if (!this.#group(groupName)) {
      throw new SchedulerApiError('ResourceNotFoundException', `Schedule group ${groupName} does not exist.`);
    }
  }

  #require(groupName: string, name: string): StoredSchedule {
    const schedule = this.store.getSchedule(groupName, name);
    if (!schedule)
      throw new SchedulerApiError('ResourceNotFoundException', `Schedule ${name} does not exist.`);
    return schedule;
  }

  #validate(
    name: string,
    groupName: string,
    input: ScheduleInput,
    creationDate: number,
    nowSeconds: number,
  ): StoredSchedule {
    const fail = (message: string): never => {
      throw new SchedulerApiError('ValidationException', message);
    };
    if (!NAME_PATTERN.test(name)) fail(`Invalid Name ${name}.`);
    const expression = input.ScheduleExpression;
    if (typeof expression !== 'string' || expression.length === 0 || expression.length > 256) {
      return fail('ScheduleExpression is required.');
    }
    const timezone = optionalString(input.ScheduleExpressionTimezone, 'ScheduleExpressionTimezone', fail);
    let fireAtMs: number | null = null;
    if (isRecurringExpression(expression)) {
      if (timezone) parseTimezoneOnly(timezone, fail);
    } else {
      try {
        fireAtMs = parseAtExpression(expression, timezone ?? 'UTC');
      } catch (error) {
        if (error instanceof ScheduleExpressionError) return fail(error.message);
        throw error;
      }
      // The whole second named by at() has passed: see local/EMULATORS.md (past one-time schedules).
      if (fireAtMs + 1000 <= nowSeconds * 1000) {
        fail(`The schedule expression ${expression} is in the past.`);
      }
    }
    const state = input.State ?? 'ENABLED';
    if (state !== 'ENABLED' && state !== 'DISABLED') return fail(`Invalid State ${String(state)}.`);
    const after = input.ActionAfterCompletion ?? 'NONE';
    if (after !== 'NONE' && after !== 'DELETE')
      return fail(`Invalid ActionAfterCompletion ${String(after)}.`);
    return {
      Name: name,
      GroupName: groupName,
      Arn: `arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule/${groupName}/${name}`,
      ScheduleExpression: expression,
      ...(timezone ? { ScheduleExpressionTimezone: timezone } : {}),
      ...withOptional('Description', optionalString(input.Description, 'Description', fail)),
      ...withOptional('KmsKeyArn', optionalString(input.KmsKeyArn, 'KmsKeyArn', fail)),
      ...withOptional('StartDate', optionalNumber(input.StartDate, 'StartDate', fail)),
      ...withOptional('EndDate', optionalNumber(input.EndDate, 'EndDate', fail)),
      State: state,
      ActionAfterCompletion: after,
      FlexibleTimeWindow: validateWindow(input.FlexibleTimeWindow, fail),
      Target: validateTarget(input.Target, fail),
      CreationDate: creationDate,
      LastModificationDate: nowSeconds,
      fireAtMs,
      completedAtMs: null,
    };
  }
}

function groupArn(name: string): string {
  return `arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule-group/${name}`;
}

function withOptional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}

function optionalString(value: unknown, field: string, fail: (m: string) => never): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return fail(`${field} must be a string.`);
  return value;
}

function optionalNumber(value: unknown, field: string, fail: (m: string) => never): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') return fail(`${field} must be a timestamp.`);
  return value;
}

function parseTimezoneOnly(timezone: string, fail: (m: string) => never): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    fail(`Invalid ScheduleExpressionTimezone ${timezone}`);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function validateWindow(value: unknown, fail: (m: string) => never): StoredSchedule['FlexibleTimeWindow'] {
  if (!isRecord(value)) return fail('FlexibleTimeWindow is required.');
  if (value.Mode === 'OFF') return { Mode: 'OFF' };
  if (value.Mode !== 'FLEXIBLE') return fail(`Invalid FlexibleTimeWindow Mode ${String(value.Mode)}.`);
  const minutes = value.MaximumWindowInMinutes;
  if (typeof minutes !== 'number' || !Number.isInteger(minutes) || minutes < 1 || minutes > 1440) {
    return fail('MaximumWindowInMinutes must be between 1 and 1440 when Mode is FLEXIBLE.');
  }
  return { Mode: 'FLEXIBLE', MaximumWindowInMinutes: minutes };
}

function validateTarget(value: unknown, fail: (m: string) => never): ScheduleTarget {
  if (!isRecord(value)) return fail('Target is required.');
  const { Arn, RoleArn, Input, RetryPolicy, DeadLetterConfig, SqsParameters } = value;
  if (typeof Arn !== 'string' || Arn.length === 0) return fail('Target Arn is required.');
  if (typeof RoleArn !== 'string' || RoleArn.length === 0) return fail('Target RoleArn is required.');
  if (!SQS_ARN_PATTERN.test(Arn)) {
    return fail(`The local Scheduler emulator only delivers to SQS queues, not to ${Arn}.`);
  }
  if (Input !== undefined && (typeof Input !== 'string' || Input.length > 8192)) {
    return fail('Target Input must be a string of at most 8192 characters.');
  }
  const target: {
    Arn: string;
    RoleArn: string;
    Input?: string;
    RetryPolicy?: ScheduleTarget['RetryPolicy'];
    DeadLetterConfig?: ScheduleTarget['DeadLetterConfig'];
    SqsParameters?: ScheduleTarget['SqsParameters'];
  } = { Arn, RoleArn };
  if (typeof Input === 'string') target.Input = Input;
  if (RetryPolicy !== undefined) {
    if (!isRecord(RetryPolicy)) return fail('RetryPolicy must be an object.');
    const attempts = RetryPolicy.MaximumRetryAttempts;
    const age = RetryPolicy.MaximumEventAgeInSeconds;
    if (attempts !== undefined && (typeof attempts !== 'number' || attempts < 0 || attempts > 185)) {
      return fail('MaximumRetryAttempts must be between 0 and 185.');
    }
    if (age !== undefined && (typeof age !== 'number' || age < 60 || age > 86400)) {
      return fail('MaximumEventAgeInSeconds must be between 60 and 86400.');
    }
    target.RetryPolicy = {
      ...(typeof attempts === 'number' ? { MaximumRetryAttempts: attempts } : {}),
      ...(typeof age === 'number' ? { MaximumEventAgeInSeconds: age } : {}),
    };
  }
  if (DeadLetterConfig !== undefined) {
    if (!isRecord(DeadLetterConfig)) return fail('DeadLetterConfig must be an object.');
    const dlqArn = DeadLetterConfig.Arn;
    if (dlqArn !== undefined && (typeof dlqArn !== 'string' || !SQS_ARN_PATTERN.test(dlqArn))) {
      return fail('DeadLetterConfig Arn must be an SQS queue ARN.');
    }
    target.DeadLetterConfig = typeof dlqArn === 'string' ? { Arn: dlqArn } : {};
  }
  if (isRecord(SqsParameters) && typeof SqsParameters.MessageGroupId === 'string') {
    target.SqsParameters = { MessageGroupId: SqsParameters.MessageGroupId };
  }
  return target;
}
