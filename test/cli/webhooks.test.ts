import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryOutput } from '../../cli/output.js';
import { buildProgram } from '../../cli/postdate.js';
import { targetFromStack } from '../../cli/stackTarget.js';
import { resolveRefs } from '../../cli/target.js';
import {
  webhookQueueOf,
  webhooksDeliveries,
  webhooksList,
  webhooksRetry,
  webhooksRotateSecret,
} from '../../cli/webhooksCommands.js';
import { startReceiver, subscribe, webhookHarness } from '../webhooks/webhookHarness.js';

const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
});

/** What the webhooks commands get from cli/postdate.ts, over the harness's store, queue and clock. */
function cliDeps(harness: Awaited<ReturnType<typeof webhookHarness>>) {
  return {
    store: harness.store,
    queue: harness.queue,
    now: harness.clock.now,
    retryHours: 24,
    retentionDays: 30,
  };
}

describe('postdate webhooks', () => {
  it('is registered with list, deliveries, rotate-secret and retry', () => {
    const webhooks = buildProgram().commands.find((command) => command.name() === 'webhooks');
    expect(webhooks?.commands.map((command) => command.name())).toEqual([
      'list',
      'deliveries',
      'rotate-secret',
      'retry',
    ]);
  });

  it('retries onto the webhook queue the stack names, never onto the global --queue-url (the send queue)', () => {
    // DESIGN §6: with --stack an operator copies no queue URL by hand.
    const webhookQueue = 'https://sqs.eu-west-1.amazonaws.com/123456789012/Postdate-Webhooks-1';
    const fromStack = targetFromStack(
      'Postdate',
      {
        stackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/Postdate/0c6a9e50',
        outputs: { TableName: 'Postdate-Table', WebhookQueueUrl: webhookQueue },
      },
      {},
      {},
    );
    const refs = resolveRefs('aws', fromStack.options, fromStack.env);
    expect(webhookQueueOf({}, refs)).toEqual({ url: webhookQueue });
    expect(webhookQueueOf({ webhookQueueUrl: 'https://q/other' }, refs)).toEqual({ url: 'https://q/other' });
    // The retry's own flag is not the global one: `postdate --queue-url <send queue> webhooks retry`
    // once put a webhook copy on the send queue.
    const retry = buildProgram()
      .commands.find((command) => command.name() === 'webhooks')
      ?.commands.find((command) => command.name() === 'retry');
    expect(retry?.options.map((option) => option.long)).toContain('--webhook-queue-url');
    expect(retry?.options.map((option) => option.long)).not.toContain('--queue-url');
  });

  it('rotates a secret: prints the new one, and the old one signs beside it', async () => {
    const hook = await startReceiver();
    receivers.push(hook);
    const harness = await webhookHarness();
    const endpoint = await subscribe(harness, hook.url(), 'acme');
    const deps = cliDeps(harness);
    const out = memoryOutput({ json: true });
    await webhooksRotateSecret(deps, { tenant: 'acme', endpoint: endpoint.id }, out);
    const { secret } = out.documents[0] as { secret: string };
    expect(secret).toMatch(/^whsec_/);
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();
    const [request] = hook.received;
    if (!request) throw new Error('nothing received');
    const headers = {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    };
    expect(() => new Webhook(secret).verify(request.body, headers)).not.toThrow();
    expect(() => new Webhook(endpoint.secret).verify(request.body, headers)).not.toThrow();
    await expect(
      webhooksRotateSecret(deps, { tenant: 'other', endpoint: endpoint.id }, memoryOutput()),
    ).rejects.toThrow('no endpoint');
  });

  it('lists endpoints (no secret) and deliveries, and retries a failed delivery', async () => {
    let healthy = false;
    const hook = await startReceiver(() => (healthy ? 200 : 500));
    receivers.push(hook);
    const harness = await webhookHarness({ retryHours: 1 });
    const endpoint = await subscribe(harness, hook.url(), 'acme');
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();
    const deps = {
      store: harness.store,
      queue: harness.queue,
      now: harness.clock.now,
      retryHours: 1,
      retentionDays: 30,
    };

    const listed = memoryOutput({ json: true });
    await webhooksList(deps, 'acme', listed);
    expect(JSON.stringify(listed.documents)).toContain(endpoint.id);
    expect(JSON.stringify(listed.documents)).not.toContain(endpoint.secret);

    const failed = memoryOutput({ json: true });
    await webhooksDeliveries(
      deps,
      { tenant: 'acme', endpoint: endpoint.id, status: 'failed', limit: 10 },
      failed,
    );
    const [row] = (failed.documents[0] as { items: { id: string; status: string }[] }).items;
    expect(row?.status).toBe('failed');

    healthy = true;
    await webhooksRetry(
      deps,
      { tenant: 'acme', endpoint: endpoint.id, delivery: row?.id ?? '' },
      memoryOutput(),
    );
    await harness.pump();
    const after = memoryOutput({ json: true });
    await webhooksDeliveries(deps, { tenant: 'acme', endpoint: endpoint.id, limit: 10 }, after);
    expect((after.documents[0] as { items: { status: string }[] }).items[0]?.status).toBe('delivered');
    await expect(
      webhooksRetry(
        deps,
        { tenant: 'other', endpoint: endpoint.id, delivery: row?.id ?? '' },
        memoryOutput(),
      ),
    ).rejects.toThrow(/no delivery/);
  });

  it('pages deliveries as `suppressions list` does: --limit a page, `next` to pass as --after, or --all', async () => {
    // DESIGN §3: deliveries are listed newest first, paged; no delivery is out of the CLI's reach.
    const hook = await startReceiver();
    receivers.push(hook);
    const harness = await webhookHarness();
    const endpoint = await subscribe(harness, hook.url(), 'acme');
    for (let sent = 0; sent < 3; sent++)
      await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    const deps = cliDeps(harness);
    type Page = { items: { id: string }[]; next: string | null };
    const page = async (options: { limit: number; after?: string; all?: boolean }) => {
      const out = memoryOutput({ json: true });
      await webhooksDeliveries(deps, { tenant: 'acme', endpoint: endpoint.id, ...options }, out);
      return out.documents[0] as Page;
    };
    const first = await page({ limit: 2 });
    expect(first.items).toHaveLength(2);
    expect(first.next).toEqual(expect.any(String));
    const second = await page({ limit: 2, after: first.next ?? '' });
    expect(second).toMatchObject({ next: null });
    expect(second.items).toHaveLength(1);
    const all = await page({ limit: 1, all: true });
    expect(all.next).toBeNull();
    expect(all.items.map((item) => item.id)).toEqual(
      [...first.items, ...second.items].map((item) => item.id),
    );
  });

  it('refuses a --limit that is no whole number from 1 to 100, and an --after that is no delivery id', async () => {
    const run = promisify(execFile);
    for (const bad of [
      ['--limit', 'abc'],
      ['--limit', '0'],
      ['--limit', '101'],
      ['--after', 'not-a-delivery'],
    ]) {
      const args = ['--json', '--local', 'webhooks', 'deliveries', 'ep', '--tenant', 'acme', ...bad];
      const result = await run(process.execPath, ['cli/postdate.mjs', ...args], { timeout: 60_000 }).then(
        () => ({ code: 0, stdout: '' }),
        (error: { code?: number; stdout?: string }) => ({ code: error.code, stdout: error.stdout ?? '' }),
      );
      expect({ bad, code: result.code }).toEqual({ bad, code: 2 });
      expect(JSON.parse(result.stdout)).toMatchObject({
        error: { type: 'urn:postdate:cli:usage', detail: expect.stringContaining(bad[0] ?? '') },
      });
    }
  }, 120_000);
});
