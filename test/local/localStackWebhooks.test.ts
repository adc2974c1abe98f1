/**
 * The local stack delivers webhooks for real (DESIGN §7, §11): a message enqueued over HTTP reaches a
 * receiver on 127.0.0.1 as `message.scheduled` and `message.sent`, signed with the endpoint's secret.
 * And it says ready with the event producer and the delivery function warm (DESIGN §7: "the functions
 * are warm when it says so"; decision 0119): no timing is asserted (that is bench/'s); the stack counts
 * the real batches that were a function's first invocation, and its warm-up delivered nothing.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';
import { startReceiver } from '../webhooks/webhookHarness.js';

const API_KEY = 'pd_local-stack-webhooks-key-01';

describe('the local stack delivers webhooks', () => {
  let stack: LocalStack;
  let hook: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    hook = await startReceiver();
    stack = await startLocalStack({
      config: loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local'),
      ports: ANY_FREE_PORTS,
      quiet: true,
    });
  }, 90_000);
  afterAll(async () => {
    await stack?.stop();
    await hook?.close();
  });

  it('posts each status change of an enqueued message to the subscribed endpoint', async () => {
    const headers = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };
    const created = await fetch(`${stack.apiUrl}/v1/webhooks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: hook.url() }),
    });
    expect(created.status).toBe(201);
    const endpoint = (await created.json()) as { id: string; secret: string };
    const enqueued = await fetch(`${stack.apiUrl}/v1/messages`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': 'webhooks-e2e-1' },
      body: JSON.stringify({ to: ['ada@example.com'], subject: 'Hi', text: 'Hello' }),
    });
    expect(enqueued.status).toBe(202);
    const { id } = (await enqueued.json()) as { id: string };

    const types = () => hook.received.map((request) => JSON.parse(request.body).type as string);
    const statuses = async () => {
      const deliveries = await fetch(`${stack.apiUrl}/v1/webhooks/${endpoint.id}/deliveries`, { headers });
      const page = (await deliveries.json()) as { items: { status: string }[] };
      return page.items.map((item) => item.status);
    };
    // Both events, and both recorded as delivered: the receiver records a request before it replies,
    // the delivery is written `delivered` only after the reply, and the two events of one batch are
    // posted together, so the first `message.sent` seen says nothing about the rest.
    // Past the deadline, the assertions below say what is missing.
    await eventually(
      'both events posted and delivered',
      async () => {
        const seen = types();
        return (
          seen.includes('message.scheduled') &&
          seen.includes('message.sent') &&
          (await statuses()).filter((status) => status === 'delivered').length >= 2
        );
      },
      { withinMs: 60_000, everyMs: 100 },
    ).catch(() => undefined);
    expect(types().sort()).toEqual(['message.scheduled', 'message.sent']);
    for (const request of hook.received) {
      const event = new Webhook(endpoint.secret).verify(request.body, {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      }) as { tenant: string; data: { id: string } };
      expect(event.data.id).toBe(id);
    }
    expect(await statuses()).toEqual(['delivered', 'delivered']);
    await stack.idle();
    expect(stack.coldInvocations()).toMatchObject({ events: 0, webhooks: 0 });
  }, 90_000);
});
