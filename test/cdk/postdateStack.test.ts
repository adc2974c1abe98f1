import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Template } from 'aws-cdk-lib/assertions';
import { Capture, Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { RELAY_STREAM_FILTER, TTL_ATTRIBUTE } from '../../lambdas/store/tableLayout.js';
import { API_ROUTES, AUTHORIZATION_IDENTITY_SOURCE } from '../../lib/constructs/Api.js';
import { RELAY_STREAM } from '../../lib/constructs/Dispatch.js';
import { PROJECT_ROOT } from '../../lib/constructs/functionEsbuild.js';
import { RESOURCE_ENV } from '../../lib/functionEnvironment.js';
import type { PostdateStack } from '../../lib/PostdateStack.js';
import {
  QUEUE,
  SENDER_TIMEOUT_SECONDS,
  sendQueueMaxReceiveCount,
  sendQueueVisibilitySeconds,
} from '../../lib/queueLayout.js';
import { outboxTableInput } from '../../local/createResources.js';
import {
  logicalIdOf,
  only,
  type Resource,
  type Statement,
  statementsOfRole,
  synthesizePostdate,
  TEST_PROPS,
} from './support/synthesize.js';

let template: Template;
let stack: PostdateStack;
/** Logical ids read from the constructs, so no generated id is ever typed into a test. */
const ids = {} as Record<
  | 'table'
  | 'sendQueue'
  | 'sendDlq'
  | 'relayFailures'
  | 'scheduleDlq'
  | 'api'
  | 'authorizer'
  | 'relay'
  | 'sender'
  | 'sweeper'
  | 'events'
  | 'webhooks'
  | 'secret'
  | 'topic',
  string
>;

beforeAll(() => {
  ({ template, stack } = synthesizePostdate());
  const postdate = stack.postdate;
  Object.assign(ids, {
    table: logicalIdOf(postdate.table),
    sendQueue: logicalIdOf(postdate.sendQueue),
    sendDlq: logicalIdOf(postdate.sendDeadLetterQueue),
    relayFailures: logicalIdOf(postdate.relayFailureQueue),
    scheduleDlq: logicalIdOf(postdate.scheduleDeadLetterQueue),
    api: logicalIdOf(postdate.functions.api),
    authorizer: logicalIdOf(postdate.functions.authorizer),
    relay: logicalIdOf(postdate.functions.relay),
    sender: logicalIdOf(postdate.functions.sender),
    sweeper: logicalIdOf(postdate.functions.sweeper),
    events: logicalIdOf(postdate.functions.events),
    webhooks: logicalIdOf(postdate.functions.webhooks),
    secret: logicalIdOf(postdate.smtpSecret),
    topic: logicalIdOf(postdate.alarmTopic),
  });
});

const arnOf = (logicalId: string) => ({ 'Fn::GetAtt': [logicalId, 'Arn'] });
const fn = (name: keyof typeof ids): Resource => template.toJSON().Resources[ids[name]] as Resource;
const roleOf = (name: 'api' | 'authorizer' | 'relay' | 'sender' | 'sweeper'): string => {
  const role = fn(name).Properties.Role as { 'Fn::GetAtt': [string, string] };
  return role['Fn::GetAtt'][0];
};
const statements = (name: 'api' | 'authorizer' | 'relay' | 'sender' | 'sweeper'): Statement[] =>
  statementsOfRole(template, roleOf(name));
const actionsOf = (name: 'api' | 'authorizer' | 'relay' | 'sender' | 'sweeper'): string[] =>
  statements(name).flatMap((statement) => statement.Action);
const FUNCTION_NAMES = ['api', 'authorizer', 'relay', 'sender', 'sweeper'] as const;

describe('storage: the outbox table', () => {
  it('has the keys, attributes and indexes of the shared layout, exactly as the local stack creates them', () => {
    const local = outboxTableInput('local');
    const table = template.toJSON().Resources[ids.table] as Resource;
    const properties = table.Properties as Record<string, unknown>;
    expect(properties.KeySchema).toEqual(local.KeySchema);
    expect(sortBy(properties.AttributeDefinitions as { AttributeName: string }[], 'AttributeName')).toEqual(
      sortBy(local.AttributeDefinitions as { AttributeName: string }[], 'AttributeName'),
    );
    expect(sortBy(properties.GlobalSecondaryIndexes as { IndexName: string }[], 'IndexName')).toEqual(
      sortBy(local.GlobalSecondaryIndexes as { IndexName: string }[], 'IndexName'),
    );
    expect(properties.StreamSpecification).toEqual({
      StreamViewType: local.StreamSpecification?.StreamViewType,
    });
  });

  it('is on-demand, with point-in-time recovery, TTL on expires_at and the NEW_AND_OLD_IMAGES stream', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
    });
  });

  it('survives the stack: retained and deletion-protected by default', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({ DeletionProtectionEnabled: true }),
    });
  });

  it('keeps on `cdk destroy` only what docs/deploy.md\'s "Tearing down" says is kept', async () => {
    const deploy = await readFile(join(PROJECT_ROOT, 'docs/deploy.md'), 'utf8');
    const teardown = deploy.slice(deploy.indexOf('## Tearing down')).split('\n## ')[0] ?? '';
    const kept = /\*\*(.+?)\s+(?:is|are)\s+kept\*\*/s.exec(teardown)?.[1]?.replaceAll('\n', ' ') ?? '';
    const NAMED: Record<string, string> = {
      'AWS::DynamoDB::Table': 'table',
      'AWS::SecretsManager::Secret': 'SMTP secret',
      'AWS::S3::Bucket': "attachments' bucket",
    };
    const retained = Object.values(template.toJSON().Resources as Record<string, Resource>)
      .filter((resource) => resource.DeletionPolicy === 'Retain')
      .map((resource) => resource.Type);
    expect(retained.length).toBeGreaterThan(0);
    for (const type of retained) expect(kept).toContain(NAMED[type] ?? type);
  });
});

