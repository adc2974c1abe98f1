/**
 * A test side's webhook deliveries stay off the live metrics (DESIGN §14 "Test and live data never
 * meet", §6 "alarms and the dashboard are the way to a person", decision 0155): an endpoint a
 * customer's CI subscribed with a test key and left failing must not fire the live
 * `WebhookDeliveriesFailed` alarm. The live twin of each case is counted as before. Real parts:
 * DynamoDB Local, the SQS emulator, a real HTTP receiver on 127.0.0.1; retry delays run on the
 * test's clock, nothing sleeps but the attempts' short real timeouts.
 */
import type { LookupAddress } from 'node:dns';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeWebhookHttp } from '../../lambdas/adapters/nodeWebhookHttp.js';
import { WEBHOOK_METRIC } from '../../lambdas/core/metricNames.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { startReceiver, subscribe, webhookHarness } from './webhookHarness.js';

const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
});

type Harness = Awaited<ReturnType<typeof webhookHarness>>;

/** Subscribes `url` for `tenant`, sends it a `webhook.test` event, runs the delivery function dry: the delivery. */
async function deliverOnce(harness: Harness, tenant: string, url: string) {
  const endpoint = await subscribe(harness, url, tenant);
  const sent = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test`, tenant });
  if (sent.status !== 202) throw new Error(`test event: ${sent.status}`);
  await harness.pump();
  const listed = await harness.call({
    method: 'GET',
    path: `/v1/webhooks/${endpoint.id}/deliveries`,
    tenant,
  });
  const [delivery] = listed.json.items;
  return delivery as { status: string; history: { error: string | null }[] };
}

/** An endpoint that stalls on its first POST, then answers 503 until the retry window ends. */
async function stallingThenFailing() {
  const hook = await startReceiver((index) => (index === 0 ? 'stall' : 503));
  receivers.push(hook);
  return hook;
}

describe("a test side's webhook deliveries and the live metrics (decision 0155)", () => {
  it('counts no stall, retry or failure of a test-side delivery; its live twin counts them', async () => {
    const testSide = await webhookHarness({ retryHours: 1, timeoutMs: 300 });
    const onTestSide = await deliverOnce(testSide, testSideOf('acme'), (await stallingThenFailing()).url());
    // The delivery itself is told on its own side, as before: failed, listed, with its history.
    expect(onTestSide.status).toBe('failed');
    expect(onTestSide.history[0]?.error).toBe('timeout');
    expect(onTestSide.history.length).toBeGreaterThan(2);
    expect(testSide.metrics).toEqual([]);

    const live = await webhookHarness({ retryHours: 1, timeoutMs: 300 });
    expect((await deliverOnce(live, 'acme', (await stallingThenFailing()).url())).status).toBe('failed');
    expect(live.metrics).toContain(WEBHOOK_METRIC.endpointStalled);
    expect(live.metrics).toContain(WEBHOOK_METRIC.retried);
    expect(live.metrics.filter((metric) => metric === WEBHOOK_METRIC.failed)).toHaveLength(1);
  });

  it('counts no refused attempt of a test-side delivery; its live twin counts it', async () => {
    const zone: Record<string, readonly LookupAddress[]> = {
      'metadata.test': [{ address: '169.254.169.254', family: 4 }],
    };
    const resolve = async (hostname: string) => zone[hostname] ?? [];
    const refusing = () =>
      webhookHarness({
        policy: 'public-https',
        http: createNodeWebhookHttp({ policy: 'public-https', resolve }),
        retryHours: 1,
      });
    const hook = await startReceiver();
    receivers.push(hook);
    const url = `https://metadata.test:${hook.port}/hook`;

    const testSide = await refusing();
    const onTestSide = await deliverOnce(testSide, testSideOf('acme'), url);
    expect(onTestSide.history[0]?.error).toMatch(/^refused: /);
    expect(testSide.metrics).toEqual([]);

    const live = await refusing();
    expect((await deliverOnce(live, 'acme', url)).history[0]?.error).toMatch(/^refused: /);
    expect(live.metrics).toContain(WEBHOOK_METRIC.refused);
    expect(live.metrics).toContain(WEBHOOK_METRIC.failed);
    expect(hook.connections()).toBe(0);
  });
});
