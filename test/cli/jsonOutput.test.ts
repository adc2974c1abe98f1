import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { EXIT, errorDocument } from '../../cli/cliErrors.js';
import { jsonStyle, memoryOutput, snakeCase, terminalOutput } from '../../cli/output.js';
import { createWebhookEndpoint } from '../../lambdas/api/routes/webhooks.js';
import { DynamoTemplateStore } from '../../lambdas/store/templateStore.js';
import { DynamoWebhookStore } from '../../lambdas/store/webhookStore.js';
import { documentClient, freshQueues, freshTable } from '../support/awsLocal.js';
import { runMain } from './cliFixtures.js';

/**
 * One JSON style across the CLI's commands (issue 17 §4): snake_case keys as the API writes them,
 * a tenant's own keys (tags, metadata, headers) left as they are, and in `--json` mode an error is
 * one JSON document on stdout too, `{"error": {type, title, detail, exit_code}}` (docs/cli.md).
 */

const run = promisify(execFile);

/**
 * The CLI's main in this process (test/cli/cliFixtures.ts, `runMain`), for what a command prints;
 * `inherit: false` spawns the bin with only `env`, none of this process's variables (its credentials
 * among them): the SDK's credential chain and its files are the process's own, read once.
 */
async function postdate(args: string[], env: Record<string, string> = {}, { inherit = true } = {}) {
  if (inherit) return runMain(args, env);
  try {
    const { stdout, stderr } = await run(process.execPath, ['cli/postdate.mjs', ...args], {
      env,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('the JSON style', () => {
  it('turns every key into snake_case, leaving snake_case and UPPER_CASE keys as they are', () => {
    expect(snakeCase('receiveCount')).toBe('receive_count');
    expect(snakeCase('oldestSampledAgeMs')).toBe('oldest_sampled_age_ms');
    expect(snakeCase('sqsMessageId')).toBe('sqs_message_id');
    expect(snakeCase('created_at')).toBe('created_at');
    expect(snakeCase('ERROR_CODE')).toBe('ERROR_CODE');
    expect(
      jsonStyle({
        queueUrl: 'u',
        inFlight: 0,
        sample: [{ receivesBeforePeek: 1, lastError: { enhancedCode: '4.7.0' } }],
        when: new Date('2026-12-01T00:00:00.000Z'),
        nothing: null,
      }),
    ).toEqual({
      queue_url: 'u',
      in_flight: 0,
      sample: [{ receives_before_peek: 1, last_error: { enhanced_code: '4.7.0' } }],
      when: '2026-12-01T00:00:00.000Z',
      nothing: null,
    });
  });

  it("keeps a tenant's own keys: tags, metadata, headers, SQS attributes, the names tallies are by", () => {
    const own = { campaignId: '42', 'X-Campaign': '7' };
    expect(
      jsonStyle({
        items: [{ tags: own, metadata: own, headers: own }],
        attributes: { ERROR_CODE: 'x', scheduleArn: 'y' },
        byTenant: { acmeCorp: { inFlight: 1 } },
        byTag: { 'kind=campaignApproved': 2 },
      }),
    ).toEqual({
      items: [{ tags: own, metadata: own, headers: own }],
      attributes: { ERROR_CODE: 'x', scheduleArn: 'y' },
      // The tenant's name is its own; the tally inside is ours, snake_case all the way down (issue 29).
      by_tenant: { acmeCorp: { in_flight: 1 } },
      by_tag: { 'kind=campaignApproved': 2 },
    });
  });

  it('is what every command prints with --json: the sinks apply it to each document', () => {
    const out = memoryOutput({ json: true });
    out.data({ keyId: 'k', createdAt: 't' });
    expect(out.documents).toEqual([{ key_id: 'k', created_at: 't' }]);
  });

  it('prints every document on one line for a JSON Lines command, so an error ends the stream as one line', () => {
    let written = '';
    const stdout = {
      write(text: string) {
        written += text;
        return true;
      },
      isTTY: false,
    };
    const out = terminalOutput({
      json: true,
      jsonLines: true,
      stdout: stdout as unknown as NodeJS.WriteStream,
      stderr: stdout as unknown as NodeJS.WriteStream,
    });
    out.line('{"id":"a"}');
    out.data(errorDocument('failed', 'the table went away', EXIT.failed));
    const lines = written.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[1] ?? '')).toMatchObject({ error: { detail: 'the table went away' } });
  });

  it('shapes an error as a problem inside "error", with the exit code in place of an HTTP status', () => {
    expect(errorDocument('failed', 'no message abc', EXIT.failed)).toEqual({
      error: {
        type: 'urn:postdate:cli:failed',
        title: 'The command failed',
        detail: 'no message abc',
        exit_code: 1,
      },
    });
  });
});

describe('errors in --json mode', () => {
  it('a command that fails prints one JSON error document on stdout and the line on stderr', async () => {
    const { tableName } = await freshTable();
    const result = await postdate(
      ['--json', '--table', tableName, 'messages', 'show', 'nosuchmessage'],
      localAws(),
    );
    expect(result.code).toBe(4);
    expect(JSON.parse(result.stdout)).toEqual({
      error: {
        type: 'urn:postdate:cli:not-found',
        title: 'Not found',
        detail: 'no message nosuchmessage (or its retention ran out)',
        exit_code: 4,
        next: 'postdate messages list',
      },
    });
    expect(result.stderr).toContain('postdate: no message nosuchmessage');
  }, 60_000);

  it('what a command names that does not exist is exit 4, type not-found, apart from a failure (1)', async () => {
    // docs/cli.md: `4` not found. A script tells "gone" from "broken" by the exit code alone.
    const { tableName } = await freshTable();
    const commands = [
      ['messages', 'show', 'nosuchmessage'],
      ['messages', 'cancel', 'nosuchmessage'],
      ['messages', 'retry', 'nosuchmessage', 'nosuchmessage2'],
      ['messages', 'discard', 'nosuchmessage'],
      ['keys', 'revoke', 'key_0000000000000000'],
      ['suppressions', 'remove', 'nobody@example.com', '--tenant', 'acme'],
      ['templates', 'show', 'nope', '--tenant', 'acme'],
      ['templates', 'archive', 'nope', '--tenant', 'acme'],
      ['webhooks', 'show', 'ep_nope', '--tenant', 'acme'],
      ['webhooks', 'delete', 'ep_nope', '--tenant', 'acme'],
      ['webhooks', 'deliveries', 'ep_nope', '--tenant', 'acme'],
      ['webhooks', 'rotate-secret', 'ep_nope', '--tenant', 'acme'],
    ];
    for (const args of commands) {
      const result = await postdate(['--json', '--table', tableName, ...args], localAws());
      expect({ args, code: result.code }).toEqual({ args, code: 4 });
      const document = JSON.parse(result.stdout) as { results?: { outcome: string }[] };
      if (document.results) {
        // cancel, retry, discard: their report, every id not found.
        expect(document.results.map((row) => row.outcome)).toEqual(args.slice(2).map(() => 'not-found'));
      } else {
        expect(document).toMatchObject({
          error: { type: 'urn:postdate:cli:not-found', title: 'Not found', exit_code: 4 },
        });
      }
    }
  }, 120_000);

  it('a not-found names the command that lists the right ones: on its line, and as `next` in its document', async () => {
    // A user who typed a wrong id or name is told how to find the right one (decision 0206).
    const { tableName } = await freshTable();
    const documents = documentClient();
    await new DynamoTemplateStore(documents, tableName).putVersion({
      tenant: 'acme',
      name: 'welcome',
      content: { subject: 'Hi', html: null, text: 'Hi' },
      description: null,
      now: new Date(),
    });
    const created = await createWebhookEndpoint(
      {
        store: new DynamoWebhookStore(documents, tableName),
        checkUrl: async () => ({ ok: true }),
        now: () => new Date(),
        random: Math.random,
      },
      'acme',
      { url: 'https://hooks.example.com/postdate' },
    );
    if (created.kind !== 'created') throw new Error(`no endpoint: ${created.kind}`);
    const endpoint = created.endpoint.id;
    const queue = ['--webhook-queue-url', (await freshQueues()).urls.send];
    const dataFile = join(mkdtempSync(join(tmpdir(), 'postdate-not-found-')), 'data.json');
    writeFileSync(dataFile, '{}');
    const messages = 'postdate messages list';
    const templates = 'postdate templates list --tenant acme';
    const welcome = 'postdate templates show welcome --tenant acme';
    const suppressions = 'postdate suppressions list --tenant acme';
    const endpoints = 'postdate webhooks list --tenant acme';
    const cases: [string[], string][] = [
      [['messages', 'show', 'nosuchmessage'], messages],
      [['messages', 'cancel', 'nosuchmessage'], messages],
      [['messages', 'retry', 'nosuchmessage', 'nosuchmessage2'], messages],
      [['messages', 'discard', 'nosuchmessage'], messages],
      [['keys', 'revoke', 'key_0000000000000000'], 'postdate keys list'],
      [['suppressions', 'remove', 'nobody@example.com', '--tenant', 'acme'], suppressions],
      [['suppressions', 'remove', '--message', 'nosuchmessage', '--tenant', 'acme'], suppressions],
      [['templates', 'show', 'nope', '--tenant', 'acme'], templates],
      [['templates', 'show', 'welcome', '--template-version', '9', '--tenant', 'acme'], welcome],
      [['templates', 'render', 'nope', '--data-file', dataFile, '--tenant', 'acme'], templates],
      [
        [
          'templates',
          'render',
          'welcome',
          '--template-version',
          '9',
          '--data-file',
          dataFile,
          '--tenant',
          'acme',
        ],
        welcome,
      ],
      [['templates', 'archive', 'nope', '--tenant', 'acme'], templates],
      [['webhooks', 'show', 'ep_nope', '--tenant', 'acme'], endpoints],
      [['webhooks', 'delete', 'ep_nope', '--tenant', 'acme'], endpoints],
      [['webhooks', 'deliveries', 'ep_nope', '--tenant', 'acme'], endpoints],
      [['webhooks', 'rotate-secret', 'ep_nope', '--tenant', 'acme'], endpoints],
      [['webhooks', 'test', 'ep_nope', '--tenant', 'acme', ...queue], endpoints],
      [
        ['webhooks', 'retry', endpoint, 'dlv_0000000000aaaaaaaaaaaaaaaaaaaa', '--tenant', 'acme', ...queue],
        `postdate webhooks deliveries ${endpoint} --tenant acme`,
      ],
    ];
    const seen = [];
    for (const [args, next] of cases) {
      const result = await postdate(['--json', '--table', tableName, ...args], localAws());
      const document = JSON.parse(result.stdout) as { next?: string; error?: { next?: string } };
      seen.push({
        args: args.join(' '),
        code: result.code,
        // What a person reads (stderr), then what a script reads (stdout): the same next step.
        said: result.stderr.split('\n').some((line) => line.startsWith('postdate: ') && line.includes(next)),
        next: document.error?.next ?? document.next,
      });
    }
    expect(seen).toEqual(cases.map(([args, next]) => ({ args: args.join(' '), code: 4, said: true, next })));
  }, 180_000);

  it('a usage error (an unknown option) is a JSON document too, exit code 2', async () => {
    const result = await postdate(['--json', 'dlq', 'show', '--frobnicate']);
    expect(result.code).toBe(2);
    const document = JSON.parse(result.stdout) as {
      error: { type: string; detail: string; exit_code: number };
    };
    expect(document.error).toMatchObject({ type: 'urn:postdate:cli:usage', exit_code: 2 });
    expect(document.error.detail).toContain('--frobnicate');
  }, 60_000);

  it('a stack that does not answer: exit 3, type unreachable', async () => {
    const result = await postdate(['--json', '--local', 'messages', 'list'], {
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:9',
      AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:9',
    });
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({
      error: { type: 'urn:postdate:cli:unreachable', exit_code: 3 },
    });
  }, 60_000);
});

/** The emulators of the test run as the CLI's AWS (a `--table` names the table). */
function localAws(): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_REGION: 'us-east-1',
  };
}