describe('dispatch: queues', () => {
  const maxAttempts = TEST_PROPS.postdate.maxAttempts ?? 8;
  it('redrives a copy to the DLQ only as a backstop, well above maxAttempts (the sender moves dead copies itself)', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: {
        deadLetterTargetArn: arnOf(ids.sendDlq),
        maxReceiveCount: sendQueueMaxReceiveCount(maxAttempts),
      },
    });
    expect(sendQueueMaxReceiveCount(maxAttempts)).toBeGreaterThanOrEqual(2 * maxAttempts);
    const send = template.toJSON().Resources[ids.sendQueue] as Resource;
    expect(send.Properties.RedrivePolicy).toBeDefined();
  });

  it('lets the sender put copies of dead messages on the DLQ itself', () => {
    const statements = JSON.stringify(template.findResources('AWS::IAM::Policy'));
    expect(statements).toContain('sqs:SendMessage');
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ POSTDATE_SEND_DLQ_URL: { Ref: ids.sendDlq } }) },
    });
  });

  it('keeps a copy invisible at least six times as long as the deployed sender may run', () => {
    const sendQueue = template.toJSON().Resources[ids.sendQueue] as Resource;
    const visibility = sendQueue.Properties.VisibilityTimeout as number;
    const senderTimeout = fn('sender').Properties.Timeout as number;
    expect(senderTimeout).toBe(SENDER_TIMEOUT_SECONDS);
    expect(visibility).toBe(sendQueueVisibilitySeconds(SENDER_TIMEOUT_SECONDS));
    expect(visibility).toBeGreaterThanOrEqual(6 * senderTimeout);
  });

  it('retains dead copies longer than live ones (a DLQ keeps the original enqueue time)', () => {
    const retention = (id: string) =>
      (template.toJSON().Resources[id] as Resource).Properties.MessageRetentionPeriod as number;
    expect(retention(ids.sendQueue)).toBe(QUEUE.send.retentionDays * 86_400);
    expect(retention(ids.sendDlq)).toBe(QUEUE.sendDeadLetter.retentionDays * 86_400);
    expect(retention(ids.sendDlq)).toBeGreaterThan(retention(ids.sendQueue));
  });

  it('encrypts every queue with SQS-managed keys and denies every request not made over TLS', () => {
    const queueIds = Object.keys(template.findResources('AWS::SQS::Queue'));
    // The four of dispatch and the three of webhooks (queue, DLQ, the event producer's failures).
    expect(queueIds).toEqual(
      expect.arrayContaining([ids.sendQueue, ids.sendDlq, ids.relayFailures, ids.scheduleDlq]),
    );
    expect(queueIds).toHaveLength(7);
    for (const queueId of queueIds) {
      expect((template.toJSON().Resources[queueId] as Resource).Properties.SqsManagedSseEnabled).toBe(true);
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: queueId }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: 'Deny',
              Principal: { AWS: '*' },
              Action: 'sqs:*',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            }),
          ]),
        },
      });
    }
  });
});

