/**
 * The address policy of DESIGN §11 with the AWS policy on: names that resolve to loopback, private,
 * link-local or metadata addresses are refused before a connection is made (the connection's own
 * lookup is the checked one), literal addresses likewise, and redirects are never followed.
 */
import type { LookupAddress } from 'node:dns';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeWebhookHttp } from '../../lambdas/adapters/nodeWebhookHttp.js';
import { checkNewWebhookUrl, refusedAddress } from '../../lambdas/adapters/webhookAddressPolicy.js';
import { WEBHOOK_METRIC } from '../../lambdas/core/metricNames.js';
import { documentClient } from '../support/awsLocal.js';
import { startReceiver, subscribe, webhookHarness } from './webhookHarness.js';

const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
});

/** A resolver with its own answers: what a hostile DNS zone would say. */
const ZONE: Record<string, readonly LookupAddress[]> = {
  'loopback.test': [{ address: '127.0.0.1', family: 4 }],
  'metadata.test': [{ address: '169.254.169.254', family: 4 }],
  'private.test': [{ address: '10.0.0.7', family: 4 }],
  'v6-loopback.test': [{ address: '::1', family: 6 }],
  'mapped.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
  'mixed.test': [
    { address: '93.184.216.34', family: 4 },
    { address: '10.0.0.1', family: 4 },
  ],
};
const resolve = async (hostname: string) => ZONE[hostname] ?? [];

describe('webhook address policy (AWS: https to public addresses only)', () => {
  it('classifies addresses', () => {
    for (const refused of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:10.0.0.1',
      '[::1]',
    ]) {
      expect(refusedAddress(refused), refused).not.toBeNull();
    }
    for (const allowed of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) {
      expect(refusedAddress(allowed), allowed).toBeNull();
    }
  });

  it.each(Object.keys(ZONE))('refuses %s before connecting', async (name) => {
    const hook = await startReceiver();
    receivers.push(hook);
    const http = createNodeWebhookHttp({ policy: 'public-https', resolve });
    const result = await http.post({
      url: `https://${name}:${hook.port}/hook`,
      headers: {},
      body: '{}',
      timeoutMs: 2000,
    });
    expect(result.kind).toBe('refused');
    expect(hook.connections()).toBe(0);
  });

  it('refuses literal private addresses and plain http', async () => {
    const hook = await startReceiver();
    receivers.push(hook);
    const http = createNodeWebhookHttp({ policy: 'public-https', resolve });
    for (const url of [
      `https://127.0.0.1:${hook.port}/`,
      `https://[::1]:${hook.port}/`,
      `https://169.254.169.254/`,
      hook.url(),
    ]) {
      expect((await http.post({ url, headers: {}, body: '{}', timeoutMs: 2000 })).kind, url).toBe('refused');
    }
    expect(hook.connections()).toBe(0);
  });

  it('never follows a redirect: a 3xx is a failed attempt and its target sees nothing', async () => {
    const target = await startReceiver();
    const hook = await startReceiver(() => 307, target.url('/internal'));
    receivers.push(target, hook);
    // The local policy, so that the first hop (127.0.0.1) is reachable at all.
    const http = createNodeWebhookHttp({ policy: 'local' });
    const result = await http.post({ url: hook.url(), headers: {}, body: '{}', timeoutMs: 2000 });
    expect(result).toEqual({ kind: 'response', statusCode: 307 });
    expect(hook.received).toHaveLength(1);
    expect(target.connections()).toBe(0);
  });

  it('records a refused attempt on the delivery, counts it, and never reaches the receiver', async () => {
    const hook = await startReceiver();
    receivers.push(hook);
    // The name was public when the endpoint was created; DNS changed since (decision 0217).
    const harness = await webhookHarness({
      policy: 'public-https',
      resolve: async () => [{ address: '93.184.216.34', family: 4 }],
      http: createNodeWebhookHttp({ policy: 'public-https', resolve }),
      retryHours: 1,
    });
    const endpoint = await subscribe(harness, `https://metadata.test:${hook.port}/hook`);
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump({ rounds: 3 });
    const [delivery] = (await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}/deliveries` }))
      .json.items;
    expect(delivery.history[0].error).toMatch(/^refused: metadata\.test: address 169\.254\.169\.254/);
    expect(harness.metrics).toContain(WEBHOOK_METRIC.refused);
    expect(hook.connections()).toBe(0);
  });
});

describe('a URL whose name resolves to a refused address is refused when created (DESIGN §11, decision 0217)', () => {
  const create = (harness: Awaited<ReturnType<typeof webhookHarness>>, url: string) =>
    harness.call({ method: 'POST', path: '/v1/webhooks', body: { url } });
  const itemsOf = async (tableName: string) =>
    (await documentClient().send(new ScanCommand({ TableName: tableName }))).Items ?? [];

  it('answers 400 naming /url and the address, and writes nothing, when any address is refused', async () => {
    const harness = await webhookHarness({ policy: 'public-https', resolve });
    for (const [name, addresses] of Object.entries(ZONE)) {
      const answer = await create(harness, `https://${name}/hook`);
      expect(answer.status, name).toBe(400);
      expect(answer.json.errors, name).toEqual([{ field: '/url', message: expect.stringContaining(name) }]);
      const refused = addresses.find((entry) => refusedAddress(entry.address) !== null)?.address ?? '';
      expect(answer.json.errors[0].message, name).toContain(refused);
    }
    expect(await itemsOf(harness.tableName)).toEqual([]);
  });

  it('takes a name that resolves to public addresses only, or that does not resolve yet', async () => {
    const harness = await webhookHarness({
      policy: 'public-https',
      resolve: async (hostname) => {
        if (hostname === 'public.test') return [{ address: '93.184.216.34', family: 4 }];
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      },
    });
    expect((await create(harness, 'https://public.test/hook')).status).toBe(201);
    expect((await create(harness, 'https://not-live-yet.test/hook')).status).toBe(201);
  });

  it('takes a name whose resolver does not answer within the bound', async () => {
    const silent = () => new Promise<readonly LookupAddress[]>(() => {});
    const checked = await checkNewWebhookUrl('https://slow.test/hook', 'public-https', silent, 20);
    expect(checked.ok).toBe(true);
  });

  it('resolves nothing locally: http to a name that resolves to loopback is allowed', async () => {
    const harness = await webhookHarness({ policy: 'local', resolve });
    expect((await create(harness, 'http://loopback.test:8080/hook')).status).toBe(201);
  });
});
