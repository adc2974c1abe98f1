import type { SenderCountMetric, SenderTimeMetric } from '../core/metricNames.js';

/** Where the sender reports metrics. The Lambda adapts Powertools Metrics (EMF); tests record. */
export interface SenderMetrics {
  count(name: SenderCountMetric, value?: number): void;
  milliseconds(name: SenderTimeMetric, value: number): void;
}

/** Metrics that go nowhere (for callers that do not care). */
export const NO_METRICS: SenderMetrics = { count: () => {}, milliseconds: () => {} };