describe('dispatch: the relay', () => {
  it('reads only message state records: the filter is RELAY_STREAM_FILTER', () => {
    const pattern = new Capture();
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: ids.relay },
      EventSourceArn: { 'Fn::GetAtt': [ids.table, 'StreamArn'] },
      FilterCriteria: { Filters: [{ Pattern: pattern }] },
    });
    expect(JSON.parse(pattern.asString())).toEqual(RELAY_STREAM_FILTER);
  });

  it('bisects failing batches, bounds retries and record age, reports item failures and parks the rest', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: ids.relay },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: RELAY_STREAM.batchSize,
      ParallelizationFactor: RELAY_STREAM.parallelizationFactor,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: RELAY_STREAM.retryAttempts,
      MaximumRecordAgeInSeconds: RELAY_STREAM.maxRecordAgeSeconds,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      DestinationConfig: { OnFailure: { Destination: arnOf(ids.relayFailures) } },
    });
  });

  it('gets the names of the queue, schedule group, scheduler role and schedule DLQ', () => {
    const environment = (fn('relay').Properties.Environment as { Variables: Record<string, unknown> })
      .Variables;
    const groupName = only(template.findResources('AWS::Scheduler::ScheduleGroup'))[1].Properties.Name;
    expect(environment).toMatchObject({
      [RESOURCE_ENV.tableName]: { Ref: ids.table },
      [RESOURCE_ENV.sendQueueUrl]: { Ref: ids.sendQueue },
      [RESOURCE_ENV.sendQueueArn]: arnOf(ids.sendQueue),
      [RESOURCE_ENV.scheduleGroup]: groupName,
      [RESOURCE_ENV.scheduleDeadLetterArn]: arnOf(ids.scheduleDlq),
    });
    expect(environment[RESOURCE_ENV.schedulerRoleArn]).toEqual(arnOf(schedulerRoleId()));
  });

  it('may create and delete only pd-* schedules of its group, and pass the scheduler role only to Scheduler', () => {
    const groupName = only(template.findResources('AWS::Scheduler::ScheduleGroup'))[1].Properties.Name;
    const relay = statements('relay');
    const scheduling = relay.filter((s) => s.Action.some((action) => action.startsWith('scheduler:')));
    expect(scheduling).toHaveLength(1);
    expect(scheduling[0]?.Action.sort()).toEqual(['scheduler:CreateSchedule', 'scheduler:DeleteSchedule']);
    expect(JSON.stringify(scheduling[0]?.Resource)).toContain(`:schedule/${groupName}/pd-*`);
    const passRole = relay.filter((s) => s.Action.includes('iam:PassRole'));
    expect(passRole).toEqual([
      expect.objectContaining({
        Resource: [arnOf(schedulerRoleId())],
        Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    ]);
  });

  it('never writes the table and may send only to the send queue', () => {
    const actions = actionsOf('relay');
    expect(actions.filter((a) => /^dynamodb:(Put|Update|Delete|BatchWrite|TransactWrite)/.test(a))).toEqual(
      [],
    );
    const sends = statements('relay').filter((s) => s.Action.includes('sqs:SendMessage'));
    const targets = sends.flatMap((s) => s.Resource);
    // The event source's own grant sends stream failures to the relay failure queue.
    expect(targets).toEqual(expect.arrayContaining([arnOf(ids.sendQueue)]));
    expect(targets.every((t) => [ids.sendQueue, ids.relayFailures].some((id) => isArnOf(t, id)))).toBe(true);
  });
});

describe('dispatch: EventBridge Scheduler', () => {
  it('has a schedule group', () => {
    only(template.findResources('AWS::Scheduler::ScheduleGroup'));
  });

  it('lets Scheduler assume its role only for this account and this schedule group', () => {
    const group = only(template.findResources('AWS::Scheduler::ScheduleGroup'))[0];
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          {
            Effect: 'Allow',
            Action: 'sts:AssumeRole',
            Principal: { Service: 'scheduler.amazonaws.com' },
            Condition: {
              StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
              ArnEquals: { 'aws:SourceArn': arnOf(group) },
            },
          },
        ],
      },
    });
  });

  it('gives that role nothing but sending to the send queue and the schedule DLQ', () => {
    const granted = statementsOfRole(template, schedulerRoleId());
    // EventBridge Scheduler only sends (DESIGN §6): not the queues' attributes or URLs.
    expect(new Set(granted.flatMap((s) => s.Action))).toEqual(new Set(['sqs:SendMessage']));
    expect(granted.flatMap((s) => s.Resource)).toEqual(
      expect.arrayContaining([arnOf(ids.sendQueue), arnOf(ids.scheduleDlq)]),
    );
    expect(granted.flatMap((s) => s.Resource)).toHaveLength(2);
  });
});

