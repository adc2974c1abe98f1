import { readFileSync } from 'node:fs';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { encodeDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { lookupApiKey } from '../../lambdas/keys/apiKeys.js';
import { documentClient, emulatorEnv, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';
import { deadLetter, drainIds, messageId, runBin, seedMessages, visibleCount } from './cliFixtures.js';

/** Runs the real entry in a child process; resolves with its exit code and output (never rejects). */
const postdate = (command: 'npx' | 'bin', args: string[], env: Record<string, string> = {}) =>
  runBin(args, env, { fromSource: command === 'npx' });

describe('the postdate entry point', () => {
  it('prints its help with `npx tsx cli/postdate.ts --help`', async () => {
    const result = await postdate('npx', ['--help']);
    expect(result.code).toBe(0);
    for (const command of ['messages', 'dlq', 'relay-failures', 'reconcile', 'keys']) {
      expect(result.stdout).toContain(command);
    }
  }, 60_000);

  it("says in its help what docs/cli.md says: --stack selects AWS, and each exit code's meaning", async () => {
    const result = await postdate('bin', ['--help']);
    const help = result.stdout.replace(/\s+/g, ' ');
    expect(help).toMatch(/Talks to the local stack \(npm start\) unless --stack or a resource name/);
    expect(help).toContain(
      'Exit codes: 0 done, 1 failed or partly failed, 2 bad usage, 3 stack unreachable or credentials refused, 4 not found, ' +
        '130 interrupted (what was done stands; run it again).',
    );
  }, 60_000);

  it('prints the version of the package it belongs to with --version (issue 17 §4)', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    const result = await postdate('bin', ['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n` });
  }, 60_000);

  it('runs a real command through the bin shim: keys create --json against a named table', async () => {
    const { tableName } = await freshTable();
    const result = await postdate(
      'bin',
      ['--json', '--table', tableName, 'keys', 'create', '--tenant', 'acme'],
      emulatorEnv(),
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // --json is snake_case, as the API (docs/cli.md, "JSON output").
    const created = JSON.parse(result.stdout) as { key_id: string; tenant: string; secret: string };
    expect(await lookupApiKey(documentClient(), tableName, created.secret)).toMatchObject({
      keyId: created.key_id,
      tenant: 'acme',
    });
  }, 60_000);

  it('redrives chosen ids from the command line, and exits 1 for an id that is not there', async () => {
    const { tableName } = await freshTable();
    const { urls } = await freshQueues(1);
    const sqs = sqsClient();
    await deadLetter(sqs, urls, [
      { id: messageId(1), rev: 1 },
      { id: messageId(2), rev: 1 },
    ]);
    const args = [
      '--table',
      tableName,
      '--queue-url',
      urls.send,
      '--dlq-url',
      urls.sendDeadLetter,
      'dlq',
      'redrive',
    ];
    const result = await postdate('bin', [...args, '--ids', messageId(2), messageId(3)], emulatorEnv());
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('moved 1 of 2');
    expect(result.stderr).toContain(`not in the DLQ: ${messageId(3)}`);
    expect(await drainIds(sqs, urls.send)).toEqual([{ id: messageId(2), rev: 1 }]);
  }, 60_000);

  it('redrives the schedule DLQ named by POSTDATE_SCHEDULE_DLQ_URL from the command line', async () => {
    const { tableName } = await freshTable();
    const { urls } = await freshQueues();
    const sqs = sqsClient();
    await seedMessages(documentClient(), tableName, [
      { id: messageId(1), status: 'scheduled', createdAt: '2026-11-29T11:00:00.000Z' },
    ]);
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: urls.scheduleDeadLetter,
        MessageBody: encodeDispatchPayload({ id: messageId(1), rev: 1 }),
        MessageAttributes: { ERROR_CODE: { DataType: 'String', StringValue: 'AWS.SQS.AccessDenied' } },
      }),
    );
    const env = { ...emulatorEnv(), POSTDATE_SCHEDULE_DLQ_URL: urls.scheduleDeadLetter };
    const args = ['--table', tableName, '--queue-url', urls.send, 'schedule-failures', 'redrive'];

    const result = await postdate('bin', args, env);

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('redrive 1 message to the send queue');
    expect(await drainIds(sqs, urls.send)).toEqual([{ id: messageId(1), rev: 1 }]);
    expect(await visibleCount(sqs, urls.scheduleDeadLetter)).toBe(0);
  }, 60_000);

  it('says in one line that the stack is unreachable, with exit code 3', async () => {
    const result = await postdate('bin', [
      '--local',
      '--dynamodb-endpoint',
      'http://127.0.0.1:9',
      'messages',
      'show',
      messageId(1),
    ]);
    expect(result.code).toBe(3);
    expect(result.stderr.trim()).toBe(
      'postdate: cannot reach DynamoDB at http://127.0.0.1:9 — is `npm start` running? (or pass --table/--queue-url for AWS)',
    );
  }, 60_000);

  // An operator's shell with no region (no AWS_REGION, no profile naming one) is bad usage, with what to set.
  it('says to pass --region when no AWS region is set: bad usage (2), not an unexpected error', async () => {
    const result = await postdate('bin', ['--json', '--table', 'outbox', 'messages', 'show', messageId(1)], {
      AWS_REGION: '',
      AWS_DEFAULT_REGION: '',
      AWS_PROFILE: '',
      AWS_CONFIG_FILE: '/nonexistent/aws-config',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
    });
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({
      error: { type: 'urn:postdate:cli:usage', exit_code: 2 },
    });
    expect(result.stderr.trim()).toBe(
      'postdate: no AWS region: pass --region, set AWS_REGION, or use an AWS_PROFILE that names one',
    );
  }, 60_000);

  it('exits 2 on bad usage', async () => {
    const result = await postdate('bin', ['messages', 'list', '--limit', 'lots']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--limit must be a whole number');
  }, 60_000);

  // docs/cli.md: 2 is bad usage, 3 an unreachable stack. A command given wrong flags says so
  // whether or not the stack answers, not "is `npm start` running?".
  it.each([
    { args: ['dlq', 'redrive'], says: '--ids <id...> or --all' },
    { args: ['dlq', 'redrive', '--all', '--ids', messageId(1)], says: '--ids <id...> or --all' },
    { args: ['dlq', 'redrive', '--ids', 'not an id!'], says: 'not a message id' },
    { args: ['dlq', 'redrive', '--all', '--rate', '0.5'], says: 'from 1 to 500' },
    { args: ['dlq', 'drop', '--ids', 'not an id!'], says: 'not a message id' },
    { args: ['schedule-failures', 'redrive', '--ids', 'not an id!'], says: 'not a message id' },
    { args: ['sending', 'pause', '--kind', ''], says: '--kind is a tags.kind value' },
    { args: ['sending', 'resume', '--kind', ''], says: '--kind is a tags.kind value' },
    { args: ['dlq', 'show', '--peek', '500'], says: '--peek must be a whole number from 0 to 100' },
    {
      args: ['schedule-failures', 'show', '--sample', '500'],
      says: '--sample must be a whole number from 0 to 100',
    },
    {
      args: ['templates', 'show', 'welcome', '--template-version', '0'],
      says: '--template-version must be a whole number of at least 1',
    },
    {
      args: ['webhooks', 'deliveries', 'ep_1', '--tenant', 'acme', '--status', 'bogus'],
      says: '--status must be pending, delivered or failed',
    },
  ])(
    'exits 2 for `$args` before it reaches the stack, with its --json error document',
    async ({ args, says }) => {
      const unreachable = 'http://127.0.0.1:9';
      const endpoints = ['--dynamodb-endpoint', unreachable, '--sqs-endpoint', unreachable];
      const result = await postdate('bin', ['--local', '--json', ...endpoints, ...args]);
      expect({ code: result.code, stderr: result.stderr }).toEqual({
        code: 2,
        stderr: expect.stringContaining(says),
      });
      // docs/cli.md, "JSON output": a failure is one document on stdout: `error`, its type, its exit code.
      expect(JSON.parse(result.stdout)).toEqual({
        error: expect.objectContaining({ type: 'urn:postdate:cli:usage', exit_code: 2 }),
      });
    },
    60_000,
  );
});
