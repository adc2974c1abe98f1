import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';

const API_KEY = 'pd_local-stack-restart-key';

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
});
