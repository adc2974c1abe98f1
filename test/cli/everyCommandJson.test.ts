/**
 * Output scripts can trust (issue 29): every command of `postdate` with `--json`, against a running
 * local stack (its main, in this process; the bin as a process in the last test), prints JSON that parses — one document, or JSON
 * Lines for `messages export` and `messages enqueue` — whether it succeeds or refuses; keys are snake_case all the way down
 * except a tenant's own names; and a reader that goes away (`| head`) ends the command quietly.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../cli/postdate.js';
import { createPostdateClient, type PostdateClient } from '../../lambdas/client/index.js';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { writeStackFile } from '../../local/stackFile.js';
import { runMain } from './cliFixtures.js';

const BIN = resolve('cli/postdate.mjs');
const API_KEY = 'pd_every-command-json-key-01';
/** The commands that print JSON Lines (one document per line) rather than one document. */
const JSON_LINES = new Set(['messages export', 'messages enqueue']);

/** Every leaf command of the program, as typed: `messages list`, `reconcile`, … */
function leafCommands(command: Command, path: string[] = []): string[] {
  if (command.commands.length === 0) return [path.join(' ')];
  return command.commands.flatMap((sub) => leafCommands(sub, [...path, sub.name()]));
}

/** camelCase keys anywhere in a document, outside a tenant's own maps. */
function camelCaseKeys(value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => camelCaseKeys(item, `${path}[${i}]`));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => {
    if (['tags', 'metadata', 'headers', 'attributes'].includes(key)) return [];
    const own = key === 'by_tenant' || key === 'by_tag' || key === 'kinds';
    const here = !own && /[a-z][A-Z]/.test(key) ? [`${path}.${key}`] : [];
    const below =
      own && typeof inner === 'object' && inner !== null
        ? Object.entries(inner).flatMap(([name, tally]) => camelCaseKeys(tally, `${path}.${key}.${name}`))
        : camelCaseKeys(inner, `${path}.${key}`);
    return [...here, ...below];
  });
}

