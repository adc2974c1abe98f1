import { Metrics, type MetricUnit } from '@aws-lambda-powertools/metrics';
import { RESOURCE_SETTINGS } from '../core/configSpec.js';
import { METRICS, metricDimensions, PER_RELAY_METRICS, RELAY_DIMENSION } from '../core/metricNames.js';
import type { Environment } from './explicitEnvironment.js';

type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];

/**
 * The EMF metrics of one function (docs/design.md §6 Operations): namespace `Postdate` and the
 * dimensions every Postdate metric carries (`service`, and `stack` from `POSTDATE_STACK`), so the
 * alarms in lib/, which build theirs from the same {@link metricDimensions}, watch exactly what is
 * emitted. Every function that publishes EMF metrics builds them here (lambdaEntry.ts), adds to them
 * during an invocation and publishes them when it ends.
 *
 * The construct sets `POSTDATE_STACK` on every function (test/cdk/metricDimensions.test.ts); unset, it
 * is the local stack's `local`.
 */
export interface FunctionMetrics {
  /**
   * Adds one datapoint of `name`. With `relay`, for a metric of PER_RELAY_METRICS (docs/design.md §15
   * Failover across relays), it is written with two dimension sets — the stack's, and the stack's
   * with `relay` — so the alarms on the stack's dimensions count it once and the dashboard can draw
   * each relay. Without a relay (or for another metric) it is written with the stack's alone.
   */
  add(name: string, unit: Unit, value: number, relay?: string): void;
  /**
   * Writes what the invocation added: one EMF document with the stack's dimensions and one per relay
   * that has datapoints, each metric's datapoints as one array. (A document per per-relay datapoint,
   * as before, wrote ~260 B of CloudWatch Logs a datapoint: issue 32, decision 0107.)
   */
  publish(): void;
}

export function functionMetrics(env: Environment): FunctionMetrics {
  const { variable, local } = RESOURCE_SETTINGS.stackName;
  const stackName = env[variable]?.trim() || local;
  const make = () =>
    new Metrics({
      namespace: METRICS.namespace,
      serviceName: METRICS.service,
      defaultDimensions: metricDimensions(stackName),
    });
  const stack = make();
  const relays = new Map<string, Metrics>();
  return {
    add(name, unit, value, relay) {
      if (relay === undefined || !PER_RELAY_METRICS.has(name)) {
        stack.addMetric(name, unit, value);
        return;
      }
      let ofRelay = relays.get(relay);
      if (!ofRelay) {
        ofRelay = make();
        relays.set(relay, ofRelay);
      }
      ofRelay.addMetric(name, unit, value);
    },
    publish() {
      if (stack.hasStoredMetrics()) stack.publishStoredMetrics();
      for (const [relay, ofRelay] of relays) {
        if (!ofRelay.hasStoredMetrics()) continue;
        // Dimensions added per document are cleared when it is written: set again for each.
        ofRelay.addDimension(RELAY_DIMENSION, relay);
        // An empty set is the default dimensions alone: the series the alarms watch.
        ofRelay.addDimensions({});
        ofRelay.publishStoredMetrics();
      }
    },
  };
}
