/**
 * Events across a restart on a data dir (DESIGN §7, §11): the event producer's place in the table's
 * stream is kept, as a Lambda event source mapping keeps its checkpoint, so a restarted stack goes
 * on from where the last one stopped. Before, it read the whole stream again from its oldest record
 * after every restart; on a long history (the chaos run's third restart) it never reached the events
 * of new messages before the next restart, and an endpoint created after a status change received
 * that old change once the stack restarted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { createApiKey } from '../../lambdas/keys/apiKeys.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { startReceiver } from '../webhooks/webhookHarness.js';

const API_KEY = 'pd_local-stack-events-restart-key';
const IN_THREE_DAYS = () => new Date(Date.now() + 3 * 24 * 3600 * 1000).toISOString();

describe('the local stack restarted on its data dir', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'postdate-events-restart-'));
  const config = loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local');
  let running: LocalStack | undefined;
  let hook: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    hook = await startReceiver();
  });
  afterAll(async () => {
    await running?.stop();
    await hook?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('goes on producing events from where it stopped: new ones arrive, old ones are not produced again', async () => {
    const start = () => startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const api = (stack: LocalStack, key: string, path: string, body: object, idempotencyKey?: string) =>
      fetch(`${stack.apiUrl}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
        body: JSON.stringify(body),
      });
    const enqueue = async (stack: LocalStack, key: string, idempotencyKey: string) => {
      const response = await api(
        stack,
        key,
        '/v1/messages',
        { to: ['ada@example.com'], subject: 'Later', text: 'in three days', send_at: IN_THREE_DAYS() },
        idempotencyKey,
      );
      expect(response.status).toBe(202);
      return ((await response.json()) as { id: string }).id;
    };
    const eventsAt = (path: string) =>
      hook.received
        .filter((request) => request.path === path)
        .map((request) => JSON.parse(request.body) as { type: string; data: { id: string } });
    const arrived = (path: string, id: string) =>
      eventually(
        () => `the event of ${id} at ${path} (got ${JSON.stringify(eventsAt(path).map((e) => e.data.id))})`,
        () => eventsAt(path).some((event) => event.data.id === id),
        { withinMs: 60_000, everyMs: 100 },
      );

    running = await start();
    const first = running;
    // Another tenant with an endpoint: its message's event, accepted after `before`, says the
    // producer has read past `before` (one stream, read in order).
    const dynamodb = new DynamoDBClient({ ...LOCAL_AWS, endpoint: first.dynamodbEndpoint });
    const { secret: otherKey } = await createApiKey(DynamoDBDocumentClient.from(dynamodb), first.tableName, {
      tenant: 'other',
      now: new Date(),
    });
    dynamodb.destroy();
    expect((await api(first, otherKey, '/v1/webhooks', { url: hook.url('/other') })).status).toBe(201);

    // Accepted while this tenant has no endpoint: its `scheduled` event is delivered nowhere.
    const before = await enqueue(first, API_KEY, 'events-restart-before');
    const marker = await enqueue(first, otherKey, 'events-restart-marker');
    await arrived('/other', marker);
    expect((await api(first, API_KEY, '/v1/webhooks', { url: hook.url('/local') })).status).toBe(201);
    await first.stop();
    running = undefined;

    running = await start();
    const after = await enqueue(running, API_KEY, 'events-restart-after');
    await arrived('/local', after);
    // Every record read and every delivery done: an event of `before` sent wrongly is here by now.
    await running.idle();
    // The endpoint was created after `before` was accepted: that event is not its to receive.
    const ids = eventsAt('/local').map((event) => event.data.id);
    expect(ids, `the event of ${before}, accepted before the endpoint was`).not.toContain(before);
    expect(ids).toEqual([after]);
  }, 240_000);
});
