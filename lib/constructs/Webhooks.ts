import { Duration, Names, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { BusEvents } from '../../lambdas/core/busEvents.js';
import { EVENT_SOURCE } from '../../lambdas/core/messageEvents.js';
import { WEBHOOK_METRIC } from '../../lambdas/core/metricNames.js';
import { EVENTS_STREAM, STREAM_RETENTION_HOURS } from '../eventSourceLayout.js';
import { RESOURCE_ENV } from '../functionEnvironment.js';
import {
  EVENT_FAILURE_QUEUE,
  EVENTS_STREAM_FILTER,
  WEBHOOK_DELIVERY,
  WEBHOOK_QUEUE,
} from '../webhookLayout.js';
import { acknowledge } from './acknowledge.js';
import { postdateAlarm, stackMetric } from './alarms.js';
import { PostdateFunction } from './postdateFunction.js';
import type { Storage } from './Storage.js';

/**
 * The name of the bus the construct creates, unique in the account and Region. CDK's own name for a
 * bus comes from the construct path alone (`Names.uniqueId`), so two stacks of one path under other
 * `stackName`s (a stack per stage from one app) took one name, and the second deploy failed. The name
 * is now the stack's name and the path, as the schedule group's and the dashboard's. A stack whose
 * name is its path's (every stack that kept CDK's stack name) keeps CDK's own name: its path is
 * already unique, and a new name would replace the bus and strand every rule made on the old one.
 */
function busName(scope: Construct, id: string): string | undefined {
  let stack = Stack.of(scope);
  while (stack.nestedStackParent !== undefined) stack = stack.nestedStackParent;
  if (stack.stackName === stack.node.path.replaceAll('/', '-')) return undefined;
  return `${Names.uniqueResourceName(scope, { maxLength: 256 - id.length - 1, separator: '-' })}-${id}`;
}

/** Partition-key prefixes of the webhook items (lambdas/store/webhookStore.ts). */
const ENDPOINT_ITEMS = 'WHEP#*';
const DELIVERY_ITEMS = 'WHDL#*';

export interface WebhooksProps {
  readonly storage: Storage;
  /** The api function: it creates endpoints and queues test events and manual retries. */
  readonly api: PostdateFunction;
  /** @default a new bus */
  readonly eventBus?: events.IEventBus | undefined;
  /** The types the producer puts on the bus (the construct's `busEvents`): what its grant allows. */
  readonly busEvents: BusEvents;
  readonly configEnvironment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
  readonly alarmTopic: sns.ITopic;
  /** Most deliveries at once (the construct's `webhookMaxConcurrency`). */
  readonly maxConcurrency: number;
  /** The producer's `IteratorAge` alarm: the construct's `relayIteratorAgeAlarmThreshold` (one stream, one lag). */
  readonly iteratorAgeAlarmThreshold: Duration;
}

/**
 * Events and webhooks (DESIGN §11): the event producer on the table's stream (beside the relay)
 * puts every status change on the bus and writes one delivery per subscribed endpoint; the delivery
 * function behind the webhook queue signs and POSTs each one. Alarmed: deliveries that end `failed`,
 * copies in the webhook DLQ, stream records the producer gave up on.
 */
export class Webhooks extends Construct {
  readonly eventBus: events.IEventBus;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly eventFailureQueue: sqs.Queue;
  readonly producer: PostdateFunction;
  readonly delivery: PostdateFunction;
  readonly alarms: readonly cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: WebhooksProps) {
    super(scope, id);
    const table = props.storage.table;
    this.eventBus =
      props.eventBus ?? new events.EventBus(this, 'Bus', { eventBusName: busName(this, 'Bus') });

    const secure = { encryption: sqs.QueueEncryption.SQS_MANAGED, enforceSSL: true } as const;
    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      ...secure,
      retentionPeriod: Duration.days(WEBHOOK_QUEUE.deadLetter.retentionDays),
    });
    this.queue = new sqs.Queue(this, 'Queue', {
      ...secure,
      visibilityTimeout: Duration.seconds(WEBHOOK_QUEUE.visibilityTimeoutSeconds),
      retentionPeriod: Duration.days(WEBHOOK_QUEUE.retentionDays),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: WEBHOOK_QUEUE.maxReceiveCount },
    });
    this.eventFailureQueue = new sqs.Queue(this, 'EventFailureQueue', {
      ...secure,
      retentionPeriod: Duration.days(EVENT_FAILURE_QUEUE.retentionDays),
    });

    const baseEnv = {
      ...props.configEnvironment,
      [RESOURCE_ENV.tableName]: table.tableName,
      [RESOURCE_ENV.webhookQueueUrl]: this.queue.queueUrl,
    };
    const items = (sid: string, actions: string[], prefix: string) =>
      new iam.PolicyStatement({
        sid,
        actions,
        resources: [table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [prefix] } },
      });

    this.producer = new PostdateFunction(this, 'Events', {
      name: 'events',
      description: 'Postdate events: status changes to the event bus and to the webhook deliveries',
      timeout: Duration.seconds(EVENTS_STREAM.timeoutSeconds),
      memorySize: 512,
      logRetention: props.logRetention,
      environment: { ...baseEnv, [RESOURCE_ENV.eventBusName]: this.eventBus.eventBusName },
    });
    this.producer.function.addEventSource(
      new sources.DynamoEventSource(table, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: EVENTS_STREAM.batchSize,
        maxBatchingWindow: Duration.seconds(EVENTS_STREAM.batchingWindowSeconds),
        bisectBatchOnError: true,
        retryAttempts: EVENTS_STREAM.retryAttempts,
        maxRecordAge: Duration.hours(EVENTS_STREAM.maxRecordAgeHours),
        reportBatchItemFailures: true,
        onFailure: new sources.SqsDlq(this.eventFailureQueue),
        filters: [lambda.FilterCriteria.filter(EVENTS_STREAM_FILTER)],
      }),
    );
    // The producer may put what it puts (decision 0178), from Postdate's source only (the bus may be
    // the deployment's own): every event, the listed types only (the request's sources and
    // detail-types, multi-valued keys of PutEvents, present), or nothing.
    if (props.busEvents !== 'none') {
      const listed = props.busEvents !== 'all';
      this.producer.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: listed ? 'PutListedEvents' : 'PutEvents',
          actions: ['events:PutEvents'],
          resources: [this.eventBus.eventBusArn],
          conditions: {
            'ForAllValues:StringEquals': {
              'events:source': EVENT_SOURCE,
              ...(listed ? { 'events:detail-type': [...props.busEvents] } : {}),
            },
            Null: { 'events:source': 'false', ...(listed ? { 'events:detail-type': 'false' } : {}) },
          },
        }),
      );
    }
    this.producer.sendsTo(this.queue);
    this.producer.role.addToPrincipalPolicy(items('ReadEndpoints', ['dynamodb:Query'], ENDPOINT_ITEMS));
    this.producer.role.addToPrincipalPolicy(items('WriteDeliveries', ['dynamodb:PutItem'], DELIVERY_ITEMS));

    this.delivery = new PostdateFunction(this, 'Delivery', {
      name: 'webhooks',
      description: 'Postdate webhooks: signed deliveries with retries',
      timeout: Duration.seconds(WEBHOOK_DELIVERY.timeoutSeconds),
      memorySize: 256,
      logRetention: props.logRetention,
      environment: baseEnv,
    });
    this.delivery.function.addEventSource(
      new sources.SqsEventSource(this.queue, {
        batchSize: WEBHOOK_DELIVERY.batchSize,
        maxConcurrency: props.maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );
    this.delivery.sendsTo(this.queue);
    this.delivery.role.addToPrincipalPolicy(items('ReadEndpoints', ['dynamodb:GetItem'], ENDPOINT_ITEMS));
    this.delivery.role.addToPrincipalPolicy(
      items('ReadAndWriteDeliveries', ['dynamodb:GetItem', 'dynamodb:UpdateItem'], DELIVERY_ITEMS),
    );

    // The api: test events and manual retries go on the queue.
    props.api.sendsTo(this.queue);
    props.api.function.addEnvironment(RESOURCE_ENV.webhookQueueUrl, this.queue.queueUrl);

    const alarms: cloudwatch.Alarm[] = [];
    const alarm = (alarmId: string, description: string, metric: cloudwatch.IMetric) => {
      alarms.push(postdateAlarm(this, alarmId, props.alarmTopic, description, metric));
    };
    alarm(
      'WebhookDeliveriesFailed',
      'webhook deliveries ended failed after their retry window; list and retry them (GET /v1/webhooks/{id}/deliveries?status=failed)',
      stackMetric(this, WEBHOOK_METRIC.failed, 'Sum', Duration.minutes(5)),
    );
    const visible = (queue: sqs.IQueue) =>
      queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' });
    alarm(
      'WebhookDeadLetterQueueNotEmpty',
      'webhook copies reached their DLQ: fix the table or queue errors, then redrive',
      visible(this.deadLetterQueue),
    );
    alarm(
      'EventFailuresNotEmpty',
      `stream records the event producer gave up on: their events may have missed the webhooks, the bus (EventsNotPublished) or both; replay them within ${STREAM_RETENTION_HOURS - EVENTS_STREAM.maxRecordAgeHours} h with \`postdate event-failures redrive\` (runbook §4b)`,
      visible(this.eventFailureQueue),
    );
    for (const [name, fn] of [
      ['Events', this.producer.function],
      ['Webhooks', this.delivery.function],
    ] as const) {
      alarm(
        `${name}Errors`,
        `the ${name.toLowerCase()} function failed invocations`,
        fn.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      );
      alarm(
        `${name}Throttles`,
        `the ${name.toLowerCase()} function was throttled`,
        fn.metricThrottles({ period: Duration.minutes(5), statistic: 'Sum' }),
      );
    }
    alarms.push(
      postdateAlarm(
        this,
        'EventsIteratorAge',
        props.alarmTopic,
        'the event producer lags behind the outbox stream; bus events and webhooks are late by that much',
        new cloudwatch.Metric({
          namespace: 'AWS/Lambda',
          metricName: 'IteratorAge',
          dimensionsMap: { FunctionName: this.producer.function.functionName },
          statistic: 'Maximum',
          period: Duration.minutes(1),
        }),
        { threshold: props.iteratorAgeAlarmThreshold.toMilliseconds(), evaluationPeriods: 2 },
      ),
    );
    this.alarms = alarms;

    acknowledge(
      this.eventFailureQueue,
      'AwsSolutions-SQS3',
      "This queue is the event producer's on-failure destination: a last stop read by operators and alarms, so it has no DLQ of its own.",
    );
    acknowledge(
      this.producer.role,
      'AwsSolutions-IAM5[Resource::*]',
      "dynamodb:ListStreams supports no resource-level permission; CDK's DynamoEventSource grants exactly this one action on '*' (the stream read actions are scoped to the table's stream).",
    );
  }
}
