/**
 * Test keys (DESIGN §14): `postdate keys create --test` makes a `pd_test_…` key, the authorizer
 * hands out the tenant's test side for it, and test and live never meet — a test key cannot read,
 * list, cancel, retry or change a live message, template, webhook or suppression, and a live key
 * none of the test side's (404 as for another tenant). The tenants come from the real authorizer
 * over the real key records, not from a hand-written context.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { enqueueMessage } from '../../lambdas/api/routes/enqueue.js';
import { createAuthorizerHandler } from '../../lambdas/authorizer/createAuthorizerHandler.js';
import { validateEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { ApiKeyError, createApiKey, listApiKeys, lookupApiKey } from '../../lambdas/keys/apiKeys.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { documentClient } from '../support/awsLocal.js';
import { webhookHarness } from '../webhooks/webhookHarness.js';
import { authorizerEvent, validBody } from './events.js';

const documents = documentClient();
const now = new Date('2026-12-02T10:00:00.000Z');
// The api runs on the real clock: a send time a day ahead of it (whole seconds, as the view shows
// it) stays scheduled however late the suite runs; the reschedule asks for a day later still.
const SEND_AT = new Date(Math.ceil(Date.now() / 1000) * 1000 + 86_400_000).toISOString();
const LATER = new Date(Date.parse(SEND_AT) + 86_400_000).toISOString();
const silent = { info: () => {}, warn: () => {}, error: () => {} };

type Harness = Awaited<ReturnType<typeof webhookHarness>>;

describe('test keys', () => {
  let harness: Harness;
  let liveTenant: string;
  let testTenant: string;
  let testSecret: string;

  /** The authorizer's context tenant for a secret, as API Gateway would pass it on. */
  async function authorizedTenant(secret: string): Promise<string> {
    const authorize = createAuthorizerHandler({
      lookup: (key) => lookupApiKey(documents, harness.tableName, key),
      now: () => now,
      logger: silent,
    });
    const result = await authorize(authorizerEvent({ authorization: `Bearer ${secret}` }));
    expect(result.isAuthorized).toBe(true);
    return result.context.tenant;
  }

  beforeAll(async () => {
    harness = await webhookHarness();
    const live = await createApiKey(documents, harness.tableName, { tenant: 'acme', now });
    const test = await createApiKey(documents, harness.tableName, { tenant: 'acme', test: true, now });
    testSecret = test.secret;
    liveTenant = await authorizedTenant(live.secret);
    testTenant = await authorizedTenant(test.secret);
  });

  it('makes a pd_test_ key that acts for the tenant’s test side, never the tenant', async () => {
    expect(testSecret).toMatch(/^pd_test_[A-Za-z0-9_-]{43}$/);
    expect(liveTenant).toBe('acme');
    expect(testTenant).not.toBe(liveTenant);
    const keys = await listApiKeys(documents, harness.tableName);
    expect(keys.map((key) => [key.tenant, key.test]).sort()).toEqual([
      ['acme', false],
      ['acme', true],
    ]);
    const { Items = [] } = await documents.send(new ScanCommand({ TableName: harness.tableName }));
    expect(JSON.stringify(Items)).not.toContain(testSecret);
  });

  it('refuses a given secret on the wrong side of the pd_test_ prefix', async () => {
    await expect(
      createApiKey(documents, harness.tableName, { tenant: 'acme', secret: 'pd_test_livekey1', now }),
    ).rejects.toBeInstanceOf(ApiKeyError);
    await expect(
      createApiKey(documents, harness.tableName, { tenant: 'acme', secret: 'pd_notatest1', test: true, now }),
    ).rejects.toMatchObject({ reason: 'invalid-secret' });
  });

  it('sends to a simulator address only with a test key: a live one is refused, stores nothing (decision 0192)', async () => {
    // A tenant of its own: the other tests list each side's messages.
    const liveTenant = await authorizedTenant(
      (await createApiKey(documents, harness.tableName, { tenant: 'umbrella', now })).secret,
    );
    const testTenant = await authorizedTenant(
      (await createApiKey(documents, harness.tableName, { tenant: 'umbrella', test: true, now })).secret,
    );
    const simulated = ['Ada <ada@example.com>', 'Desk <Bounce@Simulator.Postdate.TEST>'];
    const enqueue = (
      tenant: string,
      key: string,
      path = '/v1/messages',
      body: unknown = validBody({ cc: simulated }),
    ) =>
      harness.call({
        method: 'POST',
        path,
        routeKey: `POST ${path}`,
        tenant,
        headers: { 'idempotency-key': key },
        body,
      });

    const live = await enqueue(liveTenant, 'simulated-live');
    expect(live.status).toBe(400);
    expect(live.json.errors).toEqual([{ field: '/cc/1', message: expect.stringContaining('test key') }]);
    const batch = await enqueue(liveTenant, 'unused', '/v1/messages/batch', {
      messages: [{ idempotency_key: 'simulated-batch', ...validBody({ bcc: simulated }) }],
    });
    expect(batch.json.results).toMatchObject([
      { index: 0, status: 400, problem: { errors: [{ field: '/messages/0/bcc/1' }] } },
    ]);
    expect(
      JSON.stringify(
        (
          await harness.call({
            method: 'GET',
            path: '/v1/messages',
            routeKey: 'GET /v1/messages',
            tenant: liveTenant,
          })
        ).json,
      ),
    ).not.toMatch(/simulator/i);

    // A live message stored before the rule (written here past the api) still replays: it judges new ones.
    const body = validBody({ cc: simulated, send_at: SEND_AT });
    const request = validateEnqueueRequest(body, {
      allowedFrom: ['*'],
      defaultFrom: 'p@example.com',
      maxHorizonDays: 400,
      now: new Date(),
    });
    if (!request.ok) throw new Error('the body is valid but for the rule');
    const store = { store: new DynamoApiStore(documents, harness.tableName), sleep: async () => {} };
    const stored = await enqueueMessage(store, {
      tenant: liveTenant,
      idempotencyKey: 'stored-before',
      request: request.value,
      now: new Date(),
      random: Math.random,
      retentionDays: 30,
    });
    if (stored.kind !== 'created') throw new Error(`stored: ${stored.kind}`);
    const replayed = await enqueue(liveTenant, 'stored-before', '/v1/messages', body);
    expect([replayed.status, replayed.json.id]).toEqual([200, stored.state.id]);

    const test = await enqueue(testTenant, 'simulated-test');
    expect(test.status).toBe(202);
    expect(test.json.test).toBe(true);
  });

  it('keeps messages, templates, webhooks and suppressions apart, both ways', async () => {
    const sides = { live: liveTenant, test: testTenant };
    const seen: Record<string, { message: string; webhook: string }> = {};
    for (const [side, tenant] of Object.entries(sides)) {
      // The same Idempotency-Key on both sides: two messages, not a replay.
      const enqueued = await harness.call({
        method: 'POST',
        path: '/v1/messages',
        routeKey: 'POST /v1/messages',
        tenant,
        headers: { 'idempotency-key': 'same-key' },
        body: validBody({ send_at: SEND_AT }),
      });
      expect(enqueued.status).toBe(202);
      expect(enqueued.json.test).toBe(side === 'test');
      const template = await harness.call({
        method: 'PUT',
        path: `/v1/templates/receipt-${side}`,
        routeKey: 'PUT /v1/templates/{name}',
        pathParameters: { name: `receipt-${side}` },
        tenant,
        body: { subject: 'Receipt {{n}}', text: 'n = {{n}}' },
      });
      expect(template.status).toBe(201);
      const suppressed = await harness.call({
        method: 'PUT',
        path: `/v1/suppressions/${side}%40example.com`,
        routeKey: 'PUT /v1/suppressions/{address}',
        pathParameters: { address: `${side}@example.com` },
        tenant,
        body: {},
      });
      expect(suppressed.status).toBeLessThan(300);
      const webhook = await harness.call({
        method: 'POST',
        path: '/v1/webhooks',
        tenant,
        body: { url: 'http://127.0.0.1:9/hook' },
      });
      expect(webhook.status).toBe(201);
      seen[side] = { message: String(enqueued.json.id), webhook: String(webhook.json.id) };
    }
    expect(seen.live?.message).not.toBe(seen.test?.message);

    for (const [side, tenant] of Object.entries(sides)) {
      const other = side === 'live' ? 'test' : 'live';
      const theirs = seen[other] ?? { message: '', webhook: '' };
      const call = (
        method: string,
        path: string,
        routeKey: string,
        params: Record<string, string>,
        body?: unknown,
      ) => harness.call({ method, path, routeKey, pathParameters: params, tenant, body });
      const id = { id: theirs.message };
      expect((await call('GET', `/v1/messages/${theirs.message}`, 'GET /v1/messages/{id}', id)).status).toBe(
        404,
      );
      expect(
        (
          await call('PATCH', `/v1/messages/${theirs.message}`, 'PATCH /v1/messages/{id}', id, {
            send_at: LATER,
          })
        ).status,
      ).toBe(404);
      expect(
        (await call('DELETE', `/v1/messages/${theirs.message}`, 'DELETE /v1/messages/{id}', id)).status,
      ).toBe(404);
      expect(
        (await call('POST', `/v1/messages/${theirs.message}/retry`, 'POST /v1/messages/{id}/retry', id))
          .status,
      ).toBe(404);
      const list = await call('GET', '/v1/messages', 'GET /v1/messages', {});
      expect(list.json.items.map((item: { id: string }) => item.id)).toEqual([seen[side]?.message]);
      for (const item of list.json.items) expect(item.test).toBe(side === 'test');

      const template = { name: `receipt-${other}` };
      expect(
        (await call('GET', `/v1/templates/${template.name}`, 'GET /v1/templates/{name}', template)).status,
      ).toBe(404);
      expect(
        (await call('DELETE', `/v1/templates/${template.name}`, 'DELETE /v1/templates/{name}', template))
          .status,
      ).toBe(404);
      const templates = await call('GET', '/v1/templates', 'GET /v1/templates', {});
      expect(JSON.stringify(templates.json)).not.toContain(template.name);

      const webhook = { id: theirs.webhook };
      expect(
        (await call('GET', `/v1/webhooks/${theirs.webhook}`, 'GET /v1/webhooks/{id}', webhook)).status,
      ).toBe(404);
      expect(
        (await call('POST', `/v1/webhooks/${theirs.webhook}/test`, 'POST /v1/webhooks/{id}/test', webhook))
          .status,
      ).toBe(404);
      for (const [method, tail, routeTail] of [
        ['GET', '/deliveries', '/deliveries'],
        ['POST', '/rotate-secret', '/rotate-secret'],
      ] as const) {
        const path = `/v1/webhooks/${theirs.webhook}${tail}`;
        expect((await call(method, path, `${method} /v1/webhooks/{id}${routeTail}`, webhook)).status).toBe(
          404,
        );
      }
      expect(
        (await call('DELETE', `/v1/webhooks/${theirs.webhook}`, 'DELETE /v1/webhooks/{id}', webhook)).status,
      ).toBe(404);
      const webhooks = await call('GET', '/v1/webhooks', 'GET /v1/webhooks', {});
      expect(JSON.stringify(webhooks.json)).not.toContain(theirs.webhook);

      const suppressions = await call('GET', '/v1/suppressions', 'GET /v1/suppressions', {});
      expect(JSON.stringify(suppressions.json)).toContain(`${side}@example.com`);
      expect(JSON.stringify(suppressions.json)).not.toContain(`${other}@example.com`);
      const address = { address: `${other}@example.com` };
      expect(
        (
          await call(
            'DELETE',
            `/v1/suppressions/${other}%40example.com`,
            'DELETE /v1/suppressions/{address}',
            address,
          )
        ).status,
      ).toBe(404);
    }

    // Nothing the other side tried changed anything: every message still scheduled, every endpoint there.
    for (const [side, tenant] of Object.entries(sides)) {
      const mine = seen[side] ?? { message: '', webhook: '' };
      const message = await harness.call({
        method: 'GET',
        path: `/v1/messages/${mine.message}`,
        routeKey: 'GET /v1/messages/{id}',
        pathParameters: { id: mine.message },
        tenant,
      });
      expect(message.json).toMatchObject({
        status: 'scheduled',
        send_at: SEND_AT,
        test: side === 'test',
      });
      const webhook = await harness.call({
        method: 'GET',
        path: `/v1/webhooks/${mine.webhook}`,
        routeKey: 'GET /v1/webhooks/{id}',
        pathParameters: { id: mine.webhook },
        tenant,
      });
      expect(webhook.status).toBe(200);
    }
  });
});
