/**
 * One endpoint that stalls and others that answer (DESIGN §11: "Delivery is at least once; one
 * endpoint's failures never delay another's"), on the real parts: DynamoDB Local, the SQS emulator
 * and node http receivers, one of which accepts every POST and never answers. The delivery function
 * is one warm instance, run batch after batch as one slot of the SQS event source runs it: a copy
 * POSTed to the stalled endpoint holds its whole batch, and so the slot, for the attempt's timeout
 * (a short real one here, 10 s in AWS). Retry delays run on the test's clock; nothing sleeps.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startReceiver, subscribe, webhookHarness } from './webhookHarness.js';

const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
async function receiver(...args: Parameters<typeof startReceiver>) {
  const started = await startReceiver(...args);
  receivers.push(started);
  return started;
}
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
});

type Harness = Awaited<ReturnType<typeof webhookHarness>>;
interface DeliveryView {
  id: string;
  status: string;
  attempts: number;
  history: { at: string; status_code: number | null; error: string | null; duration_ms: number }[];
}

const deliveriesOf = async (harness: Harness, endpoint: string): Promise<DeliveryView[]> =>
  (
    await harness.call({
      method: 'GET',
      path: `/v1/webhooks/${endpoint}/deliveries`,
      query: { limit: '100' },
    })
  ).json.items;

const testEvent = async (harness: Harness, endpoint: string) => {
  const answer = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint}/test` });
  if (answer.status !== 202) throw new Error(`test event: ${answer.status}`);
};

describe('the WebhookEndpointStalled metric and its warning (decision 0132: counted when a function starts deferring an endpoint)', () => {
  it('counts one opening for a batch whose POSTs to one endpoint all stalled at once, not one per POST in flight', async () => {
    const harness = await webhookHarness({ timeoutMs: 500, clockFollowsDelays: false });
    const stalled = await receiver(() => 'stall');
    const slow = await subscribe(harness, stalled.url());

    for (let index = 0; index < 3; index++) await testEvent(harness, slow.id);
    await harness.pump({ rounds: 1 });

    // The three copies came in one batch and were POSTed side by side: three stalls, one opening.
    expect(stalled.received).toHaveLength(3);
    expect(harness.metrics.filter((metric) => metric === 'WebhookEndpointStalled')).toHaveLength(1);
  });
});

describe("a stalled endpoint and a healthy one (DESIGN §11: one endpoint's failures never delay another's)", () => {
  it("once an endpoint has stalled, a function makes the healthy endpoint's deliveries without POSTing to it again, and delivers its copies, none lost, when it answers", async () => {
    // The clock stands still while the slot works: every copy, put back or retried, is due at once.
    // The timeout is the healthy endpoint's too: 2 s (decision 0044), not 500 ms, which one 600 ms
    // stall of the event loop (a loaded machine's) overran with its 200 waiting: it then stalled (0284).
    const harness = await webhookHarness({ timeoutMs: 2000, clockFollowsDelays: false });
    let stalling = true;
    const stalled = await receiver(() => (stalling ? 'stall' : 200));
    const healthy = await receiver(() => 200);
    const slow = await subscribe(harness, stalled.url());
    const fine = await subscribe(harness, healthy.url());

    // The stalled endpoint's first copy: its POST times out and held the slot for the timeout.
    await testEvent(harness, slow.id);
    await harness.pump({ rounds: 1 });
    expect(stalled.received).toHaveLength(1);
    // The function's breaker opened for it, and says so in a metric (decision 0132).
    expect(harness.metrics.filter((metric) => metric === 'WebhookEndpointStalled')).toHaveLength(1);

    // Then both keep sending, interleaved: 5 events for the stalled endpoint, 20 for the healthy one.
    for (let index = 0; index < 20; index++) {
      if (index % 4 === 0) await testEvent(harness, slow.id);
      await testEvent(harness, fine.id);
    }
    await harness.pump({ rounds: 400, until: () => healthy.received.length >= 20 });

    // Every healthy delivery went out, and not one batch waited on the stalled endpoint meanwhile.
    expect(new Set(healthy.received.map((request) => request.headers['webhook-id'])).size).toBe(20);
    expect(stalled.received).toHaveLength(1);
    const waiting = await deliveriesOf(harness, slow.id);
    expect(waiting).toHaveLength(6);
    expect(waiting.every((delivery) => delivery.status === 'pending')).toBe(true);

    // The endpoint answers again; after the breaker's longest interval every copy is delivered.
    stalling = false;
    harness.clock.advance(15 * 60_000);
    await harness.pump({ rounds: 400 });
    const delivered = await deliveriesOf(harness, slow.id);
    expect(delivered.map((delivery) => delivery.status)).toEqual(Array(6).fill('delivered'));
    const ids = new Set(stalled.received.map((request) => request.headers['webhook-id']));
    expect(ids.size).toBe(6);
  }, 60_000);

  it("ends a stalled endpoint's deliveries failed only once their retry window is spent, each attempt recorded", async () => {
    const random = () => 0.5;
    const harness = await webhookHarness({ timeoutMs: 300, retryHours: 1, random });
    const stalled = await receiver(() => 'stall');
    const slow = await subscribe(harness, stalled.url());
    for (let index = 0; index < 4; index++) await testEvent(harness, slow.id);
    await harness.pump({ rounds: 400 });

    const deliveries = await deliveriesOf(harness, slow.id);
    expect(deliveries).toHaveLength(4);
    for (const delivery of deliveries) {
      expect(delivery.status).toBe('failed');
      // Failed by the window rule: the next retry (at most half the 1 h cap with this draw) would
      // have fallen past the hour from the first attempt, so the last attempt ended in its second half.
      const record = await harness.store.getDelivery(slow.id, delivery.id);
      const windowStart = Date.parse(record?.windowStartedAt ?? '');
      const last = delivery.history.at(-1);
      expect(Date.parse(last?.at ?? '') + (last?.duration_ms ?? 0)).toBeGreaterThanOrEqual(
        windowStart + 1_800_000,
      );
      // Every attempt is in the history: a POST that timed out, or the last, deferred at the end.
      expect(delivery.history.every((attempt) => attempt.error !== null)).toBe(true);
    }
    // One function POSTed to the stalled endpoint the first batch's 4 copies, then at most one probe
    // per interval (at least 10, 20, 40, 80, 160 s, then 300 s): within the hour and a bit, ≤ 4 + 17.
    expect(stalled.received.length).toBeLessThanOrEqual(21);
  }, 60_000);
});
