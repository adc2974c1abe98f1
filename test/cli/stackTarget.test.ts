import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { describe, expect, inject, it, vi } from 'vitest';
import { messagesRetry, readState } from '../../cli/messagesCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { messagesDeps, openContext } from '../../cli/postdate.js';
import {
  describeStack,
  openTargetWithStack,
  regionOfStackId,
  targetFromStack,
} from '../../cli/stackTarget.js';
import { apiOf } from '../../cli/target.js';
import { STACK_OUTPUT } from '../../lib/stackOutputs.js';
import { wholeSecondNow } from '../relay/relayParts.js';
import { freshTable } from '../support/awsLocal.js';
import { senderOutcomes } from '../sweeper/waitingMessages.js';

/**
 * `postdate --stack NAME` (DESIGN §6): the names come from the stack's CloudFormation outputs.
 * There is no local CloudFormation to run against, so the client here is the real SDK client whose
 * HTTP layer answers as CloudFormation does (the DescribeStacks query-protocol XML): the SDK's own
 * request building and parsing run; only the network is replaced.
 */

const STACK_ID =
  'arn:aws:cloudformation:eu-west-1:123456789012:stack/Postdate/0c6a9e50-0000-11ef-9a3e-0a1b2c3d4e5f';

const OUTPUTS: Record<string, string> = {
  [STACK_OUTPUT.apiUrl]: 'https://abc123.execute-api.eu-west-1.amazonaws.com/',
  [STACK_OUTPUT.tableName]: 'Postdate-PostdateStorageTable1A2B3C-XYZ',
  [STACK_OUTPUT.sendQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Postdate-Send-1',
  [STACK_OUTPUT.sendDeadLetterQueueUrl]:
    'https://sqs.eu-west-1.amazonaws.com/123456789012/Postdate-SendDlq-1',
  [STACK_OUTPUT.relayFailureQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Postdate-RelayF-1',
  [STACK_OUTPUT.scheduleDeadLetterQueueUrl]:
    'https://sqs.eu-west-1.amazonaws.com/123456789012/Postdate-SchedDlq-1',
  [STACK_OUTPUT.scheduleGroupName]: 'Postdate-schedules-1',
  [STACK_OUTPUT.schedulerRoleArn]: 'arn:aws:iam::123456789012:role/Postdate-SchedulerRole-1',
  [STACK_OUTPUT.smtpSecretArn]: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:smtp-AbCdEf',
  [STACK_OUTPUT.alarmTopicArn]: 'arn:aws:sns:eu-west-1:123456789012:Postdate-Alarms',
};

function describeStacksXml(outputs: Record<string, string>): string {
  const members = Object.entries(outputs)
    .map(
      ([key, value]) =>
        `<member><OutputKey>${key}</OutputKey><OutputValue>${value}</OutputValue><Description>d</Description></member>`,
    )
    .join('');
  return `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">
  <DescribeStacksResult><Stacks><member>
    <StackName>Postdate</StackName><StackId>${STACK_ID}</StackId>
    <CreationTime>2026-11-01T09:00:00.000Z</CreationTime><StackStatus>UPDATE_COMPLETE</StackStatus>
    <Outputs>${members}</Outputs>
  </member></Stacks></DescribeStacksResult>
  <ResponseMetadata><RequestId>5ccc7dcd-744c-11e5-be70-1b08c228efb3</RequestId></ResponseMetadata>
</DescribeStacksResponse>`;
}

const NO_SUCH_STACK = `<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">
  <Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id Nope does not exist</Message></Error>
  <RequestId>a1b2c3d4-0000-0000-0000-000000000000</RequestId>
</ErrorResponse>`;

/** A CloudFormation client whose every request gets this answer; records the request bodies. */
function cannedCloudFormation(status: number, body: string, region = 'eu-west-1') {
  const requests: string[] = [];
  const client = new CloudFormationClient({
    region,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
    requestHandler: {
      async handle(request: { body?: unknown }) {
        requests.push(String(request.body ?? ''));
        const { Readable } = await import('node:stream');
        return {
          response: {
            statusCode: status,
            headers: { 'content-type': 'text/xml' },
            body: Readable.from([Buffer.from(body)]),
          },
        };
      },
    } as never,
  });
  return { client, requests };
}

describe('postdate --stack NAME', () => {
  it('reads the outputs with one DescribeStacks call', async () => {
    const { client, requests } = cannedCloudFormation(200, describeStacksXml(OUTPUTS));
    const stack = await describeStack(client, 'Postdate');
    expect(stack).toEqual({ stackId: STACK_ID, outputs: OUTPUTS });
    expect(requests).toHaveLength(1);
    expect(requests[0]).toContain('Action=DescribeStacks');
    expect(requests[0]).toContain('StackName=Postdate');
  });

  it('maps every output the CLI needs to its flag or variable, and takes the region from the stack id', () => {
    const { options, env } = targetFromStack('Postdate', { stackId: STACK_ID, outputs: OUTPUTS }, {}, {});
    expect(options).toEqual({
      table: OUTPUTS.TableName,
      queueUrl: OUTPUTS.SendQueueUrl,
      dlqUrl: OUTPUTS.SendDeadLetterQueueUrl,
      relayFailuresUrl: OUTPUTS.RelayFailureQueueUrl,
      scheduleDlqUrl: OUTPUTS.ScheduleDeadLetterQueueUrl,
      region: 'eu-west-1',
      stack: undefined,
    });
    expect(env).toEqual({
      POSTDATE_API_URL: OUTPUTS.ApiUrl,
      POSTDATE_SCHEDULE_GROUP: OUTPUTS.ScheduleGroupName,
      POSTDATE_SCHEDULER_ROLE_ARN: OUTPUTS.SchedulerRoleArn,
    });
  });

  it('lets a flag win over an output, and an output over the environment', () => {
    const { options, env } = targetFromStack(
      'Postdate',
      { stackId: STACK_ID, outputs: OUTPUTS },
      { dlqUrl: 'https://sqs/mine', region: 'us-east-2' },
      { POSTDATE_SCHEDULE_GROUP: 'old-group', HOME: '/home/op' },
    );
    expect(options).toMatchObject({
      dlqUrl: 'https://sqs/mine',
      region: 'us-east-2',
      table: OUTPUTS.TableName,
    });
    expect(env).toMatchObject({ POSTDATE_SCHEDULE_GROUP: OUTPUTS.ScheduleGroupName, HOME: '/home/op' });
  });

  it('opens an AWS target with the resource names of the stack', async () => {
    const { client } = cannedCloudFormation(200, describeStacksXml(OUTPUTS));
    const target = await openTargetWithStack({ stack: 'Postdate' }, {}, () => client);
    try {
      expect(target.mode).toBe('aws');
      expect(target.refs).toEqual({
        tableName: OUTPUTS.TableName,
        sendQueue: { url: OUTPUTS.SendQueueUrl },
        deadLetterQueue: { url: OUTPUTS.SendDeadLetterQueueUrl },
        relayFailureQueue: { url: OUTPUTS.RelayFailureQueueUrl },
        scheduleDeadLetterQueue: { url: OUTPUTS.ScheduleDeadLetterQueueUrl },
        scheduleGroup: OUTPUTS.ScheduleGroupName,
        schedulerRoleArn: OUTPUTS.SchedulerRoleArn,
        scheduleDeadLetter: { url: OUTPUTS.ScheduleDeadLetterQueueUrl },
      });
      expect(await target.dynamodb.config.region()).toBe('eu-west-1');
      // The commands that call the API (messages enqueue, attachments upload) find it too.
      expect(apiOf(target, { apiKey: 'pd_x' })).toEqual({ baseUrl: OUTPUTS.ApiUrl, apiKey: 'pd_x' });
    } finally {
      target.dynamodb.destroy();
      target.sqs.destroy();
    }
  });

  it('leaves a name the stack lacks to the flags, and refuses a stack without a table', () => {
    const older = { ...OUTPUTS };
    delete older[STACK_OUTPUT.schedulerRoleArn];
    expect(targetFromStack('Postdate', { stackId: STACK_ID, outputs: older }, {}, {}).env).not.toHaveProperty(
      'POSTDATE_SCHEDULER_ROLE_ARN',
    );
    expect(() => targetFromStack('Other', { stackId: STACK_ID, outputs: { Foo: 'bar' } }, {}, {})).toThrow(
      /stack "Other" has no output TableName/,
    );
  });

  it('says in one line what CloudFormation answered for a stack that does not exist', async () => {
    const { client } = cannedCloudFormation(400, NO_SUCH_STACK);
    await expect(openTargetWithStack({ stack: 'Nope' }, {}, () => client)).rejects.toThrow(
      'could not read stack "Nope": Stack with id Nope does not exist',
    );
  });

  it('refuses --stack together with --local, and an empty name', async () => {
    await expect(openTargetWithStack({ stack: 'Postdate', local: true }, {})).rejects.toThrow(/--local/);
    await expect(openTargetWithStack({ stack: ' ' }, {})).rejects.toThrow(/--stack needs/);
  });

  it('reads the region out of a stack id', () => {
    expect(regionOfStackId(STACK_ID)).toBe('eu-west-1');
    expect(regionOfStackId(undefined)).toBeUndefined();
    expect(regionOfStackId('not-an-arn')).toBeUndefined();
  });
});

/**
 * The settings the CLI decides with (DESIGN §3/§6: the CLI's retry is the API's manual retry; the
 * retention of a cancel or discard; the Message-ID `messages show` prints) are the deployed stack's,
 * read from its output `Settings` with the same DescribeStacks call, never the operator's shell.
 */
describe('postdate --stack NAME: the settings', () => {
  const SETTINGS = {
    POSTDATE_MAX_ATTEMPTS: '3',
    POSTDATE_RETENTION_DAYS: '7',
    POSTDATE_MESSAGE_ID_DOMAIN: 'mail.acme.example',
    POSTDATE_SWEEP_GRACE_SECONDS: '120',
    POSTDATE_DIRECT_DELAY_MAX_SECONDS: '600',
    POSTDATE_SCHEDULE_LEAD_SECONDS: '60',
    POSTDATE_WEBHOOK_RETRY_HOURS: '12',
  };
  const SHELL = { POSTDATE_MAX_ATTEMPTS: '8', POSTDATE_RETENTION_DAYS: '30' };
  const withSettings = { ...OUTPUTS, [STACK_OUTPUT.settings]: JSON.stringify(SETTINGS) };

  it("come from the stack's output, over the shell's environment", async () => {
    const { client, requests } = cannedCloudFormation(200, describeStacksXml(withSettings));
    const context = await openContext({ stack: 'Postdate' }, memoryOutput(), SHELL, () => client);
    try {
      expect(requests).toHaveLength(1);
      expect(context.config).toMatchObject({
        maxAttempts: 3,
        retentionDays: 7,
        messageIdDomain: 'mail.acme.example',
        sweepGraceSeconds: 120,
        directDelayMaxSeconds: 600,
        scheduleLeadSeconds: 60,
        webhookRetryHours: 12,
      });
      expect(messagesDeps(context)).toMatchObject({
        maxAttempts: 3,
        retentionDays: 7,
        messageIdDomain: 'mail.acme.example',
      });
    } finally {
      context.target.dynamodb.destroy();
      context.target.sqs.destroy();
    }
  });

  it('names no Message-ID domain for a deployed table opened without --stack unless the shell sets it (decision 0282)', async () => {
    for (const [shell, domain] of [
      [SHELL, undefined],
      [{ ...SHELL, POSTDATE_MESSAGE_ID_DOMAIN: 'mail.acme.example' }, 'mail.acme.example'],
    ] as const) {
      const context = await openContext(
        { table: 'postdate-outbox', region: 'eu-west-1' },
        memoryOutput(),
        shell,
      );
      try {
        expect(context.target.mode).toBe('aws');
        expect(messagesDeps(context).messageIdDomain).toBe(domain);
      } finally {
        context.target.dynamodb.destroy();
        context.target.sqs.destroy();
      }
    }
  });

  it("a retry through --stack gives the message the stack's attempts, as the API's retry does", async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
    try {
      const { tableName } = await freshTable('stack-retry');
      const dead = await senderOutcomes(tableName, wholeSecondNow())('dead');
      const { client } = cannedCloudFormation(
        200,
        describeStacksXml({ ...withSettings, [STACK_OUTPUT.tableName]: tableName }),
      );
      const env = { ...SHELL, AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint') };
      const context = await openContext({ stack: 'Postdate' }, memoryOutput(), env, () => client);
      try {
        const deps = messagesDeps(context);
        await messagesRetry(deps, [dead.id], memoryOutput());
        expect(await readState(deps, dead.id)).toMatchObject({
          status: 'scheduled',
          attempts: 1,
          attempt_limit: 1 + 3,
        });
      } finally {
        context.target.dynamodb.destroy();
        context.target.sqs.destroy();
      }
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('come from the environment without --stack', async () => {
    const context = await openContext({ table: 'postdate-outbox' }, memoryOutput(), {
      POSTDATE_MAX_ATTEMPTS: '4',
      POSTDATE_MESSAGE_ID_DOMAIN: 'shell.example',
    });
    try {
      expect(context.config).toMatchObject({ maxAttempts: 4, messageIdDomain: 'shell.example' });
    } finally {
      context.target.dynamodb.destroy();
      context.target.sqs.destroy();
    }
  });

  it('of a stack deployed before the output: the environment, with a warning that says so', async () => {
    const { client } = cannedCloudFormation(200, describeStacksXml(OUTPUTS));
    const out = memoryOutput();
    const context = await openContext({ stack: 'Postdate' }, out, SHELL, () => client);
    try {
      expect(context.config.maxAttempts).toBe(8);
      expect(out.warnings.join('\n')).toMatch(/no output Settings.*redeploy/s);
    } finally {
      context.target.dynamodb.destroy();
      context.target.sqs.destroy();
    }
  });
});
