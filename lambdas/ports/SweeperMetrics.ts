import type { SweeperMetricName } from '../core/metricNames.js';

/** Where the sweeper reports (the Lambda adapts Powertools Metrics; tests record). */
export interface SweeperMetrics {
  /** `relay`: the relay a gauge is about (the metrics published per relay, core/metricNames.ts). */
  count(name: SweeperMetricName, value: number, relay?: string): void;
}
