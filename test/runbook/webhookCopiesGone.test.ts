import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { WEBHOOK_STALLED_AFTER_MS } from '../../lambdas/core/webhookOperator.js';
import { KEY } from '../../lambdas/store/tableLayout.js';
import { deliveryPartitionKey } from '../../lambdas/store/webhookStore.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';
import { type Received, startReceiver } from '../webhooks/webhookHarness.js';
import {
  awsCli,
  enqueue,
  localClientOptions,
  operatorCli,
  stackApi,
  webhookCopiesInTheirDlq,
  webhookDeliveries,
} from './operatorShell.js';

/** The local stack's tenant: the runbook's `--tenant acme`. */
const TENANT = 'local';

describe('runbook procedure 7, step 4: deliveries whose copies are gone', () => {
  let broken = true;
  let stack: LocalStack;
  let hook: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    hook = await startReceiver(() => (broken ? 503 : 200));
    stack = await startLocalStack({
      config: loadConfig({ POSTDATE_API_KEY: 'pd_runbook-webhook-gone-01' }, 'local'),
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

  it('finds them, refuses one not yet 2 h overdue saying when, and delivers each once: API, CLI, and two retries at once', async () => {
    const postdate = operatorCli(stack, { bin: true });
    const created = await api('/v1/webhooks', { method: 'POST', body: { url: hook.url('/hook') } });
    expect(created.status).toBe(201);
    const endpoint = String(created.json.id);
    const secret = String(created.json.secret);
    // Two messages: four deliveries (message.scheduled and message.sent of each), the endpoint failing.
    await enqueue(stack, 'runbook-webhook-gone-1');
    await enqueue(stack, 'runbook-webhook-gone-2');
    await eventually(
      'four deliveries attempted and failing',
      async () => {
        const items = await deliveries(endpoint);
        return items.length === 4 && items.every((d) => d.status === 'pending' && d.attempts >= 1)
          ? items
          : undefined;
      },
      { withinMs: 60_000 },
    );

    // Our side fails (DynamoDB stopped): the redrive policy moves each copy to the webhook DLQ.
    const queueUrl = stack.functionEnvironment.POSTDATE_WEBHOOK_QUEUE_URL as string;
    const { WDLQ, depth } = await webhookCopiesInTheirDlq(stack, 4);

    // Dropped by hand (as the DLQ's 14 days would): received and deleted, so no copy of them is
    // anywhere now. (`purge-queue` takes up to 60 s, in AWS as in the emulator.)
    let dropped = 0;
    await eventually(
      'the four copies received from the DLQ and deleted',
      async () => {
        const shown = await aws(
          'sqs',
          'receive-message',
          '--queue-url',
          WDLQ,
          '--max-number-of-messages',
          '10',
        );
        const messages =
          shown === '' ? [] : (JSON.parse(shown) as { Messages: { ReceiptHandle: string }[] }).Messages;
        for (const message of messages) {
          await aws('sqs', 'delete-message', '--queue-url', WDLQ, '--receipt-handle', message.ReceiptHandle);
          dropped++;
        }
        return dropped === 4 || undefined;
      },
      { withinMs: 10_000 },
    );
    expect(await depth()).toBe(0);
    broken = false;
    const fixedAt = hook.received.length;

    // Step 4's find: each pending, its next attempt past but not 2 h past.
    const found = await deliveries(endpoint, 'pending');
    expect(found).toHaveLength(4);
    for (const delivery of found) {
      const overdue = Date.now() - Date.parse(delivery.next_attempt_at ?? '');
      expect(overdue, delivery.id).toBeGreaterThan(0);
      expect(overdue, delivery.id).toBeLessThan(WEBHOOK_STALLED_AFTER_MS);
    }
    // …and with the CLI, the same deliveries and times.
    const listedByCli = async () => {
      const listing = await postdate(
        '--json',
        'webhooks',
        'deliveries',
        endpoint,
        '--tenant',
        TENANT,
        '--status',
        'pending',
        '--all',
      );
      expect(listing.code, listing.stderr).toBe(0);
      return (JSON.parse(listing.stdout) as { items: { id: string; next_attempt_at: string }[] }).items;
    };
    expect(await listedByCli()).toEqual(
      found.map((d) => expect.objectContaining({ id: d.id, next_attempt_at: d.next_attempt_at })),
    );
    const [viaApi, viaCli, twiceAtOnce, apiBesideCli] = found.map((d) => d.id) as [
      string,
      string,
      string,
      string,
    ];

    // Not yet 2 h overdue: refused, saying when it can be retried and what to do meanwhile.
    const early = await api(`/v1/webhooks/${endpoint}/deliveries/${viaApi}/retry`, { method: 'POST' });
    expect(early.status).toBe(409);
    const retryableAt = Date.parse(found[0]?.next_attempt_at ?? '') + WEBHOOK_STALLED_AFTER_MS;
    expect(early.json).toMatchObject({
      status: 409,
      delivery_status: 'pending',
      retryable_at: new Date(retryableAt).toISOString(),
    });
    expect(early.json.detail).toContain(new Date(retryableAt).toISOString());
    expect(early.json.detail).toMatch(/its copy may still come .*dead-letter queue once redriven/);
    const refused = await postdate('webhooks', 'retry', endpoint, viaCli, '--tenant', TENANT);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stderr).toMatch(/pending.*webhook DLQ once redriven: runbook procedure 7/);
    expect(refused.stderr).toContain(
      new Date(Date.parse(found[1]?.next_attempt_at ?? '') + WEBHOOK_STALLED_AFTER_MS).toISOString(),
    );

    // The one compression: each delivery's next attempt written 2 h 5 min back.
    const documents = DynamoDBDocumentClient.from(
      new DynamoDBClient(localClientOptions(stack.dynamodbEndpoint)),
    );
    const longAgo = new Date(Date.now() - WEBHOOK_STALLED_AFTER_MS - 5 * 60_000).toISOString();
    for (const delivery of found) {
      await documents.send(
        new UpdateCommand({
          TableName: stack.tableName,
          Key: { [KEY.partition]: deliveryPartitionKey(endpoint, delivery.id), [KEY.sort]: delivery.id },
          UpdateExpression: 'SET next_attempt_at = :at',
          ConditionExpression: 'attribute_exists(#pk)',
          ExpressionAttributeNames: { '#pk': KEY.partition },
          ExpressionAttributeValues: { ':at': longAgo },
        }),
      );
    }
    documents.destroy();
    const stalled = await deliveries(endpoint, 'pending');
    expect(stalled.map((d) => d.next_attempt_at)).toEqual([longAgo, longAgo, longAgo, longAgo]);
    expect((await listedByCli()).map((d) => d.next_attempt_at)).toEqual([longAgo, longAgo, longAgo, longAgo]);

    // Step 4's retries: one through the API, one with the CLI, two of one delivery at once, and the
    // API and the CLI at once on another.
    const retryPath = (delivery: string) => `/v1/webhooks/${endpoint}/deliveries/${delivery}/retry`;
    const retried = await api(retryPath(viaApi), { method: 'POST' });
    expect(retried.status, JSON.stringify(retried.json)).toBe(202);
    expect(retried.json).toMatchObject({ id: viaApi, status: 'pending' });
    const cli = await postdate('webhooks', 'retry', endpoint, viaCli, '--tenant', TENANT);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(new RegExp(`^${viaCli}: pending again`));
    const [first, second, beside, cliBeside] = await Promise.all([
      api(retryPath(twiceAtOnce), { method: 'POST' }),
      api(retryPath(twiceAtOnce), { method: 'POST' }),
      api(retryPath(apiBesideCli), { method: 'POST' }),
      postdate('webhooks', 'retry', endpoint, apiBesideCli, '--tenant', TENANT),
    ]);
    // Of two at once one is taken: the other read the delivery after that write (its next attempt
    // now: refused) or before it (its write refused); never both.
    expect([first.status, second.status].sort()).toEqual([202, 409]);
    expect([beside.status === 202, cliBeside.code === 0].filter(Boolean)).toHaveLength(1);

    // Every copy handled (the queue holds none, delayed or in flight) and every delivery delivered.
    const sqs = new SQSClient(localClientOptions(stack.sqsEndpoint));
    await eventually(
      'every delivery delivered and the webhook queue empty',
      async () => {
        const items = await deliveries(endpoint);
        if (!items.every((d) => d.status === 'delivered')) return undefined;
        const { Attributes = {} } = await sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }),
        );
        const left =
          Number(Attributes.ApproximateNumberOfMessages) +
          Number(Attributes.ApproximateNumberOfMessagesNotVisible) +
          Number(Attributes.ApproximateNumberOfMessagesDelayed);
        return left === 0 || undefined;
      },
      { withinMs: 30_000 },
    );
    sqs.destroy();

    // Verify: nothing pending long overdue; each event at the endpoint once, signed with its secret.
    expect(await deliveries(endpoint, 'pending')).toEqual([]);
    expect(await depth()).toBe(0);
    const answered = hook.received.slice(fixedAt);
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
    expect(
      answered.filter((request) => !verified(request)).map((request) => request.headers['webhook-id']),
      'not signed with the secret',
    ).toEqual([]);
    expect(answered.map((request) => String(request.headers['webhook-id'])).sort()).toEqual(
      found.map((d) => d.event_id).sort(),
    );
  }, 240_000);
});
