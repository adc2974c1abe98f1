/**
 * What an operator reads and retries of one endpoint's deliveries (DESIGN §3, §4, §11): "then the
 * delivery is `failed`, listed and retryable through the API", `GET /v1/webhooks/{id}` "(with
 * delivery counts)", and "storage cost is part of the design". The failed deliveries are listed and
 * counted at a cost that follows the failed ones, not every delivery the endpoint keeps (a month of
 * them); a delivery whose copy went to the webhook DLQ can be retried through the API, and the parked
 * copy redriven later starts no second chain. DynamoDB Local, the SQS emulator and a real receiver;
 * the clock is the test's. The reads are counted on the API store's own DynamoDB client.
 */
import { DeleteMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { EVENT_TYPES, type PostdateEvent } from '../../lambdas/core/messageEvents.js';
import { WEBHOOK_STALLED_AFTER_MS } from '../../lambdas/core/webhookOperator.js';
import type { WebhookStore } from '../../lambdas/ports/Webhooks.js';
import { WEBHOOK_DELIVERY_SHARDS } from '../../lambdas/store/tableLayout.js';
import { newDelivery } from '../../lambdas/store/webhookStore.js';
import { documentClient, sqsClient } from '../support/awsLocal.js';
import { startReceiver, subscribe, webhookHarness } from './webhookHarness.js';

const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
});

type Harness = Awaited<ReturnType<typeof webhookHarness>>;

/** A DynamoDB client that counts the items its reads went through (a Query's ScannedCount, a Get's item). */
function countingDocuments(): {
  documents: DynamoDBDocumentClient;
  itemsRead: () => number;
  reset: () => void;
} {
  const documents = documentClient();
  let items = 0;
  documents.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      const output = result.output as { ScannedCount?: number; Item?: unknown };
      items += output.ScannedCount ?? (output.Item ? 1 : 0);
      return result;
    },
    { step: 'initialize', name: 'countItemsRead' },
  );
  return {
    documents,
    itemsRead: () => items,
    reset: () => {
      items = 0;
    },
  };
}

const eventAt = (n: number): PostdateEvent =>
  ({
    id: `evt_${String(n).padStart(5, '0')}`,
    type: EVENT_TYPES[0],
    created_at: new Date(Date.parse('2026-03-01T00:00:00Z') + n * 1000).toISOString(),
    tenant: 'acme',
    data: {},
  }) as unknown as PostdateEvent;

/**
 * `count` deliveries of one endpoint, one event a second: most delivered; those in `failedAt` end
 * failed as the delivery function ends them (an attempt written with the window spent), those in
 * `pendingAt` wait for their next attempt.
 */
async function storeDeliveries(
  store: WebhookStore,
  harness: Harness,
  endpointId: string,
  count: number,
  shape: { readonly failedAt: readonly number[]; readonly pendingAt: readonly number[] },
) {
  const failed: string[] = [];
  const write = async (n: number) => {
    const fresh = newDelivery({
      endpoint: { id: endpointId, tenant: 'acme' },
      event: eventAt(n),
      now: harness.clock.now(),
      retryHours: 24,
      retentionDays: 30,
    });
    if (shape.pendingAt.includes(n)) return store.putDelivery(fresh);
    if (!shape.failedAt.includes(n)) return store.putDelivery({ ...fresh, status: 'delivered' });
    await store.putDelivery(fresh);
    const at = harness.clock.now().toISOString();
    await store.recordAttempt({
      endpointId,
      deliveryId: fresh.id,
      rev: 1,
      seq: 0,
      attempt: { at, statusCode: 503, error: null, durationMs: 5 },
      windowStartedAt: at,
      next: { kind: 'failed', at },
    });
    failed.push(fresh.id);
  };
  for (let n = 0; n < count; n += 25) {
    await Promise.all(Array.from({ length: Math.min(25, count - n) }, (_, k) => write(n + k)));
  }
  return { failedNewestFirst: failed.sort().reverse() };
}

