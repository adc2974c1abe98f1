/**
 * Webhook endpoints and deliveries (DESIGN §3, §11) against DynamoDB Local, the SQS emulator and a
 * real HTTP receiver on 127.0.0.1; signatures verified with `standardwebhooks`, the reference
 * implementation. The retry schedule runs on a test clock (copies' delays jump it), nothing sleeps
 * but the one short real timeout.
 */
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeWebhookHttp } from '../../lambdas/adapters/nodeWebhookHttp.js';
import { WEBHOOK_METRIC } from '../../lambdas/core/metricNames.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { createWebhookDeliveryHandler } from '../../lambdas/webhooks/createWebhookDeliveryHandler.js';
import { matchesFilterPattern, runbookFilterPattern } from '../support/runbookLogSearch.js';
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

const headersOf = (request: { headers: Record<string, unknown> }) => ({
  'webhook-id': String(request.headers['webhook-id']),
  'webhook-timestamp': String(request.headers['webhook-timestamp']),
  'webhook-signature': String(request.headers['webhook-signature']),
});

type WebhookStore = Awaited<ReturnType<typeof webhookHarness>>['store'];

/**
 * A harness with a new endpoint's test event queued, and the delivery handler on `storeOf(store)`
 * (the harness's own by default), recording each line it logs: its level and message.
 */
