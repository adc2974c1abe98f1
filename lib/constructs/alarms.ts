import { type Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { METRICS, metricDimensions, relayMetricDimensions } from '../../lambdas/core/metricNames.js';

export interface PostdateAlarmOptions {
  /** @default 1 */
  readonly threshold?: number;
  /** @default 1 */
  readonly evaluationPeriods?: number;
  /** Of the evaluation periods, how many must breach. @default all of them */
  readonly datapointsToAlarm?: number;
  /** @default NOT_BREACHING */
  readonly treatMissingData?: cloudwatch.TreatMissingData;
}

/**
 * One of Postdate's alarms: it fires at or above its threshold, tells the operators' topic when it
 * fires and when it clears, and its description says what happened and points to the runbook.
 */
export function postdateAlarm(
  scope: Construct,
  id: string,
  topic: sns.ITopic,
  description: string,
  metric: cloudwatch.IMetric,
  options: PostdateAlarmOptions = {},
): cloudwatch.Alarm {
  const alarm = new cloudwatch.Alarm(scope, id, {
    alarmDescription: `Postdate: ${description} (docs/operations.md)`,
    metric,
    threshold: options.threshold ?? 1,
    evaluationPeriods: options.evaluationPeriods ?? 1,
    ...(options.datapointsToAlarm === undefined ? {} : { datapointsToAlarm: options.datapointsToAlarm }),
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: options.treatMissingData ?? cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  alarm.addAlarmAction(new actions.SnsAction(topic));
  alarm.addOkAction(new actions.SnsAction(topic));
  return alarm;
}

/**
 * One of the functions' EMF metrics of the stack `scope` is in, with the dimensions they emit it with
 * (lambdas/adapters/powertoolsMetrics.ts): another stack's metric of the same name is not this one.
 */
export function stackMetric(
  scope: Construct,
  metricName: string,
  statistic: string,
  period: Duration,
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS.namespace,
    metricName,
    dimensionsMap: metricDimensions(Stack.of(scope).stackName),
    statistic,
    period,
  });
}

/**
 * One relay's series of a metric the sender publishes per relay (core/metricNames.ts
 * PER_RELAY_METRICS, DESIGN §15): the stack's dimensions and the relay's name. No label: an alarm on
 * a labelled metric is written as a metric query, not on the metric's name (give one with `with`).
 */
export function relayMetric(
  scope: Construct,
  metricName: string,
  relay: string,
  statistic: string,
  period: Duration,
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS.namespace,
    metricName,
    dimensionsMap: relayMetricDimensions(Stack.of(scope).stackName, relay),
    statistic,
    period,
  });
}
