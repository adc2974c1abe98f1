import { BUS_EVENTS_DEFAULT, type BusEvents, putsOnBus } from '../core/busEvents.js';
import { errorForLog } from '../core/errorForLog.js';
import {
  deriveStatusChange,
  type MessageEventType,
  messageEvent,
  type PostdateEvent,
} from '../core/messageEvents.js';
import { WEBHOOK_METRIC, type WebhookMetric } from '../core/metricNames.js';
import { runWithConcurrency } from '../core/runWithConcurrency.js';
import { isSubscribed, WEBHOOK_DELIVERY_STATUS } from '../core/webhooks.js';
import type { Log } from '../ports/Log.js';
import type { EventBus, QueuedWebhookCopy, WebhookQueue, WebhookStore } from '../ports/Webhooks.js';
import { messageView } from '../store/messageView.js';
import { inStreamOrder } from '../store/streamRecord.js';
import { newDelivery } from '../store/webhookStore.js';
import type { EventRecord } from './eventRecords.js';

export interface EventDeps {
  /** AWS: the EventBridge bus; absent locally (the local stack has no bus). */
  readonly bus?: EventBus | undefined;
  /** The types put on the bus (POSTDATE_BUS_EVENTS, core/busEvents.ts). @default 'all' */
  readonly busEvents?: BusEvents;
  readonly store: WebhookStore;
  readonly queue: WebhookQueue;
  readonly now: () => Date;
  readonly retryHours: number;
  readonly retentionDays: number;
  readonly log?: Log;
  readonly count?: (metric: WebhookMetric, value: number) => void;
}

export interface EventsOutcome {
  /** Sequence numbers of the records to retry, in stream order. */
  readonly failed: readonly string[];
  readonly events: number;
  readonly deliveries: number;
}

/**
 * Turns a stream batch into events: each status change one event (core/messageEvents.ts), put on the
 * bus and written as one delivery per subscribed endpoint of the event's tenant, each delivery's
 * first copy queued. A record whose event could not be put or delivered is reported for a retry;
 * the replay makes the same ids, so the bus gets a duplicate consumers dedupe and the deliveries
 * already written are found, not doubled.
 */