async function loggingDelivery(storeOf: (store: WebhookStore) => WebhookStore = (store) => store) {
  const harness = await webhookHarness();
  const hook = await receiver();
  const endpoint = await subscribe(harness, hook.url());
  expect((await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` })).status).toBe(202);
  const lines: { level: string; message: string }[] = [];
  const record = (level: string) => (message: string) => lines.push({ level, message });
  const deliver = createWebhookDeliveryHandler({
    store: storeOf(harness.store),
    queue: harness.queue,
    http: createNodeWebhookHttp({ policy: 'local' }),
    now: harness.clock.now,
    random: Math.random,
    retryHours: 24,
    log: { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') },
  });
  return { harness, hook, lines, deliver };
}

describe('webhook endpoints (DESIGN §3)', () => {
  it('shows the whsec_ secret once, lists and removes endpoints, and hides them from other tenants', async () => {
    const harness = await webhookHarness();
    const created = await harness.call({
      method: 'POST',
      path: '/v1/webhooks',
      body: {
        url: 'http://127.0.0.1:9/hook',
        events: ['message.sent', 'message.failed'],
        description: 'crm',
      },
    });
    expect(created.status).toBe(201);
    expect(created.json.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.json).toMatchObject({
      url: 'http://127.0.0.1:9/hook',
      events: ['message.sent', 'message.failed'],
    });
    const id = created.json.id as string;

    const one = await harness.call({ method: 'GET', path: `/v1/webhooks/${id}` });
    expect(one.status).toBe(200);
    expect(one.json).not.toHaveProperty('secret');
    expect(one.json.deliveries).toEqual({ pending: 0, delivered: 0, failed: 0, recent: 0 });
    const list = await harness.call({ method: 'GET', path: '/v1/webhooks' });
    expect(list.json.items).toHaveLength(1);
    expect(JSON.stringify(list.json)).not.toContain(created.json.secret);

    expect((await harness.call({ method: 'GET', path: `/v1/webhooks/${id}`, tenant: 'other' })).status).toBe(
      404,
    );
    expect((await harness.call({ method: 'GET', path: '/v1/webhooks', tenant: 'other' })).json.items).toEqual(
      [],
    );
    expect(
      (await harness.call({ method: 'DELETE', path: `/v1/webhooks/${id}`, tenant: 'other' })).status,
    ).toBe(404);
    expect((await harness.call({ method: 'DELETE', path: `/v1/webhooks/${id}` })).status).toBe(200);
    expect((await harness.call({ method: 'GET', path: `/v1/webhooks/${id}` })).status).toBe(404);
  });

  it('refuses, under the AWS policy, a URL that is not https or names a private address', async () => {
    const harness = await webhookHarness({ policy: 'public-https' });
    for (const url of [
      'http://example.com/hook',
      'https://127.0.0.1/hook',
      'https://169.254.169.254/latest',
      'https://10.1.2.3/',
      'https://[::1]/',
      'https://localhost/',
      'https://localhost./',
      'https://LOCALHOST../',
      'https://user:pass@example.com/',
      'not a url',
    ]) {
      const answer = await harness.call({ method: 'POST', path: '/v1/webhooks', body: { url } });
      expect(answer.status, url).toBe(400);
      expect(answer.json.errors[0].field).toBe('/url');
    }
    const bad = await harness.call({
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: 'https://example.com', events: ['message.sending'] },
    });
    expect(bad.status).toBe(400);
    const ok = await harness.call({
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: 'https://example.com/hook' },
    });
    expect(ok.status).toBe(201);
  });
});

describe('a bad request to the webhook routes (DESIGN §3: problem+json, `errors` naming each field)', () => {
  it('names the URL the policy refuses beside the body fields that are invalid', async () => {
    const harness = await webhookHarness({ policy: 'public-https' });
    const bad = await harness.call({
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: 'http://example.com/hook', events: ['message.sending'] },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.errors.map((error: { field: string }) => error.field).sort()).toEqual([
      '/events/0',
      '/url',
    ]);
  });

  it('names the endpoint (`id`) when the webhook is unknown, and `delivery` when its delivery is', async () => {
    const harness = await webhookHarness();
    const hook = await receiver();
    const endpoint = await subscribe(harness, hook.url());
    const tested = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    const delivery = tested.json.id as string;
    const fieldsOf = (answer: { json: Record<string, unknown> }) =>
      (answer.json.errors as { field: string }[]).map((error) => error.field);

    for (const [path, tenant] of [
      [`/v1/webhooks/whe_01JE0000000000000000000000/deliveries/${delivery}/retry`, 'acme'],
      [`/v1/webhooks/not-an-id/deliveries/${delivery}/retry`, 'acme'],
      [`/v1/webhooks/${endpoint.id}/deliveries/${delivery}/retry`, 'other'],
    ] as const) {
      const answer = await harness.call({ method: 'POST', path, tenant });
      expect(answer.status, path).toBe(404);
      expect(fieldsOf(answer), path).toEqual(['id']);
    }
    const unknown = await harness.call({
      method: 'POST',
      path: `/v1/webhooks/${endpoint.id}/deliveries/dlv_01JE000000aaaaaaaaaaaaaaaaaaaa/retry`,
    });
    expect(unknown.status).toBe(404);
    expect(fieldsOf(unknown)).toEqual(['delivery']);
  });
});

describe('webhook delivery (DESIGN §11)', () => {
  it('delivers a test event signed as Standard Webhooks says, verified by the reference implementation', async () => {
    const harness = await webhookHarness();
    const hook = await receiver();
    const endpoint = await subscribe(harness, hook.url());
    const test = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    expect(test.status).toBe(202);
    await harness.pump();

    expect(hook.received).toHaveLength(1);
    const [request] = hook.received;
    if (!request) throw new Error('nothing received');
    const verified = new Webhook(endpoint.secret).verify(request.body, headersOf(request)) as Record<
      string,
      unknown
    >;
    expect(verified).toMatchObject({ type: 'webhook.test', tenant: 'acme' });
    expect(request.headers['webhook-id']).toBe(verified.id);
    expect(request.headers['content-type']).toBe('application/json');
    // Another secret does not verify.
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(request.body, headersOf(request)),
    ).toThrow();

    const deliveries = await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}/deliveries` });
    expect(deliveries.json.items).toHaveLength(1);
    expect(deliveries.json.items[0]).toMatchObject({
      status: 'delivered',
      attempts: 1,
      event_type: 'webhook.test',
    });
    expect(deliveries.json.items[0].history[0]).toMatchObject({ status_code: 200, error: null });
    expect(harness.metrics).toEqual([WEBHOOK_METRIC.delivered]);
  });

  it('marks a test side’s webhook.test event test: true, as its message events are (DESIGN §14)', async () => {
    const harness = await webhookHarness();
    const payloads: Record<string, unknown>[] = [];
    for (const tenant of [testSideOf('acme'), 'acme']) {
      const hook = await receiver();
      const endpoint = await subscribe(harness, hook.url(), tenant);
      const sent = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test`, tenant });
      expect(sent.status).toBe(202);
      await harness.pump();
      payloads.push(JSON.parse(hook.received[0]?.body ?? '{}'));
    }
    expect(payloads.map((payload) => [payload.tenant, (payload.data as { test?: unknown }).test])).toEqual([
      ['acme', true],
      ['acme', false],
    ]);
  });

  it("writes a batch's counts at DEBUG: a routine line nobody acts on stays off CloudWatch Logs at INFO (issue 32)", async () => {
    const { harness, hook, lines, deliver } = await loggingDelivery();
    const { batchItemFailures } = await deliver({ Records: await harness.receive() });
    expect(batchItemFailures).toEqual([]);
    expect(hook.received).toHaveLength(1);
    expect(lines).toEqual([{ level: 'debug', message: 'webhook batch done' }]);
  });

  it("logs a copy our side could not handle where runbook procedure 7's step 2 looks (its --filter-pattern)", async () => {
    // DynamoDB refusing every call: the procedure's cause ("DynamoDB throttling or an outage").
    const { harness, lines, deliver } = await loggingDelivery(
      (store) =>
        new Proxy(store, {
          get: (target, key) =>
            typeof Reflect.get(target, key) === 'function'
              ? () => Promise.reject(new Error('ProvisionedThroughputExceededException'))
              : Reflect.get(target, key),
        }),
    );
    const { batchItemFailures } = await deliver({ Records: await harness.receive() });
    expect(batchItemFailures).toHaveLength(1);
    // Powertools writes each line as JSON with its level in capitals, `"level":"WARN"`.
    const pattern = runbookFilterPattern('7', 2, '/aws/lambda/$(fn WebhooksDelivery)');
    const events = lines.map((line) =>
      JSON.stringify({ level: line.level.toUpperCase(), message: line.message }),
    );
    expect(
      events.filter((event) => matchesFilterPattern(pattern, event)),
      `--filter-pattern '${pattern}' over ${events.join(', ')}`,
    ).not.toEqual([]);
  });

  it('retries a 500 and a timeout with the same webhook-id, each attempt signed again', async () => {
    const harness = await webhookHarness({ timeoutMs: 2000 });
    const hook = await receiver((index) => (index === 0 ? 500 : index === 1 ? 'stall' : 204));
    const endpoint = await subscribe(harness, hook.url());
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();

    expect(hook.received).toHaveLength(3);
    const ids = new Set(hook.received.map((request) => request.headers['webhook-id']));
    expect(ids.size).toBe(1);
    for (const request of hook.received) {
      expect(() => new Webhook(endpoint.secret).verify(request.body, headersOf(request))).not.toThrow();
    }
    const [delivery] = (await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}/deliveries` }))
      .json.items;
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 3 });
    expect(
      delivery.history.map((attempt: { status_code: number | null; error: string | null }) => [
        attempt.status_code,
        attempt.error,
      ]),
    ).toEqual([
      [500, null],
      [null, 'timeout'],
      [204, null],
    ]);
    // Two retries, each delayed by backoff with jitter (random 0.5: half of 5 s, then half of 10 s).
    // The second came while the endpoint's breaker was open after the timeout (15 s, random 0.5):
    // put back unsent until then and half the 5 s spread (13 s), no attempt.
    expect(harness.delays.filter((seconds) => seconds > 0)).toEqual([3, 5, 13]);
  });

  it('waits no longer than its backoff base allows: the base a delivery is given, not a constant (decision 0273)', async () => {
    // random 0.5: half of base · 2^(n−1). With a 2 s base, 1 s and then 2 s; with WEBHOOK_BACKOFF's 5 s, 3 s and 5 s.
    const harness = await webhookHarness({ retryBaseMs: 2000 });
    const hook = await receiver((index) => (index < 2 ? 500 : 204));
    const endpoint = await subscribe(harness, hook.url());
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();

    expect(hook.received).toHaveLength(3);
    expect(harness.delays.filter((seconds) => seconds > 0)).toEqual([1, 2]);
  });

  it("waits at least what a 503's or a 429's Retry-After asks, in seconds or as an HTTP date (Standard Webhooks)", async () => {
    const harness = await webhookHarness();
    const inTenMinutes = () => new Date(harness.clock.now().getTime() + 600_000).toUTCString();
    const hook = await receiver((index) =>
      index === 0
        ? { status: 503, headers: { 'retry-after': '120' } }
        : index === 1
          ? { status: 429, headers: { 'retry-after': inTenMinutes() } }
          : 200,
    );
    const endpoint = await subscribe(harness, hook.url());
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();

    expect(hook.received).toHaveLength(3);
    const [delivery] = (await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}/deliveries` }))
      .json.items;
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 3 });
    // Backoff alone (random 0.5) would have waited 3 s and then 5 s; the receiver asked for 2 and 10 minutes
    // (an HTTP date has whole seconds, and the answer came a moment after it was written).
    const [first, second] = harness.delays.filter((seconds) => seconds > 0);
    expect(first).toBe(120);
    expect(second).toBeGreaterThanOrEqual(599);
    expect(second).toBeLessThanOrEqual(600);
  });

  it('ends failed after the retry window, is listed as failed, and delivers again after an API retry', async () => {
    let healthy = false;
    const harness = await webhookHarness({ retryHours: 1 });
    const hook = await receiver(() => (healthy ? 200 : 503));
    const endpoint = await subscribe(harness, hook.url());
    const started = harness.clock.now().getTime();
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();

    const failedList = await harness.call({
      method: 'GET',
      path: `/v1/webhooks/${endpoint.id}/deliveries`,
      query: { status: 'failed' },
    });
    expect(failedList.json.items).toHaveLength(1);
    const failed = failedList.json.items[0];
    expect(failed.attempts).toBe(hook.received.length);
    expect(hook.received.length).toBeGreaterThan(3);
    // Every attempt fell inside the hour; the next would have fallen past it.
    const attemptTimes = failed.history.map((attempt: { at: string }) => Date.parse(attempt.at));
    expect(Math.max(...attemptTimes) - started).toBeLessThanOrEqual(3_600_000);
    expect(harness.metrics.filter((metric) => metric === WEBHOOK_METRIC.failed)).toHaveLength(1);
    expect(
      (await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}` })).json.deliveries,
    ).toEqual({
      pending: 0,
      delivered: 0,
      failed: 1,
      recent: 1,
    });

    healthy = true;
    const retried = await harness.call({
      method: 'POST',
      path: `/v1/webhooks/${endpoint.id}/deliveries/${failed.id}/retry`,
    });
    expect(retried.status).toBe(202);
    expect(retried.json).toMatchObject({ status: 'pending' });
    await harness.pump();
    const after = (await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}/deliveries` })).json
      .items[0];
    expect(after).toMatchObject({ id: failed.id, status: 'delivered', attempts: failed.attempts + 1 });
    expect(new Set(hook.received.map((request) => request.headers['webhook-id'])).size).toBe(1);

    // Only a failed delivery can be retried; another tenant cannot see it at all.
    const again = await harness.call({
      method: 'POST',
      path: `/v1/webhooks/${endpoint.id}/deliveries/${failed.id}/retry`,
    });
    expect(again.status).toBe(409);
    const foreign = await harness.call({
      method: 'POST',
      path: `/v1/webhooks/${endpoint.id}/deliveries/${failed.id}/retry`,
      tenant: 'other',
    });
    expect(foreign.status).toBe(404);
  });

  it('stops delivering when the endpoint is removed mid-retry', async () => {
    const harness = await webhookHarness();
    const hook = await receiver(() => 500);
    const endpoint = await subscribe(harness, hook.url());
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump({ until: () => hook.received.length >= 2 });
    expect((await harness.call({ method: 'DELETE', path: `/v1/webhooks/${endpoint.id}` })).status).toBe(200);
    const seen = hook.received.length;
    await harness.pump();
    expect(hook.received.length).toBe(seen);
    expect(await harness.pump()).toBe(0);
  });

  it("never lets one endpoint's failures delay another's delivery", async () => {
    const harness = await webhookHarness({ timeoutMs: 2000 });
    const stalled = await receiver(() => 'stall');
    const healthy = await receiver(() => 200);
    const slow = await subscribe(harness, stalled.url());
    const fine = await subscribe(harness, healthy.url());
    await harness.call({ method: 'POST', path: `/v1/webhooks/${slow.id}/test` });
    await harness.call({ method: 'POST', path: `/v1/webhooks/${fine.id}/test` });
    await harness.pump({ rounds: 1 });
    // One batch: the healthy endpoint got its event while the stalled one timed out beside it.
    expect(healthy.received).toHaveLength(1);
    expect(stalled.received.length).toBeGreaterThanOrEqual(1);
  });
});
