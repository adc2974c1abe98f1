import { Metrics } from '@aws-lambda-powertools/metrics';
import { METRICS } from '../core/metricNames.js';
import type { Environment } from './explicitEnvironment.js';

/**
 * The Powertools metrics of a function (DESIGN §6): namespace `Postdate` and the dimensions every
 * Postdate metric carries, so the alarms in lib/ (which build theirs from the same definitions)
 * watch exactly what is emitted. Every function that publishes EMF metrics builds its `Metrics` here.
 */
export function functionMetrics(_env: Environment): Metrics {
  return new Metrics({ namespace: METRICS.namespace, serviceName: METRICS.service });
}
