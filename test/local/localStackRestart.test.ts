import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../lambdas/core/config.js';
import { createApiKey, revokeApiKey } from '../../lambdas/keys/apiKeys.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { LOCAL_AWS } from '../support/awsLocal.js';

const API_KEY = 'pd_local-stack-restart-key';
const OTHER_TENANT_KEY = 'pd_local-stack-restart-other-tenant';
const REVOKED_KEY = 'pd_local-stack-restart-revoked';

describe('the local stack on a data dir', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'postdate-stack-'));
  const config = loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local');
  let running: LocalStack | undefined;

  afterAll(async () => {
    await running?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps the table, the API key and the messages across a restart on other ports', async () => {
    running = await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const first = running;
    const enqueued = await fetch(`${first.apiUrl}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${API_KEY}`,
        'content-type': 'application/json',
        'idempotency-key': 'restart-spec-1',
      },
      body: JSON.stringify({
        to: ['ada@example.com'],
        subject: 'Kept',
        text: 'across restarts',
        send_at: new Date(Date.now() + 3 * 24 * 3600 * 1000).toISOString(),
      }),
    });
    expect(enqueued.status).toBe(202);
    const { id } = (await enqueued.json()) as { id: string };
    await first.stop();
    running = undefined;

    running = await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const second = running;
    expect(second.apiUrl).not.toBe(first.apiUrl);
    expect(second.streamArn).toBe(first.streamArn);
    expect(second.apiKey).toBe(API_KEY);
    const read = await fetch(`${second.apiUrl}/v1/messages/${id}`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id, status: 'scheduled' });
    expect((await fetch(`${second.apiUrl}/health`)).status).toBe(200);
  }, 120_000);

  it('refuses, naming POSTDATE_API_KEY and what to do, a key the kept data holds revoked or for another tenant', async () => {
    // The stack of the test above is still running on the data dir.
    running ??= await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const dynamodb = new DynamoDBClient({ ...LOCAL_AWS, endpoint: running.dynamodbEndpoint });
    const documents = DynamoDBDocumentClient.from(dynamodb);
    const now = new Date();
    await createApiKey(documents, running.tableName, { tenant: 'other', secret: OTHER_TENANT_KEY, now });
    const revoked = await createApiKey(documents, running.tableName, {
      tenant: 'local',
      secret: REVOKED_KEY,
      now,
    });
    await revokeApiKey(documents, running.tableName, revoked.keyId, now);
    dynamodb.destroy();
    await running.stop();
    running = undefined;

    for (const [key, why] of [
      [OTHER_TENANT_KEY, /another tenant/],
      [REVOKED_KEY, /revoked/],
    ] as const) {
      const starting = startLocalStack({
        config: loadConfig({ POSTDATE_API_KEY: key }, 'local'),
        dataDir,
        ports: ANY_FREE_PORTS,
        quiet: true,
      });
      await expect(starting).rejects.toBeInstanceOf(ConfigError);
      await expect(starting).rejects.toThrow(/^POSTDATE_API_KEY: /);
      await expect(starting).rejects.toThrow(why);
      // What to do: another key, or none (a new one is generated).
      await expect(starting).rejects.toThrow(/unset POSTDATE_API_KEY/);
      await expect(starting).rejects.not.toThrow(key);
    }
  }, 180_000);
});
