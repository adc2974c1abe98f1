import { ArnFormat, Aws, Duration, Names, Stack, Token } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { RELAY_STREAM_FILTER } from '../../lambdas/store/tableLayout.js';
import { RELAY_STREAM } from '../eventSourceLayout.js';
import { RESOURCE_ENV } from '../functionEnvironment.js';
import { SWEEPER_TIMEOUT_SECONDS } from '../postdateProps.js';
import { QUEUE } from '../queueLayout.js';
import { acknowledge } from './acknowledge.js';
import { PostdateFunction } from './postdateFunction.js';
import { createFailureQueue, createSendQueues } from './queues.js';
import type { Storage } from './Storage.js';

export { RELAY_STREAM } from '../eventSourceLayout.js';

/** Prefix of every schedule name the relay creates (`pd-{id}-{rev}`, lambdas/ports/Scheduler.ts). */
const SCHEDULE_NAME_PREFIX = 'pd-';

/**
 * The `due` index partitions the sweeper reads: overdue (`due#{shard}`), waiting for an operator
 * (`wait#{status}#{shard}`) and dead without a DLQ copy (`owed#dead#{shard}`), as
 * lambdas/store/messageRecord.ts builds them (which lib/ may not import; test/iam/permissions.test.ts
 * holds them equal). Never the index's failed webhook deliveries (`WHFL#…`, the API's).
 */
const SWEPT_DUE_PARTITIONS = ['due#*', 'wait#*', 'owed#dead#*'];

export interface DispatchProps {
  readonly storage: Storage;
  readonly maxAttempts: number;
  /** The sender's timeout: the send queue's visibility timeout is six times it. */
  readonly senderTimeoutSeconds: number;
  readonly sweepInterval: Duration;
  readonly configEnvironment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
}

/**
 * Everything between a stored message and the send queue: the queues, the relay (stream → queue or
 * schedule), the schedule group with the role Scheduler assumes, and the sweeper that re-dispatches
 * what stopped moving.
 */
export class Dispatch extends Construct {
  readonly sendQueue: sqs.Queue;
  readonly sendDeadLetterQueue: sqs.Queue;
  readonly relayFailureQueue: sqs.Queue;
  readonly scheduleDeadLetterQueue: sqs.Queue;
  readonly scheduleGroupName: string;
  readonly schedulerRole: iam.Role;
  readonly relay: PostdateFunction;
  readonly sweeper: PostdateFunction;

