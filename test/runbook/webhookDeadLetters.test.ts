/**
 * docs/runbook.md procedure 7 (`WebhookDeadLetterQueueNotEmpty`), walked as the on-call operator
 * walks it, on the local stack with a real endpoint (an HTTP server of this test's) and the AWS CLI's
 * own `aws sqs` commands against the stack's SQS emulator.
 *
 * How copies get there, for real: not through a failing endpoint (its deliveries are retried by
 * their own schedule and end `failed`: procedure 7's Outcome), but through a failure on our side,
 * here DynamoDB Local stopped (SIGSTOP), so that the delivery function cannot read a delivery and
 * fails its copy; the queue's redrive policy then moves it to the webhook DLQ. Compressed in one
 * place only: the webhook queue's `maxReceiveCount` is set to 1 (SetQueueAttributes) instead of the
 * deployed 20 receives over 41 to 89 minutes (lib/webhookLayout.ts). The endpoint fails meanwhile
 * too, so every delivery has attempts behind it; it is fixed before the redrive.
 *
 * Step 1's CloudFormation query is AWS's (locally the DLQ is found by its name), step 2 is `aws logs`
 * (not local); step 3's `start-message-move-task` and Verify's `get-queue-attributes` run as written.
 * Verify: the DLQ empty, no delivery pending long overdue, and each event at the endpoint, signed by
 * Standard Webhooks with the endpoint's secret: none lost.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';
import { type Received, startReceiver } from '../webhooks/webhookHarness.js';
import { awsCli, enqueue, stackApi, webhookCopiesInTheirDlq, webhookDeliveries } from './operatorShell.js';

describe('runbook procedure 7: webhook copies in their DLQ', () => {
  let broken = true;
  let stack: LocalStack;
  let hook: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    hook = await startReceiver(() => (broken ? 503 : 200));
    stack = await startLocalStack({
      config: loadConfig({ POSTDATE_API_KEY: 'pd_runbook-webhook-dlq-01' }, 'local'),
      ports: ANY_FREE_PORTS,
      quiet: true,
      // Retries after 0–0.2 s, 0–0.4 s, … instead of 0–5 s, 0–10 s (decision 0273).
      webhookRetryBaseMs: 200,
    });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await hook?.close();
  });

  const aws = (...args: string[]) => awsCli(stack, ...args);

  const api = (path: string, init: { method?: string; body?: unknown } = {}) => stackApi(stack)(path, init);

  const deliveries = (endpoint: string, status?: string) => webhookDeliveries(stack, endpoint, status);

  it('walks steps 1, 3 and Verify: every event arrives once the endpoint works and the DLQ is redriven, signed', async () => {
    const created = await api('/v1/webhooks', { method: 'POST', body: { url: hook.url('/hook') } });
    expect(created.status).toBe(201);
    const endpoint = String(created.json.id);
    const secret = String(created.json.secret);
    await enqueue(stack, 'runbook-webhook-dlq-1');
    // The endpoint fails each delivery (message.scheduled and message.sent): pending, retried.
    await eventually(
      'both deliveries attempted and failing',
      async () => {
        const items = await deliveries(endpoint);
        return items.length === 2 && items.every((d) => d.status === 'pending' && d.attempts >= 1)
          ? items
          : undefined;
      },
      { withinMs: 60_000 },
    );

    // Our side fails: DynamoDB stopped, each copy kept once is moved to the DLQ by the redrive policy.
    const { WDLQ: deadLetterUrl, depth } = await webhookCopiesInTheirDlq(stack, 2);
    const postsBefore = hook.received.length;
    // Pending, unattempted since: nothing moves while the copies are in the DLQ.
    const waiting = await deliveries(endpoint, 'pending');
    expect(waiting).toHaveLength(2);

    // Step 1 (its CloudFormation query is AWS's; here the DLQ by its name, above): the ARN as written.
    const WDLQ = deadLetterUrl;
    const WDLQ_ARN = await aws(
      'sqs',
      'get-queue-attributes',
      '--queue-url',
      WDLQ,
      '--attribute-names',
      'QueueArn',
      '--query',
      'Attributes.QueueArn',
      '--output',
      'text',
    );
    expect(WDLQ_ARN).toMatch(/^arn:aws:sqs:.*:postdate-webhooks-dlq$/);
    expect(hook.received.length).toBe(postsBefore);

    // The cause fixed (DynamoDB back, the endpoint answers). Step 3: redrive to the source queue.
    broken = false;
    const task = await aws('sqs', 'start-message-move-task', '--source-arn', WDLQ_ARN);
    expect(task).toMatch(/TaskHandle/);

    // Verify.
    await eventually('the webhook DLQ empty', async () => (await depth()) === 0 || undefined, {
      withinMs: 30_000,
    });
    const delivered = await eventually(
      'every delivery delivered',
      async () => {
        const items = await deliveries(endpoint);
        return items.every((d) => d.status === 'delivered') ? items : undefined;
      },
      { withinMs: 60_000 },
    );
    expect(await deliveries(endpoint, 'pending')).toEqual([]);
    // Each event at the endpoint with a 2xx, signed with the endpoint's secret (Standard Webhooks).
    const answered = hook.received.slice(postsBefore);
    const verified = (request: Received) => {
      try {
        new Webhook(secret).verify(request.raw, {
          'webhook-id': String(request.headers['webhook-id']),
          'webhook-timestamp': String(request.headers['webhook-timestamp']),
          'webhook-signature': String(request.headers['webhook-signature']),
        });
        return true;
      } catch {
        return false;
      }
    };
    const unsigned = answered.filter((request) => !verified(request));
    expect(
      unsigned.map((request) => String(request.headers['webhook-id'])),
      'not signed with the secret',
    ).toEqual([]);
    expect(new Set(answered.map((request) => String(request.headers['webhook-id'])))).toEqual(
      new Set(delivered.map((d) => d.event_id)),
    );
  }, 240_000);
});