/**
 * An environment with no AWS credentials anywhere in the SDK's chain: no variables, no shared files,
 * no instance metadata. What an operator whose SSO session expired has.
 */
function withoutCredentials(): Record<string, string> {
  const home = mkdtempSync(join(tmpdir(), 'postdate-no-credentials-'));
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    NO_COLOR: '1',
    AWS_REGION: 'eu-west-1',
    AWS_CONFIG_FILE: join(home, 'no-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(home, 'no-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

describe('AWS refusing the credentials', () => {
  it('is exit 3, type credentials, with the sign-in hint: under --stack and in webhooks as in every command', async () => {
    // docs/cli.md: `3` stack unreachable or credentials refused; `type` … `credentials` (3).
    const commands = [
      ['--table', 't', 'messages', 'list'],
      ['--stack', 'prod', 'messages', 'list'],
      ['--table', 't', 'webhooks', 'list', '--tenant', 'acme'],
      ['--stack', 'prod', 'webhooks', 'deliveries', 'ep', '--tenant', 'acme'],
    ];
    for (const args of commands) {
      const result = await postdate(['--json', ...args], withoutCredentials(), { inherit: false });
      expect({ args, code: result.code }).toEqual({ args, code: 3 });
      expect(JSON.parse(result.stdout)).toMatchObject({
        error: { type: 'urn:postdate:cli:credentials', exit_code: 3 },
      });
      expect(result.stderr).toContain('sign in (aws sso login)');
    }
  }, 120_000);

  it('names a profile AWS_PROFILE sets that neither AWS file has, and how to list them: no credential was refused', async () => {
    // The SDK skips the environment's keys when AWS_PROFILE is set, and its chain ends in the same
    // CredentialsProviderError as an expired sign-in (decision 0268).
    const env = withoutCredentials();
    const config = env.AWS_CONFIG_FILE ?? '';
    writeFileSync(config, '[profile ops]\nregion = eu-west-1\n');
    for (const args of [
      ['--table', 't', 'messages', 'list'],
      ['--stack', 'prod', 'messages', 'list'],
    ]) {
      const result = await postdate(
        ['--json', ...args],
        { ...env, AWS_PROFILE: 'nosuch' },
        { inherit: false },
      );
      expect({ args, code: result.code }).toEqual({ args, code: 3 });
      const { error } = JSON.parse(result.stdout) as {
        error: { type: string; title: string; detail: string };
      };
      expect(error.type).toBe('urn:postdate:cli:credentials');
      expect(error.detail).toBe(
        `AWS_PROFILE names nosuch, a profile in neither ${config} nor ${env.AWS_SHARED_CREDENTIALS_FILE}: ` +
          'list the profiles with aws configure list-profiles and set AWS_PROFILE to one',
      );
      expect(`${error.title} ${result.stderr}`).not.toMatch(/refused|sign in/);
    }
    // A profile the files have, whose credentials do not work, is still the sign-in's to fix.
    const known = await postdate(
      ['--json', '--table', 't', 'messages', 'list'],
      { ...env, AWS_PROFILE: 'ops' },
      {
        inherit: false,
      },
    );
    expect(known.code).toBe(3);
    expect(known.stderr).toContain('sign in (aws sso login)');
  }, 120_000);
});
