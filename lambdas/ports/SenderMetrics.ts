import type { SenderCountMetric, SenderTimeMetric } from '../core/metricNames.js';

/** Where the sender reports metrics. The Lambda adapts Powertools Metrics (EMF); tests record. */
export interface SenderMetrics {
  /** `relay`: the relay the count is about, for the metrics published per relay (core/metricNames.ts). */
  count(name: SenderCountMetric, value?: number, relay?: string): void;
  milliseconds(name: SenderTimeMetric, value: number, relay?: string): void;
}

/** Metrics that go nowhere (for callers that do not care). */
export const NO_METRICS: SenderMetrics = { count: () => {}, milliseconds: () => {} };