describe('dispatch: the sweeper', () => {
  it('runs every five minutes', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(5 minutes)',
      Targets: [Match.objectLike({ Arn: arnOf(ids.sweeper) })],
    });
  });

  it('may query only the due index, read and stamp only message items, read and renew only the sending gate, keep only its cursors item, send only to the send queue, and tidy only the DLQ', () => {
    const dynamo = statements('sweeper').filter((s) => s.Action.some((a) => a.startsWith('dynamodb:')));
    expect(dynamo).toHaveLength(4);
    const query = dynamo.find((s) => s.Action.includes('dynamodb:Query'));
    expect(query?.Action).toEqual(['dynamodb:Query']);
    expect(JSON.stringify(query?.Resource)).toContain('/index/due');
    expect(JSON.stringify(query?.Resource)).not.toContain('*');
    // Its re-dispatch stamp (issue 15 §4): message state items only, never an API key, never a delete.
    const items = dynamo.find((s) => s.Sid === 'ReadAndStampMessageStates');
    expect(items?.Action).toEqual(['dynamodb:BatchGetItem', 'dynamodb:UpdateItem']);
    expect(JSON.stringify(items?.Resource)).not.toContain('index');
    expect(items?.Condition).toEqual({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['MSG#*'] } });
    // Every sweep reads the sending gate first and may replace a lost probe token (DESIGN §6).
    const gate = dynamo.find((s) => s.Sid === 'ReadAndRenewSendingGate');
    expect(gate?.Action).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    expect(gate?.Condition).toEqual({
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['GATE#sending'] },
    });
    // Where its runs stopped, for its cold starts (decision 0199): its own item, read and replaced.
    const cursors = dynamo.find((s) => s.Sid === 'KeepSweepCursors');
    expect(cursors?.Action).toEqual(['dynamodb:GetItem', 'dynamodb:PutItem']);
    expect(cursors?.Condition).toEqual({
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['SWEEPER#due'] },
    });
    const sqsStatements = statements('sweeper').filter((s) => s.Action.some((a) => a.startsWith('sqs:')));
    const sends = sqsStatements.filter((s) => s.Sid !== 'TendDeadLetters');
    expect(sends.flatMap((s) => s.Resource)).toEqual([arnOf(ids.sendQueue)]);
    // The DLQ (decisions 0141, 0148): count, receive, delete stale copies, release, and send a fresh
    // copy of a waiting dead message's old one (or one it lacks); on the DLQ only.
    const tidy = sqsStatements.find((s) => s.Sid === 'TendDeadLetters');
    expect(tidy?.Action).toEqual([
      'sqs:GetQueueAttributes',
      'sqs:ReceiveMessage',
      'sqs:DeleteMessage',
      'sqs:ChangeMessageVisibility',
      'sqs:SendMessage',
    ]);
    expect(tidy?.Resource).toEqual([arnOf(ids.sendDlq)]);
  });
});

describe('sending: the sender', () => {
  it('consumes the send queue with partial batch failures and the configured maximum concurrency', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: ids.sender },
      EventSourceArn: arnOf(ids.sendQueue),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: TEST_PROPS.postdate.senderMaxConcurrency },
      BatchSize: 10,
    });
  });

  it('may change visibility (backoff), put early copies back, and read and write the table', () => {
    const actions = actionsOf('sender');
    expect(actions).toEqual(
      expect.arrayContaining([
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
        'sqs:ReceiveMessage',
        'sqs:SendMessage',
        'dynamodb:GetItem',
        'dynamodb:UpdateItem',
      ]),
    );
  });

  it('is the only function that may read the SMTP secret, which holds {username, password}', () => {
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: {
        SecretStringTemplate: JSON.stringify({ username: 'replace-me' }),
        GenerateStringKey: 'password',
      },
    });
    for (const name of FUNCTION_NAMES) {
      const reads = statements(name).filter((s) => s.Action.some((a) => a.startsWith('secretsmanager:')));
      if (name === 'sender') {
        expect(reads.flatMap((s) => s.Resource)).toEqual([{ Ref: ids.secret }]);
        expect(reads.flatMap((s) => s.Action)).toContain('secretsmanager:GetSecretValue');
      } else {
        expect(reads).toEqual([]);
      }
    }
    expect(
      (fn('sender').Properties.Environment as { Variables: Record<string, unknown> }).Variables,
    ).toMatchObject({
      [RESOURCE_ENV.smtpSecretArn]: { Ref: ids.secret },
    });
  });
});

