import { Aws, CfnOutput, Names, Stack, Token } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ConfigError, loadConfig } from '../lambdas/core/config.js';
import type { PostdateFunctionName } from '../lambdas/core/postdateFunctions.js';
import { DEFAULT_RELAY } from '../lambdas/core/relays.js';
import { Api } from './constructs/Api.js';
import { Attachments } from './constructs/Attachments.js';
import { ownMetricStack } from './constructs/alarms.js';
import { Bounces } from './constructs/Bounces.js';
import { Dispatch } from './constructs/Dispatch.js';
import { Ops } from './constructs/Ops.js';
import { Sending } from './constructs/Sending.js';
import { Storage } from './constructs/Storage.js';
import { Webhooks } from './constructs/Webhooks.js';
import { propsEnvironment, relaysEnvironment } from './functionEnvironment.js';
import { type PostdateProps, PostdatePropsError, resolvePostdateProps } from './postdateProps.js';
import { cliSettingsOf, STACK_OUTPUT, type StackOutputName } from './stackOutputs.js';

export type { BusEvents } from '../lambdas/core/busEvents.js';
export type { MessageEventType } from '../lambdas/core/messageEvents.js';
export type { ApiThrottle, PostdateProps, PostdateRelay, SenderPollers } from './postdateProps.js';
/** What the construct throws for props it refuses: every problem, each naming its prop. */
export { PostdatePropsError };

/**
 * Postdate: deferred transactional email that is never lost and never sent twice by accident
 * (DESIGN.md). The outbox table, the relay and sweeper, the send queue with its DLQ, the sender,
 * the HTTP API, and the alarms and dashboard that watch them.
 */
export class Postdate extends Construct {
  readonly table: dynamodb.ITable;
  readonly sendQueue: sqs.IQueue;
  readonly sendDeadLetterQueue: sqs.IQueue;
  readonly relayFailureQueue: sqs.IQueue;
  /** Stream records the event producer gave up on (`postdate event-failures redrive`). */
  readonly eventFailureQueue: sqs.IQueue;
  /** The webhook deliveries' queue. */
  readonly webhookQueue: sqs.IQueue;
  readonly scheduleDeadLetterQueue: sqs.IQueue;
  readonly scheduleGroupName: string;
  /** The role EventBridge Scheduler assumes to put schedules' copies on the send queue. */
  readonly schedulerRoleArn: string;
  readonly smtpSecret: secretsmanager.ISecret;
  readonly alarmTopic: sns.ITopic;
  readonly httpApi: apigw.IHttpApi;
  /** The bus every status change is put on (`source: postdate`, `detail-type` = the type). */
  readonly eventBus: events.IEventBus;
  /** The functions always deployed, e.g. to add alarms or subscriptions of your own. */
  readonly functions: Readonly<Record<Exclude<PostdateFunctionName, 'bounces'>, lambda.IFunction>>;
  /** The function that reads SES bounces and complaints, when `sesNotificationTopics` (or `sesNotificationTopic`) was given. */
  readonly bounces: lambda.IFunction | undefined;
  /** The attachments' bucket (DESIGN §13): encrypted, TLS only, private, with lifetimes per message. */
  readonly attachmentBucket: s3.IBucket;
  /** The base URL of the API (`https://{id}.execute-api.{region}.amazonaws.com/`). */
  readonly apiUrl: string;

  /** The relays' names in order (DESIGN §15): `relays`, or the one relay `default`. */
  readonly relayNames: readonly string[];

  /**
   * The settings the operator CLI decides with, as the functions have them (variable → value;
   * lib/stackOutputs.ts `CLI_SETTINGS`): PostdateStack writes them as the output `Settings`.
   */
  readonly operatorSettings: Readonly<Record<string, string>>;

  private readonly storage: Storage;