describe("an endpoint's failed deliveries among a month of delivered ones (DESIGN §3, §4, §11)", () => {
  it('are listed newest first and paged by reading the failed ones only', async () => {
    const counter = countingDocuments();
    const harness = await webhookHarness({ apiDocuments: counter.documents });
    const endpoint = await subscribe(harness, 'http://127.0.0.1:9/hook');
    const { failedNewestFirst } = await storeDeliveries(harness.store, harness, endpoint.id, 400, {
      failedAt: [3, 150, 260, 399],
      pendingAt: [],
    });

    counter.reset();
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const page = await harness.call({
        method: 'GET',
        path: `/v1/webhooks/${endpoint.id}/deliveries`,
        query: { status: 'failed', limit: '3', ...(cursor ? { cursor } : {}) },
      });
      expect(page.status).toBe(200);
      expect(page.json.items.every((item: { status: string }) => item.status === 'failed')).toBe(true);
      pages.push(page.json.items.map((item: { id: string }) => item.id));
      cursor = page.json.next_cursor;
    } while (cursor !== null && pages.length < 10);
    expect(pages.flat()).toEqual(failedNewestFirst);
    expect(pages[0]).toHaveLength(3);
    // Each failed delivery is read about twice per page that reaches it (its entry, then the item);
    // none of the 396 delivered ones is read.
    expect(counter.itemsRead()).toBeLessThanOrEqual(4 * failedNewestFirst.length);

    // Retried, a delivery leaves the failed listing.
    const retried = failedNewestFirst[0] ?? '';
    const retry = await harness.call({
      method: 'POST',
      path: `/v1/webhooks/${endpoint.id}/deliveries/${retried}/retry`,
    });
    expect(retry.status).toBe(202);
    const after = await harness.call({
      method: 'GET',
      path: `/v1/webhooks/${endpoint.id}/deliveries`,
      query: { status: 'failed' },
    });
    expect(after.json.items.map((item: { id: string }) => item.id)).toEqual(failedNewestFirst.slice(1));
  }, 60_000);

  it('are counted with the endpoint, at a cost that does not grow with the delivered ones', async () => {
    const counter = countingDocuments();
    const harness = await webhookHarness({ apiDocuments: counter.documents });
    const endpoint = await subscribe(harness, 'http://127.0.0.1:9/hook');
    await storeDeliveries(harness.store, harness, endpoint.id, 400, {
      failedAt: [3, 150, 260],
      pendingAt: [398, 399],
    });

    // What a GET reads whatever the deliveries (the endpoint, the caller's key): an endpoint with none.
    const empty = await subscribe(harness, 'http://127.0.0.1:9/other-hook');
    counter.reset();
    expect((await harness.call({ method: 'GET', path: `/v1/webhooks/${empty.id}` })).status).toBe(200);
    const fixedReads = counter.itemsRead();

    counter.reset();
    const one = await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}` });
    expect(one.status).toBe(200);
    const { deliveries } = one.json;
    expect(deliveries.failed).toBe(3);
    // `pending` and `delivered` count the newest delivery of each of the endpoint's partitions.
    expect(deliveries.recent).toBeGreaterThan(WEBHOOK_DELIVERY_SHARDS / 2);
    expect(deliveries.recent).toBeLessThanOrEqual(WEBHOOK_DELIVERY_SHARDS);
    // Two pending deliveries that share a partition (1 in 128), or one a delivered sibling written in the
    // same batch outdates, count once: CI saw 1 (at f6a3b8f).
    expect(deliveries.pending).toBeGreaterThanOrEqual(1);
    expect(deliveries.pending).toBeLessThanOrEqual(2);
    expect(deliveries.pending + deliveries.delivered).toBeLessThanOrEqual(deliveries.recent);
    // At most the newest of each partition and the three failed ones, past the fixed reads: CI saw
    // 132 against a bound of SHARDS + 3 that left out the endpoint's own read (it held only while
    // some of the 128 partitions were empty, about 5 of them with 400 deliveries).
    expect(counter.itemsRead()).toBeLessThanOrEqual(fixedReads + WEBHOOK_DELIVERY_SHARDS + 3);
  }, 60_000);
});

describe('a delivery whose copy went to the webhook DLQ (DESIGN §11: retryable through the API)', () => {
  it('is retried through the API once its next attempt is long overdue, and the parked copy redriven later is dropped', async () => {
    const harness = await webhookHarness();
    const hook = await startReceiver(() => 200);
    receivers.push(hook);
    const endpoint = await subscribe(harness, hook.url());
    const test = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    expect(test.status).toBe(202);
    const deliveryId = test.json.id as string;

    // The copy reaches the DLQ (20 receives of table or queue errors): it leaves the queue, the
    // delivery stays pending with its next attempt in the past.
    const [parked] = await harness.receive();
    const sqs = sqsClient();
    await sqs.send(
      new DeleteMessageCommand({ QueueUrl: harness.queueUrl, ReceiptHandle: parked?.receiptHandle }),
    );
    const retryPath = `/v1/webhooks/${endpoint.id}/deliveries/${deliveryId}/retry`;

    // Not yet: its copy may still be on its way.
    harness.clock.advance(WEBHOOK_STALLED_AFTER_MS - 60_000);
    const early = await harness.call({ method: 'POST', path: retryPath });
    expect(early.status).toBe(409);
    expect(early.json.delivery_status).toBe('pending');
    // When it can be, and why not yet (decision 0289).
    const [{ next_attempt_at: due }] = (
      await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}/deliveries` })
    ).json.items;
    const from = new Date(Date.parse(due) + WEBHOOK_STALLED_AFTER_MS).toISOString();
    expect(early.json.retryable_at).toBe(from);
    expect(early.json.detail).toBe(
      `The delivery is pending, its next attempt due at ${due}: its copy may still come (from the webhook queue, or from its dead-letter queue once redriven). Retry it from ${from}, when that attempt is 2 hours overdue.`,
    );

    harness.clock.advance(120_000);
    const retry = await harness.call({ method: 'POST', path: retryPath });
    expect(retry.status).toBe(202);
    expect(retry.json).toMatchObject({ id: deliveryId, status: 'pending' });

    // The operator redrives the DLQ as well: the parked copy is of the old revision.
    await sqs.send(new SendMessageCommand({ QueueUrl: harness.queueUrl, MessageBody: parked?.body ?? '' }));
    await harness.pump();
    expect(hook.received).toHaveLength(1);
    const listed = await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}/deliveries` });
    expect(listed.json.items[0]).toMatchObject({ id: deliveryId, status: 'delivered', attempts: 1 });
  });

  it('retried twice at once (two requests that read it alike), reaches the endpoint once', async () => {
    const harness = await webhookHarness();
    const hook = await startReceiver(() => 200);
    receivers.push(hook);
    const endpoint = await subscribe(harness, hook.url());
    const test = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    const deliveryId = test.json.id as string;
    // Its copy dropped by hand (the DLQ purged): pending, long overdue.
    const [parked] = await harness.receive();
    await sqsClient().send(
      new DeleteMessageCommand({ QueueUrl: harness.queueUrl, ReceiptHandle: parked?.receiptHandle }),
    );
    harness.clock.advance(WEBHOOK_STALLED_AFTER_MS + 60_000);

    // Both read rev 1 and queue a copy before either writes; one write lands, the other is a 409.
    const retryPath = `/v1/webhooks/${endpoint.id}/deliveries/${deliveryId}/retry`;
    const answers = await Promise.all([
      harness.call({ method: 'POST', path: retryPath }),
      harness.call({ method: 'POST', path: retryPath }),
    ]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([202, 409]);
    await harness.pump();
    expect(hook.received.map((request) => request.headers['webhook-id'])).toHaveLength(1);
    const listed = await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}/deliveries` });
    expect(listed.json.items[0]).toMatchObject({ id: deliveryId, status: 'delivered', attempts: 1 });
  });

  it('is not retried by a request that read it before an attempt landed: one chain goes on', async () => {
    const harness = await webhookHarness();
    const endpoint = await subscribe(harness, 'http://127.0.0.1:9/hook');
    const created = newDelivery({
      endpoint: { id: endpoint.id, tenant: 'acme' },
      event: eventAt(1),
      now: new Date(harness.clock.now().getTime() - 3 * WEBHOOK_STALLED_AFTER_MS),
      retryHours: 24,
      retentionDays: 30,
    });
    await harness.store.putDelivery(created);
    const at = harness.clock.now().toISOString();
    // The old chain writes its attempt after the retry read the delivery with 0 attempts.
    expect(
      await harness.store.recordAttempt({
        endpointId: endpoint.id,
        deliveryId: created.id,
        rev: 1,
        seq: 0,
        attempt: { at, statusCode: 500, error: null, durationMs: 5 },
        windowStartedAt: at,
        next: { kind: 'retry', at: new Date(Date.parse(at) - 3 * WEBHOOK_STALLED_AFTER_MS).toISOString() },
      }),
    ).toBe('updated');
    const result = await harness.store.retryDelivery({
      endpointId: endpoint.id,
      deliveryId: created.id,
      seen: { rev: 1, attempts: 0 },
      retryId: '0'.repeat(32),
      now: at,
      expiresAt: created.expiresAt,
    });
    expect(result.kind).toBe('conflict');
    expect(await harness.store.getDelivery(endpoint.id, created.id)).toMatchObject({ rev: 1, attempts: 1 });
  });
});
