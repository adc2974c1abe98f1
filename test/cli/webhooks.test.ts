import type { LookupAddress } from 'node:dns';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../cli/cliErrors.js';
import { memoryOutput } from '../../cli/output.js';
import { buildProgram } from '../../cli/postdate.js';
import { targetFromStack } from '../../cli/stackTarget.js';
import { resolveRefs } from '../../cli/target.js';
import {
  webhookQueueOf,
  webhooksCreate,
  webhooksDelete,
  webhooksDeliveries,
  webhooksList,
  webhooksRetry,
  webhooksRotateSecret,
  webhooksShow,
  webhooksTest,
  webhookUrlCheckOf,
} from '../../cli/webhooksCommands.js';
import { checkNewWebhookUrl } from '../../lambdas/adapters/webhookAddressPolicy.js';
import { deleteWebhookEndpoint } from '../../lambdas/api/routes/webhooks.js';
import { DynamoWebhookStore } from '../../lambdas/store/webhookStore.js';
import { WEBHOOK_QUEUE } from '../../lib/webhookLayout.js';
import { createWebhookQueue } from '../../local/webhookEventSources.js';
import { documentClient, emulatorEnv, freshTable, queueDepth, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { startReceiver, subscribe, webhookHarness } from '../webhooks/webhookHarness.js';
import { runMain } from './cliFixtures.js';

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
    // The local stack's policy, as the CLI takes it against the local target: http to loopback.
    checkUrl: (url: string) => checkNewWebhookUrl(url, 'local'),
    random: Math.random,
  };
}

/**
 * The real entry, the CLI's main with its argv, in this process (`runMain`), against the emulators;
 * never rejects. The bin as a process is test/cli/entry.test.ts's.
 */
const postdate = (args: string[]) => runMain(args, emulatorEnv());

