import type { SweeperMetricName } from '../core/metricNames.js';

/** Where the sweeper reports (the Lambda adapts Powertools Metrics; tests record). */
export interface SweeperMetrics {
  count(name: SweeperMetricName, value: number): void;
}
