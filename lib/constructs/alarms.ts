import { type Duration, Lazy, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct, IConstruct } from 'constructs';
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
 * fires and when it clears, and its description says what happened and points to the runbook by the
 * name its procedure quotes (test/runbook/everyAlarmHasASection.test.ts).
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
    alarmDescription: `Postdate: ${description} (docs/runbook.md, \`${runbookName(id)}\`)`,
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

/** The name docs/runbook.md gives an alarm: its id, without a relay's name (`RelayUnavailable-backup`). */
function runbookName(alarmId: string): string {
  return alarmId.replace(/-.*$/, '');
}

/** Where a Postdate construct keeps the `stack` dimension of its metrics ({@link metricStackName}). */
const METRIC_STACK = Symbol.for('postdate.metricStack');

type MetricStackRoot = IConstruct & { readonly [METRIC_STACK]: string };

function isMetricStackRoot(construct: IConstruct): construct is MetricStackRoot {
  return METRIC_STACK in construct;
}

/**
 * Makes `root` (a Postdate) the owner of the `stack` dimension its functions write (POSTDATE_STACK)
 * and its alarms and dashboard watch, and returns it: the stack's name, as every deployed stack has
 * always had it; where one stack holds more than one Postdate, the stack's name, `/` and the
 * construct's path in the stack (`Mail/Transactional`), so two in one stack never add up in each
 * other's alarms (DESIGN §6). Decided at synth, once every construct of the stack exists.
 */
export function ownMetricStack(root: Construct): string {
  const stack = Stack.of(root);
  const value = Lazy.string({
    produce: () => {
      const roots = stack.node
        .findAll()
        .filter((construct) => isMetricStackRoot(construct) && Stack.of(construct) === stack);
      if (roots.length <= 1) return stack.stackName;
      return `${stack.stackName}/${root.node.path.slice(stack.node.path.length + 1)}`;
    },
  });
  Object.defineProperty(root, METRIC_STACK, { value, enumerable: false });
  return value;
}

/**
 * The `stack` dimension of the metrics of the Postdate `scope` is in ({@link ownMetricStack}); the
 * stack's name when no Postdate encloses it.
 */
export function metricStackName(scope: Construct): string {
  const root = [...scope.node.scopes].reverse().find(isMetricStackRoot);
  return root === undefined ? Stack.of(scope).stackName : root[METRIC_STACK];
}

/**
 * One of the functions' EMF metrics of the Postdate `scope` is in ({@link metricStackName}), with the dimensions they emit it with
 * (lambdas/adapters/powertoolsMetrics.ts): another Postdate's metric of the same name is not this one.
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
    dimensionsMap: metricDimensions(metricStackName(scope)),
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
    dimensionsMap: relayMetricDimensions(metricStackName(scope), relay),
    statistic,
    period,
  });
}
