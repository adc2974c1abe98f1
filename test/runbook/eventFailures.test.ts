/**
 * docs/runbook.md procedure 4b (`EventsIteratorAge`, `EventsErrors`, `EventFailuresNotEmpty`),
 * walked as the on-call operator walks it, on the local stack with a real endpoint (an HTTP server
 * of this test's) and the real entry point (cli/postdate.mjs).
 *
 * How the producer gives up, for real: the webhook queue is down (deleted), so the event producer
 * writes each delivery but cannot queue its copy ("could not queue some webhook copies"), reports
 * the record failed, and its stream event source retries it 10 times (lib/eventSourceLayout.ts),
 * then puts the batch's shard and sequence range on the event failure queue, as the deployed
 * mapping's on-failure destination does. Nothing is compressed: locally the retries take seconds.
 *
 * Step 1's `aws logs tail` is AWS's; here the same warning is read from the stack's log. Step 2 as
 * written, with the shell the local stack has: no bus (locally there is none), so the CLI runs in
 * local mode. Step 3 needs a batch older than the stream's 24 hours: not walked. Verify: the redrive
 * reports `failure messages: 0`, the endpoint's deliveries list the replayed events, and each event
 * reached the endpoint once, signed with its secret: none lost.
 */
import { DeleteQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { LOCAL_RESOURCES } from '../../local/localResources.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import type { LocalStreamDiscard } from '../../local/localStackOptions.js';
import { createWebhookQueue } from '../../local/webhookEventSources.js';
import { eventually } from '../support/eventually.js';
import { startReceiver } from '../webhooks/webhookHarness.js';
import { enqueue, localClientOptions, operatorCli, shownMessage, stackApi } from './operatorShell.js';

describe('runbook procedure 4b: events the producer gave up on', () => {
  let stack: LocalStack;
  let hook: Awaited<ReturnType<typeof startReceiver>>;
  let sqs: SQSClient;
  const logged: string[] = [];
  const discards: LocalStreamDiscard[] = [];

  beforeAll(async () => {
    hook = await startReceiver(() => 200);
    stack = await startLocalStack({
      config: loadConfig({ POSTDATE_API_KEY: 'pd_runbook-event-failures-01' }, 'local'),
      ports: ANY_FREE_PORTS,
      // Not quiet: the stack's log (the producer's warnings among it) goes to `logged`, as a log group.
      webhookRetryBaseMs: 200,
      log: (line) => logged.push(line),
      onStreamDiscard: (discard) => discards.push(discard),
    });
    sqs = new SQSClient(localClientOptions(stack.sqsEndpoint));
  }, 90_000);

  afterAll(async () => {
    sqs?.destroy();
    await stack?.stop();
    await hook?.close();
  });

  const api = (path: string, init: { method?: string; body?: unknown } = {}) => stackApi(stack)(path, init);

  it('walks step 2 and Verify: every status change reaches the endpoint once it is replayed', async () => {
    // The shell of a stack without a bus: local mode, the local stack's endpoints and bucket.
    const postdate = operatorCli(stack, {
      bin: true,
      env: { AWS_ENDPOINT_URL_S3: stack.s3Endpoint },
    });
    const created = await api('/v1/webhooks', { method: 'POST', body: { url: hook.url('/hook') } });
    expect(created.status).toBe(201);
    const endpoint = String(created.json.id);
    const secret = String(created.json.secret);

    // The webhook queue down: the producer gives up on each record with an event for the endpoint.
    const webhookQueueUrl = stack.functionEnvironment.POSTDATE_WEBHOOK_QUEUE_URL as string;
    await sqs.send(new DeleteQueueCommand({ QueueUrl: webhookQueueUrl }));
    const id = await enqueue(stack, 'runbook-event-failures-1');
    await eventually('the message sent', async () => (await shownMessage(postdate, id)).status === 'sent', {
      withinMs: 30_000,
    });
    await eventually(
      'the producer to give up on both events (message.scheduled, message.sent)',
      () => discards.filter((d) => d.source === 'events').flatMap((d) => d.keys).length >= 2 || undefined,
      { withinMs: 30_000 },
    );
    expect(discards.map((d) => `${d.source} → ${d.destination}`)).toEqual(
      discards.map(() => 'events → onFailure'),
    );
    const failureQueueUrl = stack.eventFailureQueueUrl;
    const depth = async () =>
      Number(
        (
          await sqs.send(
            new GetQueueAttributesCommand({
              QueueUrl: failureQueueUrl,
              AttributeNames: ['ApproximateNumberOfMessages'],
            }),
          )
        ).Attributes?.ApproximateNumberOfMessages,
      );
    await eventually(
      'the producer gave up: its batches on the event failure queue',
      async () => (await depth()) >= 1 || undefined,
      {
        withinMs: 30_000,
      },
    );
    expect(hook.received, 'nothing reached the endpoint').toEqual([]);
    // Step 1 (`aws logs tail … --filter-pattern WARN`), from the stack's log.
    expect(logged.join('\n')).toContain('could not queue some webhook copies');

    // The cause removed: the webhook queue back (as a deploy recreates it).
    await createWebhookQueue(sqs, LOCAL_RESOURCES.queuePrefix);

    // Step 2: replay.
    const replay = await postdate('--local', 'event-failures', 'redrive');
    expect(replay.code, `${replay.stdout}${replay.stderr}`).toBe(0);
    expect(replay.stdout).toMatch(/replayed from the stream:\s+[1-9]/);
    expect(replay.stdout).toMatch(/gone from the stream:\s+0\b/);
    expect(replay.stdout).toMatch(/left on the queue:\s+0\b/);

    // Verify.
    const again = await postdate('--local', 'event-failures', 'redrive');
    expect(again.code, again.stdout).toBe(0);
    expect(again.stdout).toMatch(/failure messages:\s+0\b/);
    expect(await depth()).toBe(0);
    const delivered = await eventually(
      'every delivery delivered',
      async () => {
        const { items } = (await api(`/v1/webhooks/${endpoint}/deliveries`)).json as {
          items: { event_id: string; event_type?: string; status: string }[];
        };
        return items.length >= 2 && items.every((d) => d.status === 'delivered') ? items : undefined;
      },
      { withinMs: 30_000 },
    );
    await stack.idle();
    const ids = hook.received.map((request) => String(request.headers['webhook-id']));
    expect(ids.toSorted(), 'each event once at the endpoint').toEqual(
      delivered.map((d) => d.event_id).toSorted(),
    );
    const types = hook.received.map((request) => (JSON.parse(request.body) as { type: string }).type);
    expect(types.toSorted()).toEqual(['message.scheduled', 'message.sent']);
    for (const request of hook.received) {
      expect(() =>
        new Webhook(secret).verify(request.raw, {
          'webhook-id': String(request.headers['webhook-id']),
          'webhook-timestamp': String(request.headers['webhook-timestamp']),
          'webhook-signature': String(request.headers['webhook-signature']),
        }),
      ).not.toThrow();
    }
  }, 150_000);
});