  constructor(scope: Construct, id: string, props: PostdateProps) {
    super(scope, id);
    const resolved = resolvePostdateProps(props);
    this.relayNames = resolved.relays?.map((relay) => relay.name) ?? [DEFAULT_RELAY];
    const smtpHost = resolved.smtpHost ?? `email-smtp.${Aws.REGION}.amazonaws.com`;
    const environment = {
      ...propsEnvironment(resolved, smtpHost, ownMetricStack(this)),
      ...relaysEnvironment(resolved.relays),
    };
    assertFunctionsWouldStart(environment);
    this.operatorSettings = cliSettingsOf(environment);

    const storage = new Storage(this, 'Storage', { removalPolicy: resolved.removalPolicy });
    this.storage = storage;
    const dispatch = new Dispatch(this, 'Dispatch', {
      storage,
      maxAttempts: resolved.maxAttempts,
      senderTimeoutSeconds: resolved.senderTimeoutSeconds,
      sweepInterval: resolved.sweepInterval,
      configEnvironment: environment,
      logRetention: resolved.logRetention,
    });
    const sending = new Sending(this, 'Sending', {
      storage,
      sendQueue: dispatch.sendQueue,
      sendDeadLetterQueue: dispatch.sendDeadLetterQueue,
      smtpSecret: resolved.smtpSecret,
      relaySecrets: (resolved.relays ?? []).map((relay) => relay.secret),
      maxConcurrency: resolved.senderMaxConcurrency,
      pollers: resolved.senderPollers,
      timeoutSeconds: resolved.senderTimeoutSeconds,
      configEnvironment: environment,
      logRetention: resolved.logRetention,
      removalPolicy: resolved.removalPolicy,
    });
    const api = new Api(this, 'Api', {
      storage,
      throttle: resolved.apiThrottle,
      authorizerCacheTtl: resolved.authorizerCacheTtl,
      configEnvironment: environment,
      logRetention: resolved.logRetention,
      ...(resolved.apiImmediateCopy ? { immediateCopyQueue: dispatch.sendQueue } : {}),
    });
    const attachments = new Attachments(this, 'Attachments', {
      removalPolicy: resolved.removalPolicy,
      retentionDays: resolved.retentionDays,
    });
    attachments.grantApi(api.api);
    attachments.grantSender(sending.sender);
    const core = {
      api: api.api.function,
      authorizer: api.authorizer.function,
      relay: dispatch.relay.function,
      sender: sending.sender.function,
      sweeper: dispatch.sweeper.function,
    };
    const ops = new Ops(this, 'Ops', {
      alarmTopic: resolved.alarmTopic,
      functions: core,
      sendQueue: dispatch.sendQueue,
      sendDeadLetterQueue: dispatch.sendDeadLetterQueue,
      relayFailureQueue: dispatch.relayFailureQueue,
      scheduleDeadLetterQueue: dispatch.scheduleDeadLetterQueue,
      httpApi: api.httpApi,
      oldestMessageAgeAlarmThreshold: resolved.oldestMessageAgeAlarmThreshold,
      relayIteratorAgeAlarmThreshold: resolved.relayIteratorAgeAlarmThreshold,
      api5xxAlarmThreshold: resolved.api5xxAlarmThreshold,
      sweepInterval: resolved.sweepInterval,
      relays: this.relayNames,
    });

    const webhooks = new Webhooks(this, 'Webhooks', {
      storage,
      api: api.api,
      eventBus: resolved.eventBus,
      busEvents: resolved.busEvents,
      configEnvironment: environment,
      logRetention: resolved.logRetention,
      alarmTopic: ops.alarmTopic,
      maxConcurrency: resolved.webhookMaxConcurrency,
      iteratorAgeAlarmThreshold: resolved.relayIteratorAgeAlarmThreshold,
    });
    attachments.grantLifetimeTagging(webhooks.producer);
    // The tag of a message's attachments is read off its current record (docs/decisions/0144).
    storage.grantMessageItems(webhooks.producer.role, 'ReadMessageLifetimes', ['dynamodb:GetItem']);
    const bounces =
      resolved.sesNotificationTopics.length === 0
        ? undefined
        : new Bounces(this, 'Bounces', {
            storage,
            sesNotificationTopics: resolved.sesNotificationTopics,
            configEnvironment: environment,
            logRetention: resolved.logRetention,
            alarmTopic: ops.alarmTopic,
          });

    ops.showAlarms([...ops.alarms, ...webhooks.alarms, ...(bounces?.alarms ?? [])]);

    this.eventBus = webhooks.eventBus;
    this.functions = { ...core, events: webhooks.producer.function, webhooks: webhooks.delivery.function };
    this.bounces = bounces?.bounces.function;
    this.table = storage.table;
    this.sendQueue = dispatch.sendQueue;
    this.sendDeadLetterQueue = dispatch.sendDeadLetterQueue;
    this.relayFailureQueue = dispatch.relayFailureQueue;
    this.eventFailureQueue = webhooks.eventFailureQueue;
    this.webhookQueue = webhooks.queue;
    this.scheduleDeadLetterQueue = dispatch.scheduleDeadLetterQueue;
    this.scheduleGroupName = dispatch.scheduleGroupName;
    this.schedulerRoleArn = dispatch.schedulerRole.roleArn;
    this.smtpSecret = sending.smtpSecret;
    this.alarmTopic = ops.alarmTopic;
    this.httpApi = api.httpApi;
    this.apiUrl = api.stage.url;
    this.attachmentBucket = attachments.bucket;
  }

