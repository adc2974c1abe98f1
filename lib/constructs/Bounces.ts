import { ArnFormat, Duration, Names, Stack, Token } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { RegionInfo } from 'aws-cdk-lib/region-info';
import { Construct } from 'constructs';
import { PARTITION_PREFIX } from '../../lambdas/store/tableLayout.js';
import { RESOURCE_ENV } from '../functionEnvironment.js';
import { PostdatePropsError } from '../postdateProps.js';
import { acknowledge } from './acknowledge.js';
import { postdateAlarm } from './alarms.js';
import { PostdateFunction } from './postdateFunction.js';
import { createFailureQueue } from './queues.js';
import type { Storage } from './Storage.js';

/** Notifications the function could not process after Lambda's retries wait here this long. */
export const BOUNCE_FAILURES_RETENTION_DAYS = 14;

export interface BouncesProps {
  readonly storage: Storage;
  /**
   * The SNS topics Amazon SES publishes the identities' (or configuration sets') bounces and
   * complaints to: one in each Region SES sends from, since SES publishes only within its Region.
   */
  readonly sesNotificationTopics: readonly sns.ITopic[];
  readonly configEnvironment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
  /** Where the function's alarms notify. */
  readonly alarmTopic: sns.ITopic;
}

/**
 * SES feedback into the suppression list (DESIGN §12): a small function subscribed to the SES
 * bounce/complaint topic of every Region SES sends from (DESIGN §15: whichever relay sent) adds
 * `Permanent` bounces and complaints to the list of the tenant whose message it was
 * (lambdas/bounces/; nothing there depends on the Region). SNS invokes it asynchronously; after
 * Lambda's two retries a notification it could not process waits on a queue, and both its errors
 * and that queue alarm.
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
    const problems = props.sesNotificationTopics.flatMap((topic) => subscribe(topic, this.bounces.function));
    if (problems.length > 0) throw new PostdatePropsError(problems);

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

/**
 * Subscribes the function to one SES topic, in the topic's Region, and lets SNS invoke it from that
 * topic only. The ids are those aws-sns-subscriptions' LambdaSubscription gives, so a stack deployed
 * with one topic keeps its subscription and permission. That class always names `sns.amazonaws.com`;
 * across Regions, SNS of an opt-in Region invokes by `sns.{region}.amazonaws.com`, and AWS does not
 * deliver into an opt-in Region from another (SNS developer guide, "cross-Region delivery").
 * Returns the problem when the pair of Regions cannot work.
 */
function subscribe(topic: sns.ITopic, fn: lambda.Function): string[] {
  const topicRegion = Token.isUnresolved(topic.topicArn)
    ? undefined
    : Stack.of(fn).splitArn(topic.topicArn, ArnFormat.SLASH_RESOURCE_NAME).region;
  const functionRegion = Stack.of(fn).region;
  const crossRegion =
    topicRegion !== undefined && !Token.isUnresolved(functionRegion) && topicRegion !== functionRegion;
  if (crossRegion && RegionInfo.get(functionRegion).isOptInRegion === true) {
    return [
      `sesNotificationTopics: ${topic.topicArn} is in ${topicRegion}, and SNS cannot invoke a function in the opt-in Region ${functionRegion} from another Region; deploy the stack in a Region enabled by default, or feed this topic to a queue of ${functionRegion} yourself`,
    ];
  }
  const principal =
    crossRegion && RegionInfo.get(topicRegion).isOptInRegion === true
      ? `sns.${topicRegion}.amazonaws.com`
      : 'sns.amazonaws.com';
  fn.addPermission(`AllowInvoke:${Names.nodeUniqueId(topic.node)}`, {
    sourceArn: topic.topicArn,
    principal: iam.ServicePrincipal.fromStaticServicePrincipleName(principal),
  });
  const id =
    fn.node.tryFindChild(topic.node.id) === undefined ? topic.node.id : Names.nodeUniqueId(topic.node);
  new sns.Subscription(fn, id, {
    topic,
    endpoint: fn.functionArn,
    protocol: sns.SubscriptionProtocol.LAMBDA,
    region: topicRegion,
  });
  return [];
}
