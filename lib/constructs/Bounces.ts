import { Duration } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { PARTITION_PREFIX } from '../../lambdas/store/tableLayout.js';
import { RESOURCE_ENV } from '../functionEnvironment.js';
import { acknowledge } from './acknowledge.js';
import { postdateAlarm } from './alarms.js';
import { PostdateFunction } from './postdateFunction.js';
import { createFailureQueue } from './queues.js';
import type { Storage } from './Storage.js';

/** Notifications the function could not process after Lambda's retries wait here this long. */
export const BOUNCE_FAILURES_RETENTION_DAYS = 14;

export interface BouncesProps {
  readonly storage: Storage;
  /** The SNS topic Amazon SES publishes the identity's (or configuration set's) bounces and complaints to. */
  readonly sesNotificationTopic: sns.ITopic;
  readonly configEnvironment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
  /** Where the function's alarms notify. */
  readonly alarmTopic: sns.ITopic;
}

/**
 * SES feedback into the suppression list (DESIGN §12): a small function subscribed to the SES
 * bounce/complaint topic adds `Permanent` bounces and complaints to the list of the tenant whose
 * message it was (lambdas/bounces/). SNS invokes it asynchronously; after Lambda's two retries a
 * notification it could not process waits on a queue, and both its errors and that queue alarm.
 *
 * It may only read message state records (`MSG#…`, for the tenant) and write suppression entries
 * (`SUPP#…`) of the base table.
 */
export class Bounces extends Construct {
  readonly bounces: PostdateFunction;
  readonly failureQueue: sqs.Queue;
  readonly alarms: readonly cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: BouncesProps) {
    super(scope, id);
    const table = props.storage.table;
    this.bounces = new PostdateFunction(this, 'Handler', {
      name: 'bounces',
      description: 'Postdate SES bounces and complaints into the suppression list',
      timeout: Duration.seconds(30),
      memorySize: 256,
      logRetention: props.logRetention,
      environment: { ...props.configEnvironment, [RESOURCE_ENV.tableName]: table.tableName },
    });
    props.sesNotificationTopic.addSubscription(new subscriptions.LambdaSubscription(this.bounces.function));

    this.failureQueue = createFailureQueue(this, 'FailureQueue', {
      retentionDays: BOUNCE_FAILURES_RETENTION_DAYS,
    });
    acknowledge(
      this.failureQueue,
      'AwsSolutions-SQS3',
      "This queue is the bounces function's on-failure destination: a last stop read by operators and an alarm, so it has no DLQ of its own.",
    );
    this.bounces.function.configureAsyncInvoke({
      retryAttempts: 2,
      maxEventAge: Duration.hours(6),
      onFailure: new destinations.SqsDestination(this.failureQueue),
    });

    props.storage.grantMessageItems(this.bounces.role, 'ReadMessageTenants', ['dynamodb:GetItem']);
    this.bounces.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'AddSuppressions',
        actions: ['dynamodb:UpdateItem'],
        resources: [table.tableArn],
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${PARTITION_PREFIX.suppression}*`] },
        },
      }),
    );

    const alarm = (alarmId: string, description: string, metric: cloudwatch.IMetric) =>
      postdateAlarm(this, alarmId, props.alarmTopic, description, metric);
    this.alarms = [
      alarm(
        'BouncesErrors',
        'the bounces function failed invocations; SES feedback may be missing from the suppression lists',
        this.bounces.function.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      ),
      alarm(
        'BounceFailures',
        'SES notifications the bounces function could not process wait on its failure queue',
        this.failureQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: 'Maximum',
        }),
      ),
    ];
  }
}
