/**
 * DESIGN §7: "the functions are warm when it says so (the first message is as quick as the
 * hundredth)", the event producer and the webhook delivery function too (they run in the stack's
 * process, DESIGN §11). No timing is asserted (that is bench/'s): the stack counts the real batches
 * that were a function's first invocation, the one that makes its clients' first requests. A stack
 * that warmed them before it said ready has none, and its warm-up delivered nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';
import { startReceiver } from '../webhooks/webhookHarness.js';

const API_KEY = 'pd_local-stack-webhooks-warm-01';

describe('the local stack says ready with the event producer and the delivery function warm', () => {
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

  it("serves the first message's events without a cold invocation", async () => {
    const headers = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };
    const created = await fetch(`${stack.apiUrl}/v1/webhooks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: hook.url() }),
    });
    expect(created.status).toBe(201);
    const enqueued = await fetch(`${stack.apiUrl}/v1/messages`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': 'webhooks-warm-1' },
      body: JSON.stringify({ to: ['ada@example.com'], subject: 'Hi', text: 'Hello' }),
    });
    expect(enqueued.status).toBe(202);

    const types = () => hook.received.map((request) => JSON.parse(request.body).type as string);
    await eventually(
      () => `both events posted (seen: ${types().join(', ') || 'none'})`,
      () => types().includes('message.scheduled') && types().includes('message.sent'),
      { withinMs: 60_000, everyMs: 100 },
    );
    await stack.idle();
    expect(stack.coldInvocations()).toMatchObject({ events: 0, webhooks: 0 });
    // The warm-up wrote and queued nothing a receiver could see: only the message's two events.
    expect(types().sort()).toEqual(['message.scheduled', 'message.sent']);
  }, 120_000);
});