export async function produceEvents(
  records: readonly EventRecord[],
  deps: EventDeps,
): Promise<EventsOutcome> {
  const failed = new Set<string>();
  // `tenant` is the tenant id the endpoints are kept under (a test side's own); the event shows the public name.
  const events: { sequenceNumber: string; tenant: string; type: MessageEventType; event: PostdateEvent }[] =
    [];
  for (const record of records) {
    const change = deriveStatusChange(record.change);
    if (change === null || record.state === null) continue;
    const { history: _history, ...view } = messageView(record.state, { withHistory: false });
    events.push({
      sequenceNumber: record.sequenceNumber,
      tenant: change.tenant,
      type: change.type,
      event: messageEvent(change, view),
    });
  }
  if (events.length === 0) return { failed: [], events: 0, deliveries: 0 };

  // The bus and the webhooks are two ways out of the same events, neither waiting for the other: a
  // slow or throttled bus (the SDK retries with backoff) does not hold the webhook copies back. A
  // record fails if either way failed for its event. The bus takes only the types the deployment
  // puts on it; with none of this batch's, no request is made.
  const busEvents = deps.busEvents ?? BUS_EVENTS_DEFAULT;
  const onBus = events.filter((entry) => putsOnBus(entry.type, busEvents));
  const published = deps.bus && onBus.length > 0 ? publish(deps.bus, onBus, failed, deps) : Promise.resolve();

  // One read of each tenant's endpoints per batch; an event only ever reaches its own tenant's.
  const tenants = [...new Set(events.map((entry) => entry.tenant))];
  const endpointsOf = new Map<string, Awaited<ReturnType<WebhookStore['listEndpoints']>>>();
  let deliveries = 0;
  await runWithConcurrency(tenants, 4, async (tenant) => {
    try {
      endpointsOf.set(tenant, await deps.store.listEndpoints(tenant));
    } catch (error) {
      for (const entry of events) if (entry.tenant === tenant) failed.add(entry.sequenceNumber);
      deps.log?.warn('could not read webhook endpoints', { tenant, error: errorForLog(error) });
    }
  });
  const now = deps.now();
  const copies: { sequenceNumber: string; queued: QueuedWebhookCopy }[] = [];
  await runWithConcurrency(events, EVENT_LANES, async ({ sequenceNumber, tenant, event }) => {
    const endpoints = endpointsOf.get(tenant) ?? [];
    for (const endpoint of endpoints) {
      if (endpoint.tenant !== tenant || !isSubscribed(endpoint.events, event.type)) continue;
      try {
        const written = await deps.store.putDelivery(
          newDelivery({
            endpoint,
            event,
            now,
            retryHours: deps.retryHours,
            retentionDays: deps.retentionDays,
          }),
        );
        const delivery = written.delivery;
        // A replay finds its delivery; one never attempted may have lost its copy, so it gets one
        // again (a duplicate copy costs at most one extra POST: see deliverCopy).
        if (
          written.kind === 'created' ||
          (delivery.status === WEBHOOK_DELIVERY_STATUS.pending && delivery.attempts === 0)
        ) {
          deliveries += written.kind === 'created' ? 1 : 0;
          copies.push({
            sequenceNumber,
            queued: {
              copy: { v: 1, endpoint: delivery.endpointId, delivery: delivery.id, rev: delivery.rev, seq: 0 },
              delaySeconds: 0,
            },
          });
        }
      } catch (error) {
        failed.add(sequenceNumber);
        deps.log?.warn('could not write a webhook delivery', {
          endpointId: endpoint.id,
          error: errorForLog(error),
        });
      }
    }
  });
  if (copies.length > 0) {
    const sequenceOf = new Map(copies.map((entry) => [entry.queued, entry.sequenceNumber]));
    const sent = await deps.queue.send(copies.map((entry) => entry.queued));
    for (const queued of sent.failed) {
      const sequenceNumber = sequenceOf.get(queued);
      if (sequenceNumber !== undefined) failed.add(sequenceNumber);
    }
    if (sent.failed.length > 0) {
      deps.log?.warn('could not queue some webhook copies', {
        failed: sent.failed.length,
        error: errorForLog(sent.error),
      });
    }
  }
  await published;
  return { failed: inStreamOrder(records, failed), events: events.length, deliveries };
}

/** Puts the batch's events on the bus; the records of those it could not put go into `failed`. */
async function publish(
  bus: EventBus,
  events: readonly { readonly sequenceNumber: string; readonly event: PostdateEvent }[],
  failed: Set<string>,
  deps: Pick<EventDeps, 'log' | 'count'>,
): Promise<void> {
  try {
    const published = await bus.publish(events.map((entry) => entry.event));
    const refused = new Set(published.failed);
    for (const entry of events) if (refused.has(entry.event)) failed.add(entry.sequenceNumber);
    if (published.failed.length > 0) {
      deps.log?.warn('some events were not put on the bus', {
        failed: published.failed.length,
        error: errorForLog(published.error),
      });
    }
    deps.count?.(WEBHOOK_METRIC.eventsPublished, events.length - published.failed.length);
    if (published.failed.length > 0) deps.count?.(WEBHOOK_METRIC.eventsNotPublished, published.failed.length);
  } catch (error) {
    for (const entry of events) failed.add(entry.sequenceNumber);
    deps.count?.(WEBHOOK_METRIC.eventsNotPublished, events.length);
    deps.log?.warn('the event bus could not be reached', { error: errorForLog(error) });
  }
}

/** Events of one batch whose deliveries are written at once (the cost benchmark's duration model reads it). */
export const EVENT_LANES = 8;