  constructor(scope: Construct, id: string, props: DispatchProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const table = props.storage.table;

    const queues = createSendQueues(this, {
      maxAttempts: props.maxAttempts,
      senderTimeoutSeconds: props.senderTimeoutSeconds,
    });
    this.sendQueue = queues.send;
    this.sendDeadLetterQueue = queues.sendDeadLetter;
    this.relayFailureQueue = createFailureQueue(this, 'RelayFailureQueue', QUEUE.relayFailures);
    this.scheduleDeadLetterQueue = createFailureQueue(
      this,
      'ScheduleDeadLetterQueue',
      QUEUE.scheduleDeadLetter,
    );
    acknowledgeFailureQueue(
      this.relayFailureQueue,
      "the relay event source mapping's on-failure destination",
    );
    acknowledgeFailureQueue(this.scheduleDeadLetterQueue, 'the dead-letter queue of every schedule');

    // The schedule group: its name derives from the construct path, so two stacks never collide.
    this.scheduleGroupName = Names.uniqueResourceName(this, { maxLength: 64, separator: '-' });
    const group = new scheduler.CfnScheduleGroup(this, 'ScheduleGroup', { name: this.scheduleGroupName });

    // The role EventBridge Scheduler assumes to deliver a schedule's payload: only from this account
    // and this group (confused-deputy guard), and it may only send to the send queue and its DLQ.
    this.schedulerRole = new iam.Role(this, 'SchedulerRole', {
      description: 'EventBridge Scheduler delivers Postdate schedules to the send queue',
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com').withConditions({
        StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
        ArnEquals: { 'aws:SourceArn': group.attrArn },
      }),
    });
    // It only sends: to its target, or what it could not deliver to its DLQ.
    this.schedulerRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['sqs:SendMessage'],
        resources: [this.sendQueue.queueArn, this.scheduleDeadLetterQueue.queueArn],
      }),
    );

    const tableEnv = { [RESOURCE_ENV.tableName]: table.tableName };
    const sendQueueEnv = {
      [RESOURCE_ENV.sendQueueUrl]: this.sendQueue.queueUrl,
      [RESOURCE_ENV.sendQueueArn]: this.sendQueue.queueArn,
    };

    // The relay: filtered stream → SQS (due within 15 min) or a one-time schedule (later).
    this.relay = new PostdateFunction(this, 'Relay', {
      name: 'relay',
      description: 'Postdate relay: outbox stream to the send queue or a one-time schedule',
      timeout: Duration.seconds(RELAY_STREAM.timeoutSeconds),
      memorySize: 512,
      logRetention: props.logRetention,
      environment: {
        ...props.configEnvironment,
        ...tableEnv,
        ...sendQueueEnv,
        [RESOURCE_ENV.scheduleGroup]: this.scheduleGroupName,
        [RESOURCE_ENV.schedulerRoleArn]: this.schedulerRole.roleArn,
        [RESOURCE_ENV.scheduleDeadLetterArn]: this.scheduleDeadLetterQueue.queueArn,
      },
    });
    this.relay.function.addEventSource(
      new sources.DynamoEventSource(table, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: RELAY_STREAM.batchSize,
        maxBatchingWindow: Duration.seconds(RELAY_STREAM.batchingWindowSeconds),
        parallelizationFactor: RELAY_STREAM.parallelizationFactor,
        bisectBatchOnError: true,
        retryAttempts: RELAY_STREAM.retryAttempts,
        maxRecordAge: Duration.seconds(RELAY_STREAM.maxRecordAgeSeconds),
        reportBatchItemFailures: true,
        onFailure: new sources.SqsDlq(this.relayFailureQueue),
        filters: [lambda.FilterCriteria.filter(RELAY_STREAM_FILTER)],
      }),
    );
    this.relay.sendsTo(this.sendQueue);
    this.relay.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ManageOwnSchedules',
        actions: ['scheduler:CreateSchedule', 'scheduler:DeleteSchedule'],
        resources: [
          stack.formatArn({
            service: 'scheduler',
            resource: 'schedule',
            resourceName: `${this.scheduleGroupName}/${SCHEDULE_NAME_PREFIX}*`,
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
        ],
      }),
    );
    this.relay.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'PassSchedulerRole',
        actions: ['iam:PassRole'],
        resources: [this.schedulerRole.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );

    // The sweeper: every few minutes, re-dispatch live messages that are overdue (the `due` index).
    this.sweeper = new PostdateFunction(this, 'Sweeper', {
      name: 'sweeper',
      description: 'Postdate sweeper: re-dispatches overdue live messages',
      timeout: Duration.seconds(SWEEPER_TIMEOUT_SECONDS),
      memorySize: 512,
      logRetention: props.logRetention,
      environment: {
        ...props.configEnvironment,
        ...tableEnv,
        ...sendQueueEnv,
        [RESOURCE_ENV.sendDeadLetterQueueUrl]: this.sendDeadLetterQueue.queueUrl,
      },
    });
    this.sweeper.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'QueryDueIndex',
        actions: ['dynamodb:Query'],
        resources: [props.storage.indexArn('due')],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': SWEPT_DUE_PARTITIONS } },
      }),
    );
    // It reads the records of overdue entries and stamps its re-dispatches on them (never a status).
    props.storage.grantItems(
      this.sweeper.role,
      'ReadAndStampMessageStates',
      ['dynamodb:BatchGetItem', 'dynamodb:UpdateItem'],
      ['message'],
    );
    // Every sweep starts from the sending gate: it reads the breaker, replaces a lost probe token and
    // publishes the relay gauge (docs/reliability.md, "Relay outages").
    props.storage.grantItems(
      this.sweeper.role,
      'ReadAndRenewSendingGate',
      ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      ['sendingGate'],
    );
    // Where its runs stopped in the `due` shards, for its cold starts (decision 0199): read, and replaced.
    props.storage.grantItems(
      this.sweeper.role,
      'KeepSweepCursors',
      ['dynamodb:GetItem', 'dynamodb:PutItem'],
      ['sweepCursors'],
    );
    this.sweeper.sendsTo(this.sendQueue);
    // It tends the DLQ: counts it, and when the count or a copy's age says so receives, deletes
    // stale copies, releases, and sends a fresh copy of a waiting dead message's old one, or one it
    // lacks (decisions 0141, 0148).
    this.sweeper.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'TendDeadLetters',
        actions: [
          'sqs:GetQueueAttributes',
          'sqs:ReceiveMessage',
          'sqs:DeleteMessage',
          'sqs:ChangeMessageVisibility',
          'sqs:SendMessage',
        ],
        resources: [this.sendDeadLetterQueue.queueArn],
      }),
    );
    // Lambda retries a failed asynchronous invocation twice by default; a sweep is covered by the
    // next run, and retries would pile runs on top of each other.
    this.sweeper.function.configureAsyncInvoke({ retryAttempts: 0 });
    new events.Rule(this, 'SweepSchedule', {
      description: 'Runs the Postdate sweeper',
      schedule: events.Schedule.rate(props.sweepInterval),
      targets: [
        new targets.LambdaFunction(this.sweeper.function, {
          // A missed run is covered by the next one; never pile runs up.
          retryAttempts: 0,
          maxEventAge: Duration.seconds(Math.max(60, props.sweepInterval.toSeconds() / 2)),
        }),
      ],
    });

    acknowledge(
      this.relay.role,
      `AwsSolutions-IAM5[Resource::arn:${nagValue(stack.partition, 'AWS::Partition')}:scheduler:${nagValue(stack.region, 'AWS::Region')}:${nagValue(stack.account, 'AWS::AccountId')}:schedule/${this.scheduleGroupName}/${SCHEDULE_NAME_PREFIX}*]`,
      `Schedule names are pd-{id}-{rev}, known only at run time; the wildcard is limited to this stack's schedule group and the ${SCHEDULE_NAME_PREFIX} prefix, and to CreateSchedule and DeleteSchedule.`,
    );
    acknowledge(
      this.relay.role,
      'AwsSolutions-IAM5[Resource::*]',
      "dynamodb:ListStreams supports no resource-level permission; CDK's DynamoEventSource grants exactly this one action on '*' (the stream read actions are scoped to the table's stream).",
    );
  }
}

/** How cdk-nag prints a value in a finding id: literal, or `<AWS::Region>` for a pseudo parameter. */
function nagValue(value: string, pseudoParameter: string): string {
  return Token.isUnresolved(value) ? `<${pseudoParameter}>` : value;
}

function acknowledgeFailureQueue(queue: sqs.Queue, role: string): void {
  acknowledge(
    queue,
    'AwsSolutions-SQS3',
    `This queue is ${role}: a last stop read by operators, the CLI and alarms, so it has no DLQ of its own.`,
  );
}
