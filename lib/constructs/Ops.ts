import { Annotations, ArnFormat, Aws, Duration, Names, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { RELAY_METRIC, SENDER_METRIC, SWEEPER_METRIC } from '../../lambdas/core/metricNames.js';
import { SQS_MAX_DELAY_SECONDS } from '../../lambdas/core/queueLimits.js';
import { DEFAULT_RELAY } from '../../lambdas/core/relays.js';
import { postdateAlarm, relayMetric, stackMetric } from './alarms.js';

/**
 * The sender's EMF metrics (namespace `Postdate`, dimensions `service=postdate` and `stack=<stack
 * name>`), named by the sender itself so an alarm never watches a name nobody emits.
 */
export const POSTDATE_METRIC = SENDER_METRIC;

export interface OpsProps {
  readonly alarmTopic: sns.ITopic | undefined;
  readonly functions: Readonly<
    Record<'api' | 'authorizer' | 'relay' | 'sender' | 'sweeper', lambda.IFunction>
  >;
  readonly sendQueue: sqs.IQueue;
  readonly sendDeadLetterQueue: sqs.IQueue;
  readonly relayFailureQueue: sqs.IQueue;
  readonly scheduleDeadLetterQueue: sqs.IQueue;
  readonly httpApi: apigw.IHttpApi;
  readonly oldestMessageAgeAlarmThreshold: Duration;
  readonly relayIteratorAgeAlarmThreshold: Duration;
  readonly api5xxAlarmThreshold: number;
  /** How often the sweeper runs: it publishes the gauges of messages waiting for an operator. */
  readonly sweepInterval: Duration;
  /**
   * The relays' names in order (DESIGN §15): the dashboard draws each one's sends, failures and SMTP
   * time. @default ['default'] (the one relay `SMTP_*` describes)
   */
  readonly relays?: readonly string[];
}

const ONE_MINUTE = Duration.minutes(1);
const FIVE_MINUTES = Duration.minutes(5);

/** Alarms on everything that means "a message is stuck, late, lost or undecided", and one dashboard. */
export class Ops extends Construct {
  readonly alarmTopic: sns.ITopic;
  readonly alarms: readonly cloudwatch.Alarm[];
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: OpsProps) {
    super(scope, id);
    this.alarmTopic = props.alarmTopic ?? this.createAlarmTopic();
    this.letCloudWatchPublish(this.alarmTopic);
    const fns = props.functions;

    const alarms: cloudwatch.Alarm[] = [];
    const alarm = (
      alarmId: string,
      description: string,
      metric: cloudwatch.IMetric,
      threshold: number,
      evaluationPeriods = 1,
      treatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
    ) => {
      const created = postdateAlarm(this, alarmId, this.alarmTopic, description, metric, {
        threshold,
        evaluationPeriods,
        treatMissingData,
      });
      alarms.push(created);
      return created;
    };
    const visible = (queue: sqs.IQueue) =>
      queue.metricApproximateNumberOfMessagesVisible({ period: ONE_MINUTE, statistic: 'Maximum' });

    // DESIGN §6 "DLQ depth > 0": every copy, visible or not. The sweeper's walk (decision 0148) and a
    // `dlq redrive --ids` scan hide the copies for a while; on the visible alone the alarm would clear
    // and fire again around each of them, a second page for the same copies.
    alarm(
      'DeadLetterQueueNotEmpty',
      'copies reached the dead-letter queue; redrive after fixing the cause',
      new cloudwatch.MathExpression({
        expression: 'visible + hidden',
        usingMetrics: {
          visible: visible(props.sendDeadLetterQueue),
          hidden: props.sendDeadLetterQueue.metricApproximateNumberOfMessagesNotVisible({
            period: ONE_MINUTE,
            statistic: 'Maximum',
          }),
        },
        label: 'copies in the DLQ',
        period: ONE_MINUTE,
      }),
      1,
    );
    // DESIGN §6 "oldest message age", of copies waiting to be taken. SQS's age is that of the oldest
    // copy not deleted, so also of one the sender holds hidden for a backoff (up to the retry cap, an
    // hour) before its third receive (decision 0224): read alone, a redriven copy's first retry paged
    // while nothing waited. It counts only while a copy waits visible.
    alarm(
      'SendQueueOldestMessage',
      'copies wait to be taken on the send queue and its oldest copy is too old; the sender is not keeping up or not running',
      new cloudwatch.MathExpression({
        expression: 'IF(waiting >= 1, age, 0)',
        usingMetrics: {
          waiting: visible(props.sendQueue),
          age: props.sendQueue.metricApproximateAgeOfOldestMessage({
            period: ONE_MINUTE,
            statistic: 'Maximum',
          }),
        },
        label: 'age of the oldest copy while copies wait',
        period: ONE_MINUTE,
      }),
      props.oldestMessageAgeAlarmThreshold.toSeconds(),
      3,
    );
    // Copies the sender hands back unsent (out of time, the gate) are no attempts and, after three
    // receives, leave the age above: each hand-back publishes how late its mail already is (decision
    // 0231). One comes back within the longest delay (15 minutes, SQS_MAX_DELAY_SECONDS), a held one
    // within the probe interval: any 1 of 2 such periods, so a copy coming back a little late is no OK
    // between two pages.
    const heldBackPeriod = Duration.seconds(SQS_MAX_DELAY_SECONDS);
    alarms.push(
      postdateAlarm(
        this,
        'DueMailHeldBack',
        this.alarmTopic,
        'due mail is held back unsent and already this late: the sender hands its copies back (out of time under POSTDATE_MAX_SEND_RATE, a pause, no relay, a throttle) with no attempt; see OutOfTime, SendingPaused, RelaysDisabled and the relay alarms',
        stackMetric(this, POSTDATE_METRIC.heldBackLateness, 'Maximum', heldBackPeriod),
        {
          threshold: props.oldestMessageAgeAlarmThreshold.toMilliseconds(),
          evaluationPeriods: 2,
          datapointsToAlarm: 1,
        },
      ),
    );
    alarm(
      'RelayIteratorAge',
      'the relay lags behind the outbox stream; messages due soon will be late',
      new cloudwatch.Metric({
        namespace: 'AWS/Lambda',
        metricName: 'IteratorAge',
        dimensionsMap: { FunctionName: fns.relay.functionName },
        statistic: 'Maximum',
        period: ONE_MINUTE,
      }),
      props.relayIteratorAgeAlarmThreshold.toMilliseconds(),
      2,
    );
    alarm(
      'RelayFailures',
      'stream records the relay could not process; the sweeper re-dispatches them',
      visible(props.relayFailureQueue),
      1,
    );
    alarm(
      'ScheduleDeliveryFailures',
      'EventBridge Scheduler could not deliver schedules to the send queue',
      visible(props.scheduleDeadLetterQueue),
      1,
    );
    for (const [name, fn] of Object.entries(fns)) {
      const label = name.charAt(0).toUpperCase() + name.slice(1);
      alarm(
        `${label}Errors`,
        `the ${name} function failed invocations`,
        fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
        1,
      );
      alarm(
        `${label}Throttles`,
        `the ${name} function was throttled`,
        fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }),
        1,
      );
    }
    alarm(
      'SmtpConfigErrors',
      'the SMTP relay refused authentication, TLS or the sender: fix the secret or the relay settings',
      stackMetric(this, POSTDATE_METRIC.configErrors, 'Sum', FIVE_MINUTES),
      1,
    );
    alarm(
      'OutcomeWriteFailures',
      'a sender could not record the outcome of an SMTP attempt before its time ran out; the next copy finds the message ambiguous',
      stackMetric(this, POSTDATE_METRIC.outcomeWriteFailures, 'Sum', FIVE_MINUTES),
      1,
    );
    alarm(
      'FailedMessages',
      'messages ended failed (a permanent SMTP rejection, the body was gone, or a from outside POSTDATE_ALLOWED_FROM): the client sees status failed',
      stackMetric(this, POSTDATE_METRIC.failed, 'Sum', FIVE_MINUTES),
      1,
    );
    alarm(
      'SenderUnexpectedErrors',
      "the sender hit errors it did not expect; they become batch-item failures, so the function's Errors metric does not move",
      stackMetric(this, POSTDATE_METRIC.unexpectedErrors, 'Sum', FIVE_MINUTES),
      1,
    );
    // DESIGN §5 "Rate": one throttle is the relay pacing us; a wave in each of two 15-minute periods is
    // pressure that lasts (a spent daily quota brings one every 5 minutes or so, decision 0193).
    alarm(
      'RelayThrottled',
      "the SMTP relay keeps throttling us (its sending rate or its daily quota): every sender is slowed down and nothing is dead-lettered, but mail is late; raise the relay's quota or lower POSTDATE_MAX_SEND_RATE (docs/sending.md)",
      stackMetric(this, POSTDATE_METRIC.relayThrottled, 'Sum', Duration.minutes(15)),
      1,
      2,
    );
    // Gauges, published by every sweep: in alarm while any such message exists, not for one period.
    // A period without a datapoint (a run late or missed) keeps the state it had.
    const waitingPeriod = Duration.minutes(
      Math.max(1, Math.ceil(props.sweepInterval.toMinutes({ integral: false }))),
    );
    alarm(
      'UnknownOutcomes',
      'messages whose outcome is ambiguous wait for an operator (status unknown); in alarm while any exists',
      stackMetric(this, SWEEPER_METRIC.waiting.unknown, 'Maximum', waitingPeriod),
      1,
      1,
      cloudwatch.TreatMissingData.IGNORE,
    );
    alarm(
      'DeadMessages',
      'messages that used up their attempts wait for an operator (status dead); in alarm while any exists',
      stackMetric(this, SWEEPER_METRIC.waiting.dead, 'Maximum', waitingPeriod),
      1,
      1,
      cloudwatch.TreatMissingData.IGNORE,
    );
    alarm(
      'RefusedRecords',
      'messages a newer writer made (an outbox helper upgraded before the stack) are overdue and refused, neither dispatched nor sent; in alarm while any waits: upgrade the stack, then the sweeper sends them at once (decision 0166)',
      stackMetric(this, SWEEPER_METRIC.refusedRecords, 'Maximum', waitingPeriod),
      1,
      1,
      cloudwatch.TreatMissingData.IGNORE,
    );
    // One per relay (DESIGN §15), so a second relay failing while the first is down or drained is
    // news. The senders publish 1 when they open its breaker or a probe fails; the sweeper, every
    // run, 1 while its breaker is not closed, 0 once closed or while the relay is disabled (a drained
    // relay is never probed: its breaker says nothing). A late sweep keeps the state.
    for (const relay of props.relays ?? [DEFAULT_RELAY]) {
      alarm(
        relay === DEFAULT_RELAY ? 'RelayUnavailable' : `RelayUnavailable-${relay}`,
        `the SMTP relay ${relay} is unavailable (refused, timed out, 421, login or TLS; a disabled relay never is): its breaker is open and nothing is attempted on it; mail leaves through the next available relay of POSTDATE_RELAYS, or with none waits (no attempt counted, nothing dead-lettered); one probe per POSTDATE_RELAY_PROBE_SECONDS; \`postdate relays status\``,
        relayMetric(this, SENDER_METRIC.relayUnavailable, relay, 'Maximum', waitingPeriod),
        1,
        1,
        cloudwatch.TreatMissingData.IGNORE,
      );
    }
    // A gauge the sweeper publishes every run from the senders' own rule (core/relays.ts relayInUse):
    // on for the whole failover, not for each minute a copy happened to leave.
    alarm(
      'RelayFailover',
      'mail is leaving through a relay other than the first of POSTDATE_RELAYS (DESIGN §15): the first is unavailable, disabled or its daily quota spent; when it is enabled, its probe answers and its quota hold is over, the mail returns to it; `postdate relays status`',
      stackMetric(this, SWEEPER_METRIC.relayFailover, 'Maximum', waitingPeriod),
      1,
      1,
      cloudwatch.TreatMissingData.IGNORE,
    );
    alarm(
      'Api5xx',
      'the API answered server errors',
      props.httpApi.metricServerError({ period: FIVE_MINUTES, statistic: 'Sum' }),
      props.api5xxAlarmThreshold,
    );
    this.alarms = alarms;
    this.dashboard = this.createDashboard(props);
  }

  /**
   * A topic policy replaces SNS's default one, and `enforceSSL` writes a policy holding only the TLS
   * Deny: without this Allow, CloudWatch may not publish and every alarm is silent. A topic imported
   * by ARN cannot be changed from here; its owner must add the same statement (docs/operations.md).
   */
  private letCloudWatchPublish(topic: sns.ITopic): void {
    const stack = Stack.of(this);
    const { statementAdded } = topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: {
            'aws:SourceArn': stack.formatArn({
              service: 'cloudwatch',
              resource: 'alarm',
              resourceName: '*',
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          },
        },
      }),
    );
    if (!statementAdded) {
      Annotations.of(this).addWarningV2(
        'postdate:alarmTopicPolicy',
        'alarmTopic is imported: its policy must allow cloudwatch.amazonaws.com to sns:Publish (docs/operations.md), or no alarm reaches anyone',
      );
    }
  }

  private createAlarmTopic(): sns.Topic {
    // CloudWatch can publish to an encrypted topic only under a customer-managed key whose policy
    // lets it use the key; the AWS-managed SNS key would silently drop every alarm.
    const key = new kms.Key(this, 'AlarmTopicKey', {
      description: 'Encrypts the Postdate alarm topic',
      enableKeyRotation: true,
      // It protects only alarm notifications, which live seconds; it goes with the stack.
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    // Only CloudWatch acting for this account's alarms (confused-deputy guard).
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsEncrypt',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    );
    return new sns.Topic(this, 'AlarmTopic', {
      displayName: 'Postdate alarms',
      masterKey: key,
      enforceSSL: true,
    });
  }

  /**
   * The dashboard's last row: the state of every alarm of the stack (this construct's and those other
   * constructs made on its topic), given once all exist.
   */
  showAlarms(alarms: readonly cloudwatch.IAlarm[]): void {
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: [...alarms], width: 24, height: 6 }),
    );
  }

  private createDashboard(props: OpsProps): cloudwatch.Dashboard {
    const fns = props.functions;
    const graph = (title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = []) =>
      new cloudwatch.GraphWidget({ title, left, right, width: 8, height: 6 });
    const sum = (metric: cloudwatch.Metric, label: string) =>
      metric.with({ statistic: 'Sum', period: ONE_MINUTE, label });
    const max = (metric: cloudwatch.Metric, label: string) =>
      metric.with({ statistic: 'Maximum', period: ONE_MINUTE, label });
    const outcome = (name: string) => stackMetric(this, name, 'Sum', ONE_MINUTE);

    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      // Dashboards are global to the account: the region keeps two deployments of one stack apart.
      dashboardName: `${Names.uniqueResourceName(this, { maxLength: 200, separator: '-' })}-${Aws.REGION}`,
      defaultInterval: Duration.hours(3),
    });
    dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown:
          '# Postdate\nLeft to right, top to bottom: **enqueue** (API) → **dispatch** (stream relay, schedules, sweeper) → **send queue** → **sender** → **outcome**. Alarms and their meaning: docs/operations.md.',
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      graph('1 Enqueue: API requests', [
        sum(props.httpApi.metricCount(), 'requests'),
        sum(props.httpApi.metricClientError(), '4xx'),
        sum(props.httpApi.metricServerError(), '5xx'),
      ]),
      graph('1 Enqueue: API latency (ms)', [
        props.httpApi.metricLatency({ statistic: 'p50', period: ONE_MINUTE, label: 'p50' }),
        props.httpApi.metricLatency({ statistic: 'p99', period: ONE_MINUTE, label: 'p99' }),
      ]),
      graph('1 Enqueue: functions', [
        sum(fns.api.metricErrors(), 'api errors'),
        sum(fns.authorizer.metricErrors(), 'authorizer errors'),
        sum(fns.api.metricThrottles(), 'api throttles'),
      ]),
    );
    dashboard.addWidgets(
      graph(
        '2 Dispatch: relay',
        [sum(fns.relay.metricInvocations(), 'invocations'), sum(fns.relay.metricErrors(), 'errors')],
        [
          new cloudwatch.Metric({
            namespace: 'AWS/Lambda',
            metricName: 'IteratorAge',
            dimensionsMap: { FunctionName: fns.relay.functionName },
            statistic: 'Maximum',
            period: ONE_MINUTE,
            label: 'iterator age (ms)',
          }),
        ],
      ),
      graph('2 Dispatch: failures', [
        max(props.relayFailureQueue.metricApproximateNumberOfMessagesVisible(), 'relay failures'),
        max(props.scheduleDeadLetterQueue.metricApproximateNumberOfMessagesVisible(), 'schedule DLQ'),
      ]),
      graph('2 Dispatch: sweeper', [
        sum(fns.sweeper.metricInvocations(), 'runs'),
        sum(fns.sweeper.metricErrors(), 'errors'),
        outcome(SWEEPER_METRIC.redispatched).with({ label: 're-dispatched' }),
        outcome(SWEEPER_METRIC.staleDeadLettersRemoved).with({ label: 'stale DLQ copies removed' }),
      ]),
    );
    dashboard.addWidgets(
      graph(
        '3 Send queue',
        [
          sum(props.sendQueue.metricNumberOfMessagesSent(), 'enqueued'),
          max(props.sendQueue.metricApproximateNumberOfMessagesVisible(), 'visible'),
          max(props.sendQueue.metricApproximateNumberOfMessagesNotVisible(), 'in flight / backing off'),
          max(props.sendQueue.metric('ApproximateNumberOfMessagesDelayed'), 'delayed'),
        ],
        [max(props.sendQueue.metricApproximateAgeOfOldestMessage(), 'oldest (s)')],
      ),
      graph('3 Dead-letter queue', [
        max(props.sendDeadLetterQueue.metricApproximateNumberOfMessagesVisible(), 'dead copies'),
        // The alarm watches both: a sweep's walk or a redrive hides copies for a while.
        max(
          props.sendDeadLetterQueue.metricApproximateNumberOfMessagesNotVisible(),
          'hidden by a walk or a redrive',
        ),
      ]),
      graph(
        '4 Sender',
        [
          sum(fns.sender.metricInvocations(), 'invocations'),
          sum(fns.sender.metricErrors(), 'errors'),
          sum(fns.sender.metricThrottles(), 'throttles'),
        ],
        [max(fns.sender.metric('ConcurrentExecutions'), 'concurrency')],
      ),
    );
    dashboard.addWidgets(
      graph('5 Outcomes', [
        outcome(POSTDATE_METRIC.sent),
        outcome(POSTDATE_METRIC.retried),
        outcome(POSTDATE_METRIC.failed),
        outcome(POSTDATE_METRIC.dead),
        outcome(POSTDATE_METRIC.superseded),
        outcome(POSTDATE_METRIC.expired),
        outcome(POSTDATE_METRIC.suppressed),
      ]),
      graph(
        '5 Needs attention',
        [
          outcome(POSTDATE_METRIC.ambiguous),
          outcome(POSTDATE_METRIC.unknown),
          outcome(POSTDATE_METRIC.configErrors),
          outcome(RELAY_METRIC.newerWriterRefusals).with({ label: 'newer writer refused' }),
          outcome(RELAY_METRIC.unreadableRecords).with({ label: 'unreadable record skipped' }),
        ],
        [
          ...Object.entries(SWEEPER_METRIC.waiting).map(([status, name]) =>
            stackMetric(this, name, 'Maximum', FIVE_MINUTES).with({ label: `waiting: ${status}` }),
          ),
          stackMetric(this, SWEEPER_METRIC.refusedRecords, 'Maximum', FIVE_MINUTES).with({
            label: 'waiting: refused (upgrade)',
          }),
        ],
      ),
      graph(
        '5 Relay and sending gate',
        [
          stackMetric(this, SENDER_METRIC.relayUnavailable, 'Maximum', ONE_MINUTE).with({
            label: 'relay unavailable (breaker open)',
          }),
          stackMetric(this, SWEEPER_METRIC.relayFailover, 'Maximum', FIVE_MINUTES).with({
            label: 'mail leaves through a later relay',
          }),
        ],
        [
          stackMetric(this, SENDER_METRIC.sendingPaused, 'Sum', ONE_MINUTE).with({
            label: 'copies held by a pause',
          }),
          stackMetric(this, SENDER_METRIC.relaysDisabled, 'Sum', ONE_MINUTE).with({
            label: 'copies held: every relay disabled',
          }),
        ],
      ),
      graph('5 Timing (ms)', [
        stackMetric(this, POSTDATE_METRIC.lateness, 'p50', ONE_MINUTE).with({ label: 'lateness p50' }),
        stackMetric(this, POSTDATE_METRIC.lateness, 'p99', ONE_MINUTE).with({ label: 'lateness p99' }),
        stackMetric(this, POSTDATE_METRIC.heldBackLateness, 'Maximum', ONE_MINUTE).with({
          label: 'held back unsent, max',
        }),
        stackMetric(this, POSTDATE_METRIC.smtpDuration, 'p50', ONE_MINUTE).with({ label: 'SMTP p50' }),
        stackMetric(this, POSTDATE_METRIC.smtpDuration, 'p99', ONE_MINUTE).with({ label: 'SMTP p99' }),
      ]),
    );
    this.addRelayRow(dashboard, props.relays ?? [DEFAULT_RELAY]);
    return dashboard;
  }

  /** One row for the relays (DESIGN §15): each relay's series, the first relay first. */
  private addRelayRow(dashboard: cloudwatch.Dashboard, relays: readonly string[]): void {
    const each = (name: string, statistic: string) =>
      relays.map((relay) =>
        relayMetric(this, name, relay, statistic, ONE_MINUTE).with({ label: `${relay}: ${name}` }),
      );
    const graph = (title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = []) =>
      new cloudwatch.GraphWidget({ title, left, right, width: 8, height: 6 });
    dashboard.addWidgets(
      graph(
        `6 Relays (${relays.join(' → ')}): sent`,
        each(SENDER_METRIC.sent, 'Sum'),
        each(SENDER_METRIC.failoverSends, 'Sum'),
      ),
      graph(
        '6 Relays: unavailable, retried, config errors',
        [...each(SENDER_METRIC.relayUnavailable, 'Sum'), ...each(SENDER_METRIC.retried, 'Sum')],
        each(SENDER_METRIC.configErrors, 'Sum'),
      ),
      graph('6 Relays: SMTP p99 (ms)', each(SENDER_METRIC.smtpDuration, 'p99')),
    );
  }
}