describe('every function', () => {
  it('runs nodejs22.x on arm64, with its own log group that has a retention', () => {
    for (const name of FUNCTION_NAMES) {
      const properties = fn(name).Properties as Record<string, unknown>;
      expect(properties.Runtime).toBe('nodejs22.x');
      expect(properties.Architectures).toEqual(['arm64']);
      const logGroup = (properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
      const group = template.toJSON().Resources[logGroup] as Resource;
      expect(group.Type).toBe('AWS::Logs::LogGroup');
      expect(group.Properties.RetentionInDays).toBe(30);
    }
    expect(Object.keys(template.findResources('AWS::Lambda::Function'))).toHaveLength(7);
  });

  it('gets the DESIGN §8 configuration from the props, and no SMTP password', () => {
    for (const name of FUNCTION_NAMES) {
      const variables = (fn(name).Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(variables).toMatchObject({
        SMTP_HOST: 'smtp.example.net',
        SMTP_PORT: '587',
        SMTP_REQUIRE_TLS: 'true',
        POSTDATE_DEFAULT_FROM: 'Ops <ops@example.com>',
        POSTDATE_ALLOWED_FROM: 'ops@example.com,*@mail.example.com',
        POSTDATE_MESSAGE_ID_DOMAIN: 'example.com',
        POSTDATE_MAX_ATTEMPTS: '5',
        POSTDATE_MAX_SEND_RATE: '12',
        POSTDATE_LEASE_SECONDS: '300',
        POSTDATE_TABLE_NAME: { Ref: ids.table },
      });
      expect(Object.keys(variables)).not.toContain('SMTP_PASS');
      expect(Object.keys(variables)).not.toContain('SMTP_USER');
    }
  });

  it("sets every resource variable its handler's code requires (requireResource calls in lambdas/{name}/)", async () => {
    for (const name of FUNCTION_NAMES) {
      const variables = (fn(name).Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      const required = await requiredResourceVariables(name);
      for (const variable of required)
        expect(variables, `${name} needs ${variable}`).toHaveProperty(variable);
    }
    // The scan sees something: the relay requires five resources by name.
    expect(await requiredResourceVariables('relay')).toHaveLength(5);
  });

  it('has its own role, no managed policies, and logs only to its own log group', () => {
    const roles = new Set(FUNCTION_NAMES.map(roleOf));
    expect(roles.size).toBe(5);
    for (const name of FUNCTION_NAMES) {
      const role = template.toJSON().Resources[roleOf(name)] as Resource;
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      const logGroup = (fn(name).Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
      const logs = statements(name).filter((s) => s.Action.some((a) => a.startsWith('logs:')));
      expect(logs.flatMap((s) => s.Resource)).toEqual([arnOf(logGroup)]);
    }
  });

  it('the authorizer may only read items of the base table', () => {
    const dynamo = statements('authorizer').filter((s) => s.Action.some((a) => a.startsWith('dynamodb:')));
    expect(dynamo).toEqual([
      expect.objectContaining({ Action: ['dynamodb:GetItem'], Resource: [arnOf(ids.table)] }),
    ]);
  });

  it('the API reads and writes the table, only sends to the webhook queue and touches no secret', () => {
    const actions = actionsOf('api');
    expect(actions).toEqual(
      expect.arrayContaining(['dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:PutItem']),
    );
    // Test events and manual retries of webhook deliveries (DESIGN §3) go on the webhook queue.
    expect(actions.filter((a) => a.startsWith('sqs:'))).toEqual(expect.arrayContaining(['sqs:SendMessage']));
    expect(
      actions.filter(
        (a) =>
          (a.startsWith('sqs:') && !a.startsWith('sqs:SendMessage') && !a.startsWith('sqs:GetQueue')) ||
          a.startsWith('secretsmanager:'),
      ),
    ).toEqual([]);
  });
});

describe('api: the HTTP API', () => {
  it('routes every path of DESIGN §3 to the api function', () => {
    const designRoutes = [
      'POST /v1/messages',
      'GET /v1/messages/{id}',
      'GET /v1/messages',
      'PATCH /v1/messages/{id}',
      'DELETE /v1/messages/{id}',
      'POST /v1/messages/{id}/retry',
      'PUT /v1/groups/{key}',
      'POST /v1/messages/batch',
      'POST /v1/attachments',
      'GET /health',
      'GET /openapi.json',
      'GET /v1/suppressions',
      'PUT /v1/suppressions/{address}',
      'DELETE /v1/suppressions/{address}',
      'PUT /v1/templates/{name}',
      'GET /v1/templates',
      'GET /v1/templates/{name}',
      'GET /v1/templates/{name}/versions/{version}',
      'DELETE /v1/templates/{name}',
      'POST /v1/templates/{name}/render',
      'POST /v1/webhooks',
      'GET /v1/webhooks',
      'GET /v1/webhooks/{id}',
      'DELETE /v1/webhooks/{id}',
      'POST /v1/webhooks/{id}/test',
      'POST /v1/webhooks/{id}/rotate-secret',
      'GET /v1/webhooks/{id}/deliveries',
      'POST /v1/webhooks/{id}/deliveries/{delivery}/retry',
    ];
    const routeKeys = Object.values(template.findResources('AWS::ApiGatewayV2::Route')).map(
      (route) => (route.Properties as { RouteKey: string }).RouteKey,
    );
    expect(routeKeys.sort()).toEqual([...designRoutes].sort());
    expect(API_ROUTES).toHaveLength(designRoutes.length);
    template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: arnOf(ids.api),
      PayloadFormatVersion: '2.0',
    });
  });

  it('checks the API key on every route but GET /health and GET /openapi.json', () => {
    const authorizer = only(template.findResources('AWS::ApiGatewayV2::Authorizer'))[0];
    for (const route of Object.values(template.findResources('AWS::ApiGatewayV2::Route'))) {
      const properties = route.Properties as {
        RouteKey: string;
        AuthorizationType: string;
        AuthorizerId?: unknown;
      };
      if (properties.RouteKey === 'GET /health' || properties.RouteKey === 'GET /openapi.json') {
        expect(properties.AuthorizationType).toBe('NONE');
      } else {
        expect(properties).toMatchObject({ AuthorizationType: 'CUSTOM', AuthorizerId: { Ref: authorizer } });
      }
    }
  });

  it('uses a Lambda authorizer with simple responses and a short cache keyed by the Authorization header', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'REQUEST',
      EnableSimpleResponses: true,
      AuthorizerPayloadFormatVersion: '2.0',
      IdentitySource: [AUTHORIZATION_IDENTITY_SOURCE],
      AuthorizerResultTtlInSeconds: 30,
      AuthorizerUri: Match.objectLike({
        'Fn::Join': Match.arrayWith([Match.arrayWith([arnOf(ids.authorizer)])]),
      }),
    });
  });

  it('throttles the stage and writes access logs without any header value', () => {
    const format = new Capture();
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 321, ThrottlingBurstLimit: 654 },
      AccessLogSettings: {
        DestinationArn: Match.objectLike({ 'Fn::GetAtt': Match.anyValue() }),
        Format: format,
      },
    });
    const fields = JSON.parse(format.asString()) as Record<string, string>;
    expect(fields.requestId).toBe('$context.requestId');
    expect(fields.status).toBe('$context.status');
    expect(format.asString()).not.toMatch(/header|Authorization/i);
  });

  it("puts an immediate message's copy on the send queue itself (apiImmediateCopy, on by default): that queue only", () => {
    const environment = (fn('api').Properties.Environment as { Variables: Record<string, unknown> })
      .Variables;
    expect(environment[RESOURCE_ENV.sendQueueUrl]).toEqual({ Ref: ids.sendQueue });
    const sends = statements('api').filter((s) => s.Action.includes('sqs:SendMessage'));
    const targets = sends.flatMap((s) => s.Resource);
    expect(targets).toEqual(expect.arrayContaining([arnOf(ids.sendQueue)]));
  });

  it('with apiImmediateCopy false, neither knows nor may send to the send queue', () => {
    const off = synthesizePostdate({
      ...TEST_PROPS,
      postdate: { ...TEST_PROPS.postdate, apiImmediateCopy: false },
    });
    const resources = off.template.toJSON().Resources as Record<string, Resource>;
    const api = resources[logicalIdOf(off.stack.postdate.functions.api)] as Resource;
    const variables = (api.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(variables[RESOURCE_ENV.sendQueueUrl]).toBeUndefined();
    expect(variables.POSTDATE_API_IMMEDIATE_COPY).toBe('false');
    const role = (api.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const sendQueueId = logicalIdOf(off.stack.postdate.sendQueue);
    const sendsToIt = statementsOfRole(off.template, role).filter(
      (s) => s.Action.includes('sqs:SendMessage') && s.Resource.some((r) => isArnOf(r, sendQueueId)),
    );
    expect(sendsToIt).toEqual([]);
  });
});