  /**
   * Lets `grantee` (your service's role) enqueue through the transactional outbox (`postdate/outbox`,
   * DESIGN §4; docs/api-resources.md): put a message's state and body, raise or check its group's
   * head in the transaction, and read a group's head and a template first (`readGroupHeadVersion`,
   * `readOutboxTemplate`). Those items only (`dynamodb:LeadingKeys`): never an API key, a delete, a
   * message's read, a query or a scan, as `table.grantReadWriteData` would allow. Your own table's
   * writes, the rest of the transaction, are yours to grant.
   */
  grantOutbox(grantee: iam.IGrantable): void {
    // Sids unique to this Postdate: one role may be granted the outboxes of two.
    const sid = (name: string) => `${name}${Names.uniqueId(this)}`;
    this.storage.grantItems(grantee, sid('PostdateOutboxPuts'), ['dynamodb:PutItem'], ['message']);
    this.storage.grantItems(
      grantee,
      sid('PostdateOutboxGroupHeads'),
      ['dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'],
      ['groupHead'],
    );
    this.storage.grantItems(
      grantee,
      sid('PostdateOutboxReads'),
      ['dynamodb:GetItem'],
      ['groupHead', 'templateHeads', 'templateVersions'],
    );
  }

  /**
   * Writes the CloudFormation outputs `postdate --stack NAME` reads (lib/stackOutputs.ts
   * `STACK_OUTPUT`: the API's URL, the table, the queues, the bus, the schedule group, the relays,
   * the settings, …) on this construct's stack, under the exact keys the CLI reads, so an operator
   * never copies a name or an ARN by hand (DESIGN §6). PostdateStack calls it; in a stack of your own,
   * call it once: the keys are the stack's, so one Postdate of a stack can have them.
   */
  addStackOutputs(): void {
    const stack = Stack.of(this);
    const output = (id: (typeof STACK_OUTPUT)[StackOutputName], value: string, description: string) =>
      new CfnOutput(stack, id, { value, description });
    output(STACK_OUTPUT.apiUrl, this.apiUrl, 'Base URL of the Postdate HTTP API');
    output(STACK_OUTPUT.tableName, this.table.tableName, 'The outbox table (POSTDATE_TABLE_NAME)');
    output(STACK_OUTPUT.sendQueueUrl, this.sendQueue.queueUrl, 'The send queue (POSTDATE_SEND_QUEUE_URL)');
    output(
      STACK_OUTPUT.sendDeadLetterQueueUrl,
      this.sendDeadLetterQueue.queueUrl,
      'Copies that exhausted their attempts',
    );
    output(
      STACK_OUTPUT.relayFailureQueueUrl,
      this.relayFailureQueue.queueUrl,
      'Stream records the relay could not process (POSTDATE_RELAY_FAILURE_QUEUE_URL)',
    );
    output(
      STACK_OUTPUT.eventFailureQueueUrl,
      this.eventFailureQueue.queueUrl,
      'Stream records the event producer gave up on (`postdate event-failures redrive`)',
    );
    output(
      STACK_OUTPUT.webhookQueueUrl,
      this.webhookQueue.queueUrl,
      'The webhook deliveries (POSTDATE_WEBHOOK_QUEUE_URL)',
    );
    output(
      STACK_OUTPUT.eventBusName,
      this.eventBus.eventBusName,
      'Where events go (POSTDATE_EVENT_BUS_NAME)',
    );
    output(
      STACK_OUTPUT.attachmentBucketName,
      this.attachmentBucket.bucketName,
      "The attachments' bucket (POSTDATE_ATTACHMENT_BUCKET)",
    );
    output(
      STACK_OUTPUT.scheduleDeadLetterQueueUrl,
      this.scheduleDeadLetterQueue.queueUrl,
      'Undeliverable schedules',
    );
    output(
      STACK_OUTPUT.scheduleGroupName,
      this.scheduleGroupName,
      'EventBridge Scheduler group of the one-time schedules',
    );
    output(
      STACK_OUTPUT.schedulerRoleArn,
      this.schedulerRoleArn,
      'The role the scheduler assumes to deliver schedules (POSTDATE_SCHEDULER_ROLE_ARN)',
    );
    output(
      STACK_OUTPUT.smtpSecretArn,
      this.smtpSecret.secretArn,
      'Set {"username","password"} of the SMTP relay here',
    );
    output(STACK_OUTPUT.alarmTopicArn, this.alarmTopic.topicArn, 'Alarms notify this topic');
    output(
      STACK_OUTPUT.relayNames,
      this.relayNames.join(','),
      'The relays mail fails over between, in order (POSTDATE_RELAY_NAMES, `postdate relays`)',
    );
    output(
      STACK_OUTPUT.settings,
      stack.toJsonString(this.operatorSettings),
      'The settings `postdate --stack` decides with, as the functions have them (JSON)',
    );
  }
}

/**
 * The functions read their environment with the same `loadConfig` as the local stack; a value
 * that would stop them at cold start fails the synth instead. A value known only at deploy time (a
 * token) is theirs to check, at cold start.
 */
function assertFunctionsWouldStart(environment: Readonly<Record<string, string>>): void {
  try {
    loadConfig(environment, 'aws');
  } catch (error) {
    if (error instanceof ConfigError && Token.isUnresolved(environment[error.variable] ?? '')) return;
    if (error instanceof ConfigError) {
      throw new PostdatePropsError([`the functions would not start: ${error.message}`]);
    }
    throw error;
  }
}