describe('postdate webhooks', () => {
  it('is registered with list, create, show, delete, test, deliveries, rotate-secret and retry', () => {
    // DESIGN §6: the CLI manages webhooks; §3 names what there is to manage.
    const webhooks = buildProgram().commands.find((command) => command.name() === 'webhooks');
    expect(webhooks?.commands.map((command) => command.name())).toEqual([
      'list',
      'create',
      'show',
      'delete',
      'test',
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
    ).rejects.toThrow('no webhook endpoint');
  });

  it('lists endpoints (no secret) and deliveries, and retries a failed delivery', async () => {
    let healthy = false;
    const hook = await startReceiver(() => (healthy ? 200 : 500));
    receivers.push(hook);
    const harness = await webhookHarness({ retryHours: 1 });
    const endpoint = await subscribe(harness, hook.url(), 'acme');
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();
    const deps = { ...cliDeps(harness), retryHours: 1 };

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
    ).rejects.toThrow(/no webhook endpoint .* for tenant other/);
  });

  it("refuses a pending delivery's retry before its next attempt is 2 h overdue, saying from when and why, exit 1", async () => {
    // Runbook procedure 7 step 4 (decision 0289): a copy that may still come is not retried yet.
    const hook = await startReceiver(() => 500);
    receivers.push(hook);
    const harness = await webhookHarness();
    const endpoint = await subscribe(harness, hook.url(), 'acme');
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump({ rounds: 1 });
    const deps = cliDeps(harness);
    const listed = memoryOutput({ json: true });
    await webhooksDeliveries(deps, { tenant: 'acme', endpoint: endpoint.id, limit: 10 }, listed);
    const [row] = (
      listed.documents[0] as { items: { id: string; status: string; next_attempt_at: string }[] }
    ).items;
    expect(row?.status).toBe('pending');
    // The listing shows when its next attempt is due: what step 4's find reads.
    expect(Date.parse(row?.next_attempt_at ?? '')).toBeGreaterThan(0);
    const from = new Date(Date.parse(row?.next_attempt_at ?? '') + 2 * 3_600_000).toISOString();
    const refused = await webhooksRetry(
      deps,
      { tenant: 'acme', endpoint: endpoint.id, delivery: row?.id ?? '' },
      memoryOutput(),
    ).catch((error: unknown) => error);
    expect(refused).toMatchObject({
      exitCode: EXIT.failed,
      message: `the delivery is pending, its next attempt due at ${row?.next_attempt_at}: its copy may still come (from the webhook queue, or from the webhook DLQ once redriven: runbook procedure 7); retry it from ${from}, when that attempt is 2 hours overdue`,
      context: { delivery_status: 'pending', retryable_at: from },
    });
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
    for (const bad of [
      ['--limit', 'abc'],
      ['--limit', '0'],
      ['--limit', '101'],
      ['--after', 'not-a-delivery'],
    ]) {
      const args = ['--json', '--local', 'webhooks', 'deliveries', 'ep', '--tenant', 'acme', ...bad];
      const result = await runMain(args);
      expect({ bad, code: result.code }).toEqual({ bad, code: 2 });
      expect(JSON.parse(result.stdout)).toMatchObject({
        error: { type: 'urn:postdate:cli:usage', detail: expect.stringContaining(bad[0] ?? '') },
      });
    }
  }, 120_000);

  it('creates an endpoint: the secret printed once, saying so; the listing shows the endpoint, never the secret', async () => {
    // DESIGN §3: POST /v1/webhooks answers 201 with `secret`, shown once.
    const harness = await webhookHarness();
    const deps = cliDeps(harness);
    const out = memoryOutput();
    await webhooksCreate(
      deps,
      {
        tenant: 'acme',
        url: 'https://hooks.example.com/postdate',
        events: ['message.sent'],
        description: 'ops',
      },
      out,
    );
    const [endpoint] = await harness.store.listEndpoints('acme');
    if (!endpoint) throw new Error('nothing created');
    expect(endpoint).toMatchObject({
      url: 'https://hooks.example.com/postdate',
      events: ['message.sent'],
      description: 'ops',
    });
    const text = out.text();
    expect(text.split(endpoint.secret)).toHaveLength(2);
    expect(text).toContain(endpoint.id);
    expect(text).toMatch(/shown (only )?once/);
    expect(out.warnings.join('\n')).not.toContain(endpoint.secret);

    const json = memoryOutput({ json: true });
    await webhooksCreate(deps, { tenant: 'acme', url: 'https://hooks.example.com/other' }, json);
    expect(json.documents[0]).toMatchObject({
      id: expect.stringMatching(/^whe_/),
      events: null,
      secret: expect.stringMatching(/^whsec_/),
    });

    const listed = memoryOutput();
    await webhooksList(deps, 'acme', listed);
    expect(listed.text()).toContain(endpoint.id);
    expect(listed.text()).toContain('https://hooks.example.com/postdate');
    expect(listed.text()).not.toContain('whsec_');
  });

  it('against AWS refuses a URL the policy refuses or an unknown event type, naming the flag, the URL and the reason, and writes nothing; a public URL is taken', async () => {
    // DESIGN §11: in AWS a webhook URL is https and never a loopback or private address. A resource
    // name (--table) and no --local is the AWS target (docs/cli.md), its endpoints the emulators'.
    const { tableName } = await freshTable('cli-webhooks-create');
    const store = new DynamoWebhookStore(documentClient(), tableName);
    const aws = ['--json', '--table', tableName, 'webhooks', 'create', '--tenant', 'acme'];
    for (const [flag, args, reason] of [
      ['--url', ['--url', 'http://hooks.example.com/postdate'], 'https'],
      ['--url', ['--url', 'https://127.0.0.1:8443/hook'], 'loopback'],
      ['--url', ['--url', 'https://10.1.2.3/hook'], 'private'],
      // The trailing dot only makes the name absolute: it is still this machine.
      ['--url', ['--url', 'https://localhost./hook'], 'localhost'],
      [
        '--events',
        ['--url', 'https://hooks.example.com/postdate', '--events', 'message.sent,message.nope'],
        '',
      ],
    ] as const) {
      const result = await postdate([...aws, ...args]);
      expect({ args, code: result.code }).toEqual({ args, code: EXIT.usage });
      const { error } = JSON.parse(result.stdout) as { error: { type: string; detail: string } };
      expect(error.type).toBe('urn:postdate:cli:usage');
      expect(error.detail).toContain(flag);
      expect(error.detail).toContain(reason);
      // The URL as given: a script that built it from a variable shows what it built.
      if (flag === '--url') expect(error.detail).toContain(args[1]);
    }
    expect(await store.listEndpoints('acme')).toEqual([]);

    const taken = await postdate([...aws, '--url', 'https://hooks.example.com/postdate']);
    expect(taken.code).toBe(EXIT.ok);
    expect(await store.listEndpoints('acme')).toEqual([
      expect.objectContaining({ url: 'https://hooks.example.com/postdate' }),
    ]);
  }, 120_000);

  it('against AWS resolves the name now: a URL whose name has a loopback address is refused naming the URL and the address, a public one is taken (decision 0217)', async () => {
    // DESIGN §11: in AWS a webhook URL must not resolve to a loopback, private, link-local or
    // metadata address. The names' answers, as a hosts file would give them.
    const hosts: Record<string, LookupAddress[]> = {
      'hooks.internal.test': [
        { address: '203.0.114.7', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ],
      'metadata.internal.test': [{ address: 'fd00:ec2::254', family: 6 }],
      'hooks.example.com': [{ address: '93.184.215.14', family: 4 }],
    };
    const resolve = async (host: string) => hosts[host] ?? [];
    const harness = await webhookHarness();
    const deps = { ...cliDeps(harness), checkUrl: webhookUrlCheckOf('aws', resolve) };
    for (const [url, address] of [
      ['https://hooks.internal.test/hook', '127.0.0.1'],
      ['https://metadata.internal.test/latest', 'fd00:ec2::254'],
    ] as const) {
      const refused = await webhooksCreate(deps, { tenant: 'acme', url }, memoryOutput()).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toMatchObject({ exitCode: EXIT.usage });
      expect((refused as Error).message).toContain(`--url ${url}`);
      expect((refused as Error).message).toContain(`address ${address} is loopback, private, link-local`);
    }
    expect(await harness.store.listEndpoints('acme')).toEqual([]);

    const out = memoryOutput({ json: true });
    await webhooksCreate(deps, { tenant: 'acme', url: 'https://hooks.example.com/postdate' }, out);
    expect(out.documents[0]).toMatchObject({ url: 'https://hooks.example.com/postdate' });
    expect(await harness.store.listEndpoints('acme')).toHaveLength(1);
  });

  it('through the entry: creates on the local stack (http to loopback), and `test` reaches the endpoint signed with the secret it printed', async () => {
    const hook = await startReceiver();
    receivers.push(hook);
    const harness = await webhookHarness();
    const local = ['--json', '--local', '--table', harness.tableName, 'webhooks'];
    const created = await postdate([...local, 'create', '--tenant', 'acme', '--url', hook.url()]);
    expect(created.code).toBe(EXIT.ok);
    const { id, secret } = JSON.parse(created.stdout) as { id: string; secret: string };
    expect(secret).toMatch(/^whsec_/);
    expect(created.stderr).not.toContain(secret);

    const tested = await postdate([
      ...local,
      'test',
      id,
      '--tenant',
      'acme',
      '--webhook-queue-url',
      harness.queueUrl,
    ]);
    expect(tested.code).toBe(EXIT.ok);
    expect(JSON.parse(tested.stdout)).toMatchObject({
      webhook_id: id,
      event_type: 'webhook.test',
      status: 'pending',
    });
    await eventually(
      'the copy on the webhook queue',
      async () => (await queueDepth(sqsClient(), harness.queueUrl)).visible === 1,
    );
    await harness.pump();
    const [request] = hook.received;
    if (!request) throw new Error('nothing received');
    expect(JSON.parse(request.body)).toMatchObject({ type: 'webhook.test', data: { webhook_id: id } });
    const headers = {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    };
    expect(() => new Webhook(secret).verify(request.body, headers)).not.toThrow();
  }, 120_000);

  it('on the local stack works on tenant `local` without --tenant, as templates and suppressions do; against AWS asks for --tenant (decision 0253)', async () => {
    // README: `npm start` seeds a key for tenant `local`; the webhooks its API key makes are that
    // tenant's, and the CLI's local default is the same tenant for every tenant-scoped command.
    const hook = await startReceiver();
    receivers.push(hook);
    const harness = await webhookHarness();
    const local = ['--json', '--local', '--table', harness.tableName, 'webhooks'];
    const created = await postdate([...local, 'create', '--url', hook.url()]);
    expect({ code: created.code, stderr: created.stderr }).toEqual({ code: EXIT.ok, stderr: '' });
    const { id } = JSON.parse(created.stdout) as { id: string };
    expect(await harness.store.listEndpoints('local')).toEqual([expect.objectContaining({ id })]);
    for (const args of [['list'], ['show', id], ['deliveries', id], ['rotate-secret', id], ['delete', id]]) {
      const result = await postdate([...local, ...args]);
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: EXIT.ok, stderr: '' });
    }
    expect(await harness.store.listEndpoints('local')).toEqual([]);

    const aws = ['--json', '--table', harness.tableName, 'webhooks'];
    for (const args of [['list'], ['create', '--url', 'https://hooks.example.com/postdate'], ['show', id]]) {
      const result = await postdate([...aws, ...args]);
      expect({ args, code: result.code }).toEqual({ args, code: EXIT.usage });
      expect(JSON.parse(result.stdout)).toMatchObject({
        error: { type: 'urn:postdate:cli:usage', detail: expect.stringContaining('--tenant') },
      });
    }
    expect(await harness.store.listEndpoints('local')).toEqual([]);
  }, 120_000);

  it("through the entry, without --webhook-queue-url: against the local stack `test` uses its webhook queue, as the API's test route does", async () => {
    // The local stack's names (`npm start`): the webhook queue falls back to its logical name, as the send queue does.
    expect(resolveRefs('local', {}, {}).webhookQueue).toEqual({
      name: `postdate-${WEBHOOK_QUEUE.logicalName}`,
    });
    expect(resolveRefs('aws', { table: 'Postdate-Table' }, {}).webhookQueue).toBeUndefined();
    await createWebhookQueue(sqsClient(), 'postdate'); // as the local stack creates it
    const harness = await webhookHarness();
    const endpoint = await subscribe(harness, 'http://127.0.0.1:9/hook', 'acme');
    const local = ['--json', '--local', '--table', harness.tableName, 'webhooks'];

    const tested = await postdate([...local, 'test', endpoint.id, '--tenant', 'acme']);

    expect(tested.stderr).not.toContain('no webhook queue');
    expect(tested.code).toBe(EXIT.ok);
    expect(JSON.parse(tested.stdout)).toMatchObject({ webhook_id: endpoint.id, event_type: 'webhook.test' });
    const page = await harness.store.listDeliveries({
      endpointId: endpoint.id,
      status: null,
      limit: 10,
      cursor: null,
    });
    expect(page.items).toHaveLength(1);
  }, 120_000);

  it('tests, shows the delivery counts, deletes; a second delete, a show or a test after it is not found', async () => {
    const hook = await startReceiver();
    receivers.push(hook);
    const harness = await webhookHarness();
    const endpoint = await subscribe(harness, hook.url(), 'acme');
    const deps = cliDeps(harness);

    const tested = memoryOutput();
    await webhooksTest(deps, { tenant: 'acme', endpoint: endpoint.id }, tested);
    expect(tested.text()).toContain('webhook.test');
    await eventually(
      'the copy on the webhook queue',
      async () => (await queueDepth(sqsClient(), harness.queueUrl)).visible === 1,
    );
    await harness.pump();
    expect(hook.received).toHaveLength(1);

    const shown = memoryOutput();
    await webhooksShow(deps, { tenant: 'acme', endpoint: endpoint.id }, shown);
    expect(shown.text()).toContain(hook.url());
    expect(shown.text()).toMatch(/deliveries:\s+1 delivered, 0 pending, 0 failed/);
    expect(shown.text()).not.toContain(endpoint.secret);
    const shownJson = memoryOutput({ json: true });
    await webhooksShow(deps, { tenant: 'acme', endpoint: endpoint.id }, shownJson);
    expect(shownJson.documents[0]).toMatchObject({
      id: endpoint.id,
      deliveries: { delivered: 1, pending: 0, failed: 0, recent: 1 },
    });
    // Another tenant's endpoint is not found, as the API answers 404.
    await expect(
      webhooksShow(deps, { tenant: 'other', endpoint: endpoint.id }, memoryOutput()),
    ).rejects.toMatchObject({
      exitCode: EXIT.notFound,
    });
    await expect(
      webhooksDelete(deps, { tenant: 'other', endpoint: endpoint.id }, memoryOutput()),
    ).rejects.toMatchObject({
      exitCode: EXIT.notFound,
    });

    const deleted = memoryOutput();
    await webhooksDelete(deps, { tenant: 'acme', endpoint: endpoint.id }, deleted);
    expect(deleted.text()).toContain(`deleted ${endpoint.id}`);
    expect(await harness.store.getEndpoint('acme', endpoint.id)).toBeNull();
    for (const again of [webhooksShow, webhooksDelete, webhooksTest]) {
      await expect(
        again(deps, { tenant: 'acme', endpoint: endpoint.id }, memoryOutput()),
      ).rejects.toMatchObject({
        exitCode: EXIT.notFound,
        message: expect.stringContaining(`no webhook endpoint ${endpoint.id}`),
      });
    }
    expect((await queueDepth(sqsClient(), harness.queueUrl)).visible).toBe(0);
  });

  it("deletes through the route's own deleteWebhookEndpoint: another tenant's, a malformed or a gone id is not found", async () => {
    const harness = await webhookHarness();
    const endpoint = await subscribe(harness, 'http://127.0.0.1:9/hook', 'acme');
    expect(await deleteWebhookEndpoint(harness.store, 'other', endpoint.id)).toBe('not-found');
    expect(await deleteWebhookEndpoint(harness.store, 'acme', 'not an id')).toBe('not-found');
    expect(await deleteWebhookEndpoint(harness.store, 'acme', endpoint.id)).toBe('deleted');
    expect(await deleteWebhookEndpoint(harness.store, 'acme', endpoint.id)).toBe('not-found');
  });

  it('`test` without a webhook queue names the flag, and queues nothing', async () => {
    const harness = await webhookHarness();
    const endpoint = await subscribe(harness, 'http://127.0.0.1:9/hook', 'acme');
    await expect(
      webhooksTest(
        { ...cliDeps(harness), queue: undefined },
        { tenant: 'acme', endpoint: endpoint.id },
        memoryOutput(),
      ),
    ).rejects.toMatchObject({
      exitCode: EXIT.usage,
      message: expect.stringContaining('--webhook-queue-url'),
    });
    const page = await harness.store.listDeliveries({
      endpointId: endpoint.id,
      status: null,
      limit: 10,
      cursor: null,
    });
    expect(page.items).toEqual([]);
  });
});