describe('ops: alarms and dashboard', () => {
  const alarmOn = (metric: Record<string, unknown>, threshold?: number) =>
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...metric,
      ...(threshold === undefined ? {} : { Threshold: threshold }),
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [{ Ref: ids.topic }],
    });
  const queueName = (id: string) => [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [id, 'QueueName'] } }];

  it('alarms when anything reaches the relay failure queue or the schedule DLQ', () => {
    for (const id of [ids.relayFailures, ids.scheduleDlq]) {
      alarmOn(
        { Namespace: 'AWS/SQS', MetricName: 'ApproximateNumberOfMessagesVisible', Dimensions: queueName(id) },
        1,
      );
    }
  });

  // DESIGN §6: "alarms on DLQ depth > 0". The depth is every copy in it, visible or not: the
  // sweeper's walk (decision 0148) and a `dlq redrive --ids` scan hold each copy hidden for a while,
  // and an alarm on the visible ones alone would clear and fire again around each of them.
  it('alarms on the DLQ depth: the copies visible and those hidden by a walk or a redrive', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[];
    const onDlq = alarms.filter((alarm) =>
      JSON.stringify(alarm.Properties).includes(JSON.stringify({ 'Fn::GetAtt': [ids.sendDlq, 'QueueName'] })),
    );
    expect(onDlq).toHaveLength(1);
    const [alarm] = onDlq as [Resource];
    expect(alarm.Properties).toMatchObject({
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [{ Ref: ids.topic }],
    });
    const metrics = (alarm.Properties.Metrics ?? []) as {
      Expression?: string;
      ReturnData?: boolean;
      MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions: unknown }; Stat: string };
    }[];
    const read = metrics.filter((metric) => metric.MetricStat !== undefined);
    expect(read.map((metric) => metric.MetricStat?.Metric.MetricName).sort()).toEqual([
      'ApproximateNumberOfMessagesNotVisible',
      'ApproximateNumberOfMessagesVisible',
    ]);
    for (const metric of read) {
      expect(metric.MetricStat).toMatchObject({
        Metric: { Namespace: 'AWS/SQS', Dimensions: queueName(ids.sendDlq) },
        Stat: 'Maximum',
      });
    }
    const returned = metrics.filter((metric) => metric.ReturnData !== false);
    expect(returned).toHaveLength(1);
    expect(returned[0]?.Expression?.replace(/\s/g, '')).toMatch(/^\w+\+\w+$/);
  });

  // The send queue's oldest message age: test/cdk/sendQueueOldestMessage.test.ts.
  it('alarms on the relay iterator age', () => {
    alarmOn(
      {
        Namespace: 'AWS/Lambda',
        MetricName: 'IteratorAge',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: ids.relay } }],
      },
      120_000,
    );
    // The event producer lags behind the same stream: events and webhooks are late by that much.
    alarmOn(
      {
        Namespace: 'AWS/Lambda',
        MetricName: 'IteratorAge',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: ids.events } }],
      },
      120_000,
    );
  });

  it("alarms on each function's errors and throttles, the event producer's and webhook delivery's too", () => {
    // A failing producer holds every event and webhook back for hours before EventFailuresNotEmpty.
    for (const name of [...FUNCTION_NAMES, 'events', 'webhooks'] as const) {
      for (const metric of ['Errors', 'Throttles']) {
        alarmOn(
          {
            Namespace: 'AWS/Lambda',
            MetricName: metric,
            Dimensions: [{ Name: 'FunctionName', Value: { Ref: ids[name] } }],
          },
          1,
        );
      }
    }
  });

  it('alarms on config-class SMTP errors and outcome writes that never landed from the EMF metrics, and on API 5xx', () => {
    for (const metric of ['ConfigErrors', 'OutcomeWriteFailures']) {
      alarmOn(
        {
          Namespace: 'Postdate',
          MetricName: metric,
          Dimensions: [
            { Name: 'service', Value: 'postdate' },
            { Name: 'stack', Value: 'PostdateUnderTest' },
          ],
        },
        1,
      );
    }
    alarmOn({ Namespace: 'AWS/ApiGateway', MetricName: '5xx' }, 5);
  });

  it('keeps the unknown, dead and refused alarms on while such messages exist: gauges the sweeper publishes, a missed run keeps the state', () => {
    // RefusedRecords (decision 0166): messages a newer writer made wait, unsent, for the stack's upgrade.
    for (const metric of ['WaitingUnknown', 'WaitingDead', 'RefusedRecords']) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'Postdate',
        MetricName: metric,
        Dimensions: [
          { Name: 'service', Value: 'postdate' },
          { Name: 'stack', Value: 'PostdateUnderTest' },
        ],
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: 1,
        TreatMissingData: 'ignore',
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        AlarmActions: [{ Ref: ids.topic }],
        OKActions: [{ Ref: ids.topic }],
      });
    }
  });

  it('notifies an encrypted, TLS-only topic whose key CloudWatch may use', () => {
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          }),
        ]),
      },
    });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    // 27 of Ops (RelayUnavailable, RelayFailover, RelayThrottled, RefusedRecords and DueMailHeldBack
    // among them), and the eight of webhooks (failed deliveries, their DLQ, the producer's failures
    // and lag, both functions' errors and throttles).
    expect(Object.keys(template.findResources('AWS::CloudWatch::Alarm'))).toHaveLength(35);
    // DESIGN §5 "Rate": the relay throttling us for a while (its rate or its daily quota) is
    // sustained pressure an operator must see: a throttle wave in each of two 15-minute periods.
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'RelayThrottled',
      Statistic: 'Sum',
      Period: 900,
      EvaluationPeriods: 2,
      Threshold: 1,
      TreatMissingData: 'notBreaching',
    });
    // DESIGN §15: an alarm while mail leaves through anything but the first relay (the sweeper's gauge).
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'RelayFailover',
      Statistic: 'Maximum',
      Threshold: 1,
    });
  });

  it("draws the DLQ's depth as its alarm watches it: the copies visible and those hidden", () => {
    const [, dashboard] = only(template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    const widget = body.slice(body.indexOf('3 Dead-letter queue'));
    const drawn = widget.slice(0, widget.indexOf('4 Sender'));
    expect(drawn).toContain('ApproximateNumberOfMessagesVisible');
    expect(drawn).toContain('ApproximateNumberOfMessagesNotVisible');
  });

  it('has one dashboard that follows a message from enqueue to outcome', () => {
    const [, dashboard] = only(template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    const order = ['Enqueue', 'Dispatch', 'Send queue', 'Sender', 'Outcomes'].map((title) =>
      body.indexOf(title),
    );
    expect(order.every((index) => index >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    for (const metric of [
      'IteratorAge',
      'ApproximateAgeOfOldestMessage',
      'Sent',
      'Dead',
      'Lateness',
      'SmtpDuration',
    ]) {
      expect(body).toContain(`\\"${metric}\\"`);
    }
  });
});

/** `requireResource(names, 'key', 'VARIABLE')` calls in the function's own directory. */
async function requiredResourceVariables(name: string): Promise<string[]> {
  const directory = join(PROJECT_ROOT, 'lambdas', name);
  const files = (await readdir(directory)).filter((file) => file.endsWith('.ts'));
  const sources = await Promise.all(files.map((file) => readFile(join(directory, file), 'utf8')));
  const pattern = /requireResource\(\s*\w+,\s*'\w+',\s*'(\w+)'\s*\)/g;
  return [
    ...new Set(sources.flatMap((source) => [...source.matchAll(pattern)].map((match) => match[1] ?? ''))),
  ];
}

function schedulerRoleId(): string {
  const roles = template.findResources('AWS::IAM::Role', {
    Properties: {
      AssumeRolePolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Principal: { Service: 'scheduler.amazonaws.com' } })]),
      },
    },
  });
  return only(roles)[0];
}

function isArnOf(value: unknown, logicalId: string): boolean {
  return JSON.stringify(value) === JSON.stringify(arnOf(logicalId));
}

function sortBy<T extends Record<K, string>, K extends string>(items: readonly T[], key: K): T[] {
  return [...items].sort((a, b) => a[key].localeCompare(b[key]));
}
