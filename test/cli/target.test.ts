import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { isNetworkError, UsageError } from '../../cli/cliErrors.js';
import { messagesDeps } from '../../cli/postdate.js';
import { apiOf, LOCAL_NAMES, openTarget, queueUrlOf, resolveMode, resolveRefs } from '../../cli/target.js';
import { loadConfig } from '../../lambdas/core/config.js';
import { LOCAL_PORT_DEFAULTS } from '../../local/localEnv.js';
import { LOCAL_RESOURCES } from '../../local/localStack.js';
import { readStackFile, removeStackFile, type StackFile, writeStackFile } from '../../local/stackFile.js';
import { freshQueues, sqsClient } from '../support/awsLocal.js';

/** A running stack's file (this process's), its parts on consecutive ports from `firstPort`. */
function stackFile(firstPort: number, extra: Partial<StackFile> = {}): StackFile {
  const url = (offset: number) => `http://127.0.0.1:${firstPort + offset}`;
  return {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    apiUrl: url(0),
    mailViewerUrl: null,
    dynamodbEndpoint: url(1),
    sqsEndpoint: url(2),
    schedulerEndpoint: url(3),
    smtpPort: null,
    ...extra,
  };
}

describe('which stack the CLI talks to', () => {
  it('uses the local stack by default, with the names and ports `npm start` uses', () => {
    expect(resolveMode({}, {})).toBe('local');
    expect(LOCAL_NAMES).toMatchObject({
      tableName: LOCAL_RESOURCES.tableName,
      queuePrefix: LOCAL_RESOURCES.queuePrefix,
      scheduleGroup: LOCAL_RESOURCES.scheduleGroup,
      schedulerRoleArn: LOCAL_RESOURCES.schedulerRoleArn,
    });
    const target = openTarget({}, {}, () => undefined);
    expect(target.endpoints).toEqual({
      dynamodb: `http://127.0.0.1:${LOCAL_PORT_DEFAULTS.dynamodb}`,
      sqs: `http://127.0.0.1:${LOCAL_PORT_DEFAULTS.sqs}`,
      scheduler: `http://127.0.0.1:${LOCAL_PORT_DEFAULTS.scheduler}`,
    });
    expect(target.refs.deadLetterQueue).toEqual({ name: 'postdate-send-dlq' });
  });

  it('finds a stack `npm start` runs on other ports from the file it writes, unless a variable names the port', () => {
    const running: StackFile = {
      pid: 1,
      startedAt: '2026-12-01T12:00:00.000Z',
      apiUrl: 'http://127.0.0.1:41001',
      mailViewerUrl: null,
      dynamodbEndpoint: 'http://127.0.0.1:41002',
      sqsEndpoint: 'http://127.0.0.1:41003',
      schedulerEndpoint: 'http://127.0.0.1:41004',
      smtpPort: 41005,
    };
    expect(openTarget({}, {}, () => running).endpoints).toEqual({
      dynamodb: 'http://127.0.0.1:41002',
      sqs: 'http://127.0.0.1:41003',
      scheduler: 'http://127.0.0.1:41004',
    });
    expect(openTarget({}, { POSTDATE_SQS_PORT: '9999' }, () => running).endpoints.sqs).toBe(
      'http://127.0.0.1:9999',
    );
    // Never for AWS.
    const aws = openTarget({ table: 'prod-outbox' }, { AWS_REGION: 'eu-west-1' }, () => running);
    expect(aws.endpoints.dynamodb).not.toContain('41002');
  });

  it('finds the API of the stack `npm start` runs in its file, as the commands that call the API need it', () => {
    const running: StackFile = {
      pid: 1,
      startedAt: '2026-12-03T12:00:00.000Z',
      apiUrl: 'http://127.0.0.1:41001',
      mailViewerUrl: null,
      dynamodbEndpoint: 'http://127.0.0.1:41002',
      sqsEndpoint: 'http://127.0.0.1:41003',
      schedulerEndpoint: 'http://127.0.0.1:41004',
      smtpPort: null,
    };
    const local = openTarget({}, { POSTDATE_API_KEY: 'pd_local' }, () => running);
    expect(apiOf(local, {})).toEqual({ baseUrl: 'http://127.0.0.1:41001', apiKey: 'pd_local' });
    // A flag, then the variable, win over the file.
    expect(apiOf(local, { apiUrl: 'http://127.0.0.1:9', apiKey: 'pd_flag' })).toEqual({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'pd_flag',
    });
    const named = openTarget(
      {},
      { POSTDATE_API_URL: 'http://127.0.0.1:8', POSTDATE_API_KEY: 'k' },
      () => running,
    );
    expect(apiOf(named, {}).baseUrl).toBe('http://127.0.0.1:8');
    // AWS without --stack and without the variable: say what to pass.
    const aws = openTarget({ table: 'prod-outbox' }, { AWS_REGION: 'eu-west-1', POSTDATE_API_KEY: 'k' });
    expect(() => apiOf(aws, {})).toThrow(UsageError);
    expect(() => apiOf(aws, {})).toThrow(/--api-url.*--stack/);
    for (const target of [local, named, aws]) {
      target.dynamodb.destroy();
      target.sqs.destroy();
    }
  });

  it("names the Message-ID with the domain of the stack `npm start` runs, not the shell's (runbook procedure 2)", () => {
    // DESIGN §7: the Message-ID is `<id@POSTDATE_MESSAGE_ID_DOMAIN>` as the senders wrote it. A shell
    // without the stack's setting, or with another, would name one the relay never saw, and a search
    // that finds nothing leads to a retry: a second copy (decision 0282).
    const running = stackFile(41001, { messageIdDomain: 'mail.example.com' });
    const now = () => new Date('2026-12-06T12:00:00.000Z');
    for (const env of [{}, { POSTDATE_MESSAGE_ID_DOMAIN: 'other.example.org' }]) {
      const target = openTarget({}, env, () => running);
      const deps = messagesDeps({ target, config: loadConfig(env, 'local'), now });
      expect(deps.messageIdDomain, JSON.stringify(env)).toBe('mail.example.com');
      target.dynamodb.destroy();
      target.sqs.destroy();
    }
    // A stack file written before it held the domain: the shell's setting, as before.
    const older = openTarget({}, {}, () => stackFile(41001));
    expect(messagesDeps({ target: older, config: loadConfig({}, 'local'), now }).messageIdDomain).toBe(
      loadConfig({}, 'local').messageIdDomain,
    );
    older.dynamodb.destroy();
    older.sqs.destroy();
  });

  it('reads a stack file only while its process runs', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'postdate-stackfile-'));
    const file = stackFile(1, { relayNames: ['primary', 'backup'] });
    writeStackFile(file, cwd);
    expect(readStackFile(cwd)).toEqual(file);
    expect(readStackFile(cwd, () => false)).toBeUndefined();
    removeStackFile(process.pid + 1, cwd); // someone else's: left alone
    expect(readStackFile(cwd)).toEqual(file);
    removeStackFile(process.pid, cwd);
    expect(readStackFile(cwd)).toBeUndefined();
  });

  it('finds the stack file of the checkout from any directory inside it, as npx runs there', () => {
    // `npx postdate` runs in the shell's directory (`npm start` writes the file at the checkout's
    // root): from lambdas/, say, the CLI must not fall back to the default ports, which may be
    // another stack's (docs/local-stack.md: a port 0 stack is what one starts beside another).
    const root = mkdtempSync(join(tmpdir(), 'postdate-stackfile-'));
    const deeper = join(root, 'lambdas', 'core');
    mkdirSync(deeper, { recursive: true });
    const file = stackFile(41001);
    writeStackFile(file, root);
    expect(readStackFile(deeper)).toEqual(file);
    expect(readStackFile(join(root, 'lambdas'))).toEqual(file);
  });

  it('switches to AWS when a resource name is given, and then needs every name it uses', () => {
    expect(resolveMode({ table: 'prod-outbox' }, {})).toBe('aws');
    expect(resolveMode({}, { POSTDATE_TABLE_NAME: 'prod-outbox' })).toBe('aws');
    expect(resolveMode({ local: true }, { POSTDATE_TABLE_NAME: 'prod-outbox' })).toBe('local');
    const refs = resolveRefs('aws', { dlqUrl: 'https://sqs/dlq' }, { POSTDATE_TABLE_NAME: 'prod-outbox' });
    expect(refs).toMatchObject({ tableName: 'prod-outbox', deadLetterQueue: { url: 'https://sqs/dlq' } });
    expect(refs.sendQueue).toBeUndefined();
    expect(() => resolveRefs('aws', { dlqUrl: 'x' }, {})).toThrow(/--table/);
  });

  it("finds the schedules' DLQ by flag, by POSTDATE_SCHEDULE_DLQ_URL, or by the local name", async () => {
    expect(resolveMode({ scheduleDlqUrl: 'https://sqs/schedule-dlq' }, {})).toBe('aws');
    const byFlag = resolveRefs('aws', { scheduleDlqUrl: 'https://sqs/a' }, { POSTDATE_TABLE_NAME: 't' });
    expect(byFlag.scheduleDeadLetterQueue).toEqual({ url: 'https://sqs/a' });
    // relay-failures redrive gives new schedules this queue when the relay's ARN is not exported.
    expect(byFlag.scheduleDeadLetter).toEqual({ url: 'https://sqs/a' });
    const byEnv = resolveRefs(
      'aws',
      {},
      {
        POSTDATE_TABLE_NAME: 't',
        POSTDATE_SCHEDULE_DLQ_URL: 'https://sqs/b',
        POSTDATE_SCHEDULE_DLQ_ARN: 'arn:x',
      },
    );
    expect(byEnv).toMatchObject({
      scheduleDeadLetterQueue: { url: 'https://sqs/b' },
      scheduleDeadLetter: { arn: 'arn:x' },
    });
    expect(resolveRefs('local', {}, {}).scheduleDeadLetterQueue).toEqual({ name: 'postdate-schedule-dlq' });
    expect(resolveRefs('aws', {}, { POSTDATE_TABLE_NAME: 't' }).scheduleDeadLetterQueue).toBeUndefined();
    // The local stack's event producer has its failure queue too (decision 0283).
    expect(resolveRefs('local', {}, {}).eventFailureQueue).toEqual({ name: 'postdate-event-failures' });
    expect(resolveRefs('aws', {}, { POSTDATE_TABLE_NAME: 't' }).eventFailureQueue).toBeUndefined();
    await expect(queueUrlOf(sqsClient(), undefined, 'schedule dead-letter queue')).rejects.toThrow(
      /--schedule-dlq-url or set POSTDATE_SCHEDULE_DLQ_URL \(stack output ScheduleDeadLetterQueueUrl\)/,
    );
  });

  it('takes --stack for a deployed stack in AWS (its names come from its outputs: stackTarget.test.ts)', () => {
    expect(resolveMode({ stack: 'Postdate' }, {})).toBe('aws');
  });

  it('finds a local queue by name and says which flag is missing in AWS mode', async () => {
    const { urls } = await freshQueues();
    const name = urls.sendDeadLetter.slice(urls.sendDeadLetter.lastIndexOf('/') + 1);
    expect(await queueUrlOf(sqsClient(), { name }, 'dead-letter queue')).toBe(urls.sendDeadLetter);
    await expect(queueUrlOf(sqsClient(), undefined, 'dead-letter queue')).rejects.toThrow('pass --dlq-url');
  });

  it('turns "nothing answers" into one line naming the service, the endpoint and what to do', async () => {
    const target = openTarget({ local: true, dynamodbEndpoint: 'http://127.0.0.1:9' }, {});
    const failure = target.dynamodb.send(new ListTablesCommand({}));
    await expect(failure).rejects.toMatchObject({
      name: 'StackUnreachableError',
      exitCode: 3,
      message:
        'cannot reach DynamoDB at http://127.0.0.1:9 — is `npm start` running? (or pass --table/--queue-url for AWS)',
    });
  });

  it('tells network failures from answers', () => {
    expect(isNetworkError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(
      isNetworkError(new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })])),
    ).toBe(true);
    expect(
      isNetworkError(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: 'ENOTFOUND' }) })),
    ).toBe(true);
    expect(isNetworkError(Object.assign(new Error('no'), { name: 'ConditionalCheckFailedException' }))).toBe(
      false,
    );
  });
});
