import { Metrics } from '@aws-lambda-powertools/metrics';
import { RESOURCE_SETTINGS } from '../core/configSpec.js';
import { METRICS, metricDimensions } from '../core/metricNames.js';
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
