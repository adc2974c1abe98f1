import { MESSAGE_STATUS, type MessageStatus } from '../core/messageStatus.js';

/**
 * The sweeper's metrics (namespace `Postdate`): a gauge per status that waits for an operator — how
 * many such messages exist, published every run, so their alarms stay on while any exists — and the
 * count of copies it re-dispatched. The alarms in lib/ refer to them by these constants.
 */
export const SWEEPER_METRIC = {
  waiting: {
    [MESSAGE_STATUS.failed]: 'WaitingFailed',
    [MESSAGE_STATUS.dead]: 'WaitingDead',
    [MESSAGE_STATUS.unknown]: 'WaitingUnknown',
  },
  redispatched: 'Redispatched',
} as const satisfies { waiting: Partial<Record<MessageStatus, string>>; redispatched: string };

export type WaitingStatus = keyof typeof SWEEPER_METRIC.waiting;
export type SweeperMetricName =
  | (typeof SWEEPER_METRIC.waiting)[WaitingStatus]
  | typeof SWEEPER_METRIC.redispatched;

/** Where the sweeper reports (the Lambda adapts Powertools Metrics; tests record). */
export interface SweeperMetrics {
  count(name: SweeperMetricName, value: number): void;
}
