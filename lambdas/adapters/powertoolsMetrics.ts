import { Metrics, type MetricUnit } from '@aws-lambda-powertools/metrics';
import { RESOURCE_SETTINGS } from '../core/configSpec.js';
import { METRICS, metricDimensions, PER_RELAY_METRICS, RELAY_DIMENSION } from '../core/metricNames.js';
import type { Environment } from './explicitEnvironment.js';

/**
 * The Powertools metrics of a function (DESIGN §6): namespace `Postdate` and the dimensions every
 * Postdate metric carries (`service`, and `stack` from `POSTDATE_STACK`), so the alarms in lib/,
 * which build theirs from the same {@link metricDimensions}, watch exactly what is emitted. Every
 * function that publishes EMF metrics builds its `Metrics` here.
 *
 * The construct sets `POSTDATE_STACK` on every function (test/cdk/metricDimensions.test.ts); unset, it
 * is the local stack's `local`.
 */
export function functionMetrics(env: Environment): Metrics {
  const { variable, local } = RESOURCE_SETTINGS.stackName;
  const stackName = env[variable]?.trim() || local;
  return new Metrics({
    namespace: METRICS.namespace,
    serviceName: METRICS.service,
    defaultDimensions: metricDimensions(stackName),
  });
}

/**
 * Adds one datapoint of `name`; with `relay`, for a metric of PER_RELAY_METRICS (DESIGN §15), as its
 * own EMF document with two dimension sets — the stack's, and the stack's with `relay` — so the
 * alarms on the stack's dimensions count it once and the dashboard can draw each relay. Without a
 * relay (or for another metric) it joins the invocation's metrics, flushed when it ends.
 */
export function addMetric(
  metrics: Metrics,
  name: string,
  unit: (typeof MetricUnit)[keyof typeof MetricUnit],
  value: number,
  relay?: string,
): void {
  if (relay === undefined || !PER_RELAY_METRICS.has(name)) {
    metrics.addMetric(name, unit, value);
    return;
  }
  const single = metrics.singleMetric();
  single.addDimension(RELAY_DIMENSION, relay);
  // An empty set is the default dimensions alone: the series the alarms watch.
  single.addDimensions({});
  single.addMetric(name, unit, value);
}