describe('every postdate command with --json, against the local stack', () => {
  let stack: LocalStack;
  let client: PostdateClient;
  let dir: string;
  let messageId: string;
  let webhookId: string;

  beforeAll(async () => {
    const config = loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local');
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
    client = createPostdateClient({ baseUrl: stack.apiUrl, apiKey: stack.apiKey });
    dir = await mkdtemp(join(tmpdir(), 'postdate-cli-json-'));
    // The file `npm start` writes, in the directory the CLI runs in: the commands that call the API
    // take its URL from here (this process owns the stack, so the file is live while it runs).
    writeStackFile(
      {
        pid: process.pid,
        startedAt: new Date().toISOString(),
        apiUrl: stack.apiUrl,
        mailViewerUrl: null,
        dynamodbEndpoint: stack.dynamodbEndpoint,
        sqsEndpoint: stack.sqsEndpoint,
        schedulerEndpoint: stack.schedulerEndpoint,
        smtpPort: null,
        s3Endpoint: stack.s3Endpoint,
        relayNames: stack.relayNames,
      },
      dir,
    );
    await writeFile(join(dir, 'welcome.txt'), 'Hi {{name}}');
    await writeFile(join(dir, 'data.json'), '{"name": "Ada"}');
    await writeFile(join(dir, 'ledger.pdf'), '%PDF-1.4 ledger');
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const item = { to: ['ada@example.com'], subject: 'Batch', text: 'Batch.', send_at: later };
    await writeFile(
      join(dir, 'batch.jsonl'),
      [1, 2].map((i) => JSON.stringify({ idempotency_key: `every-command-batch-${i}`, ...item })).join('\n'),
    );
    const { message } = await client.enqueue(
      {
        to: ['ada@example.com'],
        subject: 'Later',
        text: 'Later.',
        send_at: new Date(Date.now() + 3_600_000).toISOString(),
        tags: { kind: 'welcomeMail' },
      },
      { idempotencyKey: `every-command-${Date.now()}` },
    );
    messageId = message.id;
    webhookId = (await client.createWebhook({ url: 'https://hooks.example.com/postdate' })).id;
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * Runs the CLI's main with --json against this stack, in this process and in `dir` (where the
   * stack file is); resolves with the exit code and stdout. The bin as a process is the last test's
   * and test/cli/entry.test.ts's: what this file proves is each command's document.
   */
  async function postdate(args: readonly string[]): Promise<{ code: number; stdout: string }> {
    const flags = [
      '--json',
      '--local',
      '--dynamodb-endpoint',
      stack.dynamodbEndpoint,
      '--sqs-endpoint',
      stack.sqsEndpoint,
      '--scheduler-endpoint',
      stack.schedulerEndpoint,
    ];
    const { code, stdout } = await runMain([...args, ...flags], { POSTDATE_TABLE_NAME: '' }, { cwd: dir });
    return { code, stdout };
  }

  /** Each command with the arguments it needs; the ones that find nothing to do refuse in JSON too. */
  const invocations = (): Record<string, readonly string[]> => ({
    'messages list': ['messages', 'list'],
    'messages export': ['messages', 'export', '--since', '1h'],
    // The API's URL from the stack file.
    'messages enqueue': ['messages', 'enqueue', '--file', 'batch.jsonl', '--api-key', stack.apiKey],
    'attachments upload': ['attachments', 'upload', 'ledger.pdf', '--api-key', stack.apiKey],
    'messages show': ['messages', 'show', messageId],
    'messages retry': ['messages', 'retry', messageId],
    'messages cancel': ['messages', 'cancel', messageId],
    'messages discard': ['messages', 'discard', messageId],
    'dlq show': ['dlq', 'show'],
    'dlq redrive': ['dlq', 'redrive', '--all', '--dry-run'],
    'dlq drop': ['dlq', 'drop', '--ids', 'nothing-here', '--dry-run'],
    'relay-failures redrive': ['relay-failures', 'redrive'],
    'event-failures redrive': ['event-failures', 'redrive'],
    'schedule-failures show': ['schedule-failures', 'show'],
    'schedule-failures redrive': ['schedule-failures', 'redrive', '--dry-run'],
    reconcile: ['reconcile'],
    'sending pause': ['sending', 'pause', '--kind', 'newsletter', '--reason', 'test'],
    'sending status': ['sending', 'status'],
    'sending resume': ['sending', 'resume', '--kind', 'newsletter'],
    'relays status': ['relays', 'status'],
    'relays disable': ['relays', 'disable', 'default'],
    'relays enable': ['relays', 'enable', 'default'],
    'keys create': ['keys', 'create', '--tenant', 'scripts'],
    'keys list': ['keys', 'list'],
    'keys revoke': ['keys', 'revoke', 'no-such-key'],
    'templates put': ['templates', 'put', 'welcome', '--subject', 'Hi', '--text-file', 'welcome.txt'],
    'templates list': ['templates', 'list'],
    'templates show': ['templates', 'show', 'welcome'],
    'templates render': ['templates', 'render', 'welcome', '--data-file', 'data.json'],
    'templates archive': ['templates', 'archive', 'welcome'],
    'suppressions add': ['suppressions', 'add', 'gone@example.com', '--tenant', 'local'],
    'suppressions list': ['suppressions', 'list', '--tenant', 'local'],
    'suppressions remove': ['suppressions', 'remove', 'gone@example.com', '--tenant', 'local'],
    'webhooks list': ['webhooks', 'list', '--tenant', 'local'],
    'webhooks deliveries': ['webhooks', 'deliveries', webhookId, '--tenant', 'local'],
    'webhooks rotate-secret': ['webhooks', 'rotate-secret', webhookId, '--tenant', 'local'],
    'webhooks retry': ['webhooks', 'retry', webhookId, 'no-such-delivery', '--tenant', 'local'],
    'webhooks create': ['webhooks', 'create', '--url', 'https://hooks.example.com/more', '--tenant', 'local'],
    'webhooks show': ['webhooks', 'show', webhookId, '--tenant', 'local'],
    'webhooks test': ['webhooks', 'test', webhookId, '--tenant', 'local'],
    // Last: the commands above use the endpoint.
    'webhooks delete': ['webhooks', 'delete', webhookId, '--tenant', 'local'],
  });

  it('covers every command the program has', () => {
    expect(Object.keys(invocations()).sort()).toEqual(leafCommands(buildProgram()).sort());
  });

  it('prints JSON that parses for every command, snake_case keys, an error document when it refuses', async () => {
    const unparsed: string[] = [];
    const camel: string[] = [];
    for (const [name, args] of Object.entries(invocations())) {
      const { code, stdout } = await postdate(args);
      // The two that call the API found it in the stack file; `webhooks test` the stack's webhook queue.
      if (['messages enqueue', 'attachments upload', 'webhooks test'].includes(name))
        expect(code, name).toBe(0);
      const lines = stdout.trim().split('\n');
      let documents: unknown[];
      try {
        documents = JSON_LINES.has(name) ? lines.map((line) => JSON.parse(line)) : [JSON.parse(stdout)];
      } catch {
        unparsed.push(`${name} (exit ${code}): ${stdout.slice(0, 200)}`);
        continue;
      }
      if (code !== 0 && !JSON_LINES.has(name)) {
        // A refusal or a finding to act on: either the error document with the same exit code, or
        // the command's report (reconcile, redrives: exit 1 says there is something to act on).
        const error = (documents[0] as { error?: { exit_code?: number } }).error;
        if (error !== undefined) expect(error.exit_code, name).toBe(code);
      }
      camel.push(...documents.flatMap((document) => camelCaseKeys(document, name)));
    }
    expect(unparsed).toEqual([]);
    expect(camel).toEqual([]);
  }, 600_000);

  it("messages enqueue stays JSON Lines when the API refuses: the last line is the API's problem, its errors on the file's lines", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const item = (i: number) => ({
      idempotency_key: `every-command-refused-${i}`,
      to: i === 119 ? [] : ['ada@example.com'],
      subject: 'Batch',
      text: 'Batch.',
      send_at: later,
    });
    await writeFile(
      join(dir, 'refused.jsonl'),
      Array.from({ length: 150 }, (_, i) => JSON.stringify(item(i))).join('\n'),
    );
    // The API's URL comes from the stack file in the CLI's directory (beforeAll).
    const enqueue = (file: string, mode: string, apiKey: string) => [
      'messages',
      'enqueue',
      '--file',
      file,
      '--mode',
      mode,
      '--api-key',
      apiKey,
    ];

    const strict = await postdate(enqueue('refused.jsonl', 'strict', stack.apiKey));
    expect(strict.code).toBe(1);
    const strictLines = strict.stdout.trimEnd().split('\n');
    expect(strictLines).toHaveLength(1);
    expect(JSON.parse(strictLines[0] ?? '')).toEqual({
      error: {
        type: 'urn:postdate:problem:validation',
        title: expect.any(String),
        status: 400,
        detail: expect.stringMatching(/nothing was enqueued/i),
        errors: [{ field: '/messages/119/to', line: 120, message: expect.any(String) }],
        exit_code: 1,
        unanswered_from_line: 1,
        maybe_stored_through_line: null,
      },
    });

    const refused = await postdate(enqueue('batch.jsonl', 'permissive', 'pd_no-such-key-0000000000'));
    expect(refused.code).toBe(1);
    const refusedLines = refused.stdout.trimEnd().split('\n');
    expect(refusedLines).toHaveLength(1);
    const { error } = JSON.parse(refusedLines[0] ?? '') as { error: Record<string, unknown> };
    // The authorizer denies an unknown key: the gateway's 403, passed through (decision 0033).
    expect(error).toMatchObject({ status: 403, exit_code: 1, unanswered_from_line: 1 });
    expect(error.type).not.toBe('urn:postdate:cli:internal');
    expect(JSON.stringify(error)).not.toMatch(/DynamoDB|SQS/);
  }, 120_000);

  it('ends quietly when the reader goes away (postdate … | head)', async () => {
    const child = spawn(
      process.execPath,
      [
        BIN,
        'keys',
        'list',
        '--local',
        '--dynamodb-endpoint',
        stack.dynamodbEndpoint,
        '--sqs-endpoint',
        stack.sqsEndpoint,
      ],
      {
        cwd: dir,
        env: { ...process.env, NO_COLOR: '1', POSTDATE_TABLE_NAME: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    // The reader is gone before the command writes: its first line meets a closed pipe (EPIPE).
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((done) => child.once('exit', (exit) => done(exit)));
    expect(stderr).not.toMatch(/EPIPE|at .*\(|Error/);
    expect(code).toBe(0);
  }, 60_000);
});
