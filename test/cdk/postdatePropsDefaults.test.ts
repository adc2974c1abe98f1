import { readFileSync } from 'node:fs';
import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { Postdate, type PostdateProps } from '../../lib/Postdate.js';
import { testApp } from './support/synthesize.js';

/**
 * Every `@default` the construct documents (lib/postdateProps.ts, what a CDK user reads in the IDE and
 * in docs/configuration.md) is what a construct given no such prop synthesizes: read from the
 * template of `new Postdate(this, 'Mail', { defaultFrom, allowedFrom })`, not from the resolved props.
 * A prop documented with a default and no check here fails the first test.
 */

const ENV = { account: '123456789012', region: 'eu-west-1' } as const;
const REQUIRED: PostdateProps = {
  defaultFrom: 'noreply@mail.example.org',
  allowedFrom: ['*@mail.example.org'],
};

function synthesize(props: Partial<PostdateProps> = {}): { template: Template; postdate: Postdate } {
  const stack = new Stack(testApp(), 'Mail', { env: ENV });
  const postdate = new Postdate(stack, 'Mail', { ...REQUIRED, ...props });
  return { template: Template.fromStack(stack), postdate };
}

/** The documented defaults of an interface of lib/postdateProps.ts: prop → the `@default` text. */
function documentedDefaults(interfaceName: string): Record<string, string> {
  const source = readFileSync(new URL('../../lib/postdateProps.ts', import.meta.url), 'utf8');
  const start = source.indexOf(`export interface ${interfaceName} {`);
  const body = source.slice(start, source.indexOf('\n}\n', start));
  const defaults: Record<string, string> = {};
  for (const match of body.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*readonly (\w+)\?:/g)) {
    const found = /@default ([^\n]*)/.exec(match[1] ?? '');
    if (found?.[1] !== undefined && match[2] !== undefined) defaults[match[2]] = found[1].trim();
  }
  return defaults;
}

const { template, postdate } = synthesize();
const senderEnvironment = (() => {
  const functions = template.findResources('AWS::Lambda::Function', {
    Properties: { Environment: { Variables: { POSTDATE_SMTP_SECRET_ARN: Match.anyValue() } } },
  });
  const [sender] = Object.values(functions);
  return sender?.Properties.Environment.Variables as Record<string, unknown>;
})();
const variable = (name: string, value: string) => () => expect(senderEnvironment[name]).toBe(value);
const unset = (name: string) => () => expect(senderEnvironment).not.toHaveProperty(name);

/** The check of each documented default of PostdateProps, against the template of the bare construct. */
const PROP_DEFAULTS: Record<string, () => void> = {
  smtpHost: () =>
    expect(senderEnvironment.SMTP_HOST).toEqual({
      'Fn::Join': ['', ['email-smtp.', { Ref: 'AWS::Region' }, '.amazonaws.com']],
    }),
  smtpPort: () => {
    expect(senderEnvironment.SMTP_PORT).toBe('587');
    synthesize({ smtpSecure: true }).template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ SMTP_PORT: '465', SMTP_SECURE: 'true' }) },
    });
  },
  smtpSecure: variable('SMTP_SECURE', 'false'),
  smtpRequireTls: variable('SMTP_REQUIRE_TLS', 'true'),
  smtpSecret: () => {
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: Match.objectLike({ GenerateStringKey: 'password' }),
    });
    expect(senderEnvironment.POSTDATE_SMTP_SECRET_ARN).toEqual({ Ref: expect.any(String) });
  },
  relays: () => {
    expect(senderEnvironment).not.toHaveProperty('POSTDATE_RELAYS');
    expect(postdate.relayNames).toEqual(['default']);
  },
  messageIdDomain: variable('POSTDATE_MESSAGE_ID_DOMAIN', 'mail.example.org'),
  maxAttempts: variable('POSTDATE_MAX_ATTEMPTS', '8'),
  retryBaseSeconds: variable('POSTDATE_RETRY_BASE_SECONDS', '30'),
  retryCapSeconds: variable('POSTDATE_RETRY_CAP_SECONDS', '3600'),
  leaseSeconds: variable('POSTDATE_LEASE_SECONDS', '300'),
  senderTimeoutSeconds: () => {
    expect(senderEnvironment.POSTDATE_SENDER_TIMEOUT_SECONDS).toBe('240');
    template.hasResourceProperties('AWS::Lambda::Function', {
      Timeout: 240,
      Environment: { Variables: Match.objectLike({ POSTDATE_SMTP_SECRET_ARN: Match.anyValue() }) },
    });
    // "The send queue's visibility timeout is six times it."
    template.hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: 6 * 240 });
  },
  smtpTimeoutSeconds: variable('POSTDATE_SMTP_TIMEOUT_SECONDS', '20'),
  smtpReplyTimeoutSeconds: variable('POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS', '120'),
  smtpSessionMaxMessages: variable('POSTDATE_SMTP_SESSION_MAX_MESSAGES', '100'),
  smtpSessionMaxAgeSeconds: variable('POSTDATE_SMTP_SESSION_MAX_AGE_SECONDS', '120'),
  directDelayMaxSeconds: variable('POSTDATE_DIRECT_DELAY_MAX_SECONDS', '900'),
  apiImmediateCopy: variable('POSTDATE_API_IMMEDIATE_COPY', 'true'),
  scheduleLeadSeconds: variable('POSTDATE_SCHEDULE_LEAD_SECONDS', '90'),
  sweepGraceSeconds: variable('POSTDATE_SWEEP_GRACE_SECONDS', '300'),
  sweepInterval: () =>
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(5 minutes)' }),
  maxHorizonDays: variable('POSTDATE_MAX_HORIZON_DAYS', '400'),
  retentionDays: variable('POSTDATE_RETENTION_DAYS', '30'),
  webhookRetryHours: variable('POSTDATE_WEBHOOK_RETRY_HOURS', '24'),
  groupHeadReplicas: variable('POSTDATE_GROUP_HEAD_REPLICAS', '1'),
  inlineAttachmentMaxKb: variable('POSTDATE_INLINE_ATTACHMENT_MAX_KB', '3072'),
  maxMessageMb: variable('POSTDATE_MAX_MESSAGE_MB', '40'),
  eventBus: () => template.resourceCountIs('AWS::Events::EventBus', 1),
  busEvents: variable('POSTDATE_BUS_EVENTS', 'all'),
  maxSendRate: unset('POSTDATE_MAX_SEND_RATE'),
  relayProbeSeconds: variable('POSTDATE_RELAY_PROBE_SECONDS', '30'),
  senderMaxConcurrency: () => {
    expect(senderEnvironment.POSTDATE_SENDER_MAX_CONCURRENCY).toBe('20');
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: Match.anyValue() },
      ScalingConfig: { MaximumConcurrency: 20 },
    });
  },
  senderPollers: () =>
    expect(
      Object.keys(
        template.findResources('AWS::Lambda::EventSourceMapping', {
          Properties: { ProvisionedPollerConfig: Match.anyValue() },
        }),
      ),
    ).toEqual([]),
  webhookMaxConcurrency: () =>
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 10 },
    }),
  alarmTopic: () => {
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasResourceProperties('AWS::SNS::Topic', {
      KmsMasterKeyId: { 'Fn::GetAtt': [Match.anyValue(), 'Arn'] },
    });
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
  },
  sesNotificationTopic: () => {
    expect(postdate.bounces).toBeUndefined();
    template.resourceCountIs('AWS::SNS::Subscription', 0);
  },
  sesNotificationTopics: () => expect(postdate.bounces).toBeUndefined(),
  apiThrottle: () =>
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 },
    }),
  authorizerCacheTtl: () =>
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', { AuthorizerResultTtlInSeconds: 30 }),
  logRetention: () => {
    const groups = Object.values(template.findResources('AWS::Logs::LogGroup'));
    // One for each of the seven functions and the API's access logs.
    expect(groups.length).toBeGreaterThanOrEqual(8);
    for (const group of groups) expect(group.Properties.RetentionInDays).toBe(30);
  },
  removalPolicy: () => {
    for (const type of ['AWS::DynamoDB::Table', 'AWS::SecretsManager::Secret', 'AWS::S3::Bucket']) {
      const resources = Object.values(template.findResources(type));
      expect(resources, type).toHaveLength(1);
      expect(resources[0]?.DeletionPolicy, type).toBe('Retain');
      expect(resources[0]?.UpdateReplacePolicy, type).toBe('Retain');
    }
    // "RETAIN also turns on the table's deletion protection".
    template.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: true });
  },
  oldestMessageAgeAlarmThreshold: () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: 30 * 60,
      Metrics: Match.arrayWith([
        Match.objectLike({
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({ MetricName: 'ApproximateAgeOfOldestMessage' }),
          }),
        }),
      ]),
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'HeldBackLateness',
      Threshold: 30 * 60 * 1000,
    });
  },
  relayIteratorAgeAlarmThreshold: () =>
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'IteratorAge',
      Threshold: 2 * 60 * 1000,
    }),
  api5xxAlarmThreshold: () =>
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: '5xx', Threshold: 5 }),
};

describe('the documented defaults of PostdateProps are what synthesizes', () => {
  it('every prop documented with a @default has its check here', () => {
    expect(Object.keys(PROP_DEFAULTS).sort()).toEqual(
      Object.keys(documentedDefaults('PostdateProps')).sort(),
    );
  });

  it.each(Object.keys(PROP_DEFAULTS))('%s', (prop) => {
    PROP_DEFAULTS[prop]?.();
  });

  it('a relay of `relays` defaults to 587 with STARTTLS required, or 465 when secure, and the fleet rate', () => {
    expect(Object.keys(documentedDefaults('PostdateRelay')).sort()).toEqual([
      'maxSendRate',
      'port',
      'requireTls',
      'secure',
    ]);
    const stack = new Stack(testApp(), 'Relays', { env: ENV });
    const secret = (name: string) =>
      secretsmanager.Secret.fromSecretCompleteArn(
        stack,
        name,
        `arn:aws:secretsmanager:${ENV.region}:${ENV.account}:secret:${name}-AbCdEf`,
      );
    new Postdate(stack, 'Mail', {
      ...REQUIRED,
      relays: [
        { name: 'primary', host: 'smtp.primary.example', secret: secret('primary') },
        { name: 'backup', host: 'smtp.backup.example', secure: true, secret: secret('backup') },
      ],
    });
    const functions = Template.fromStack(stack).findResources('AWS::Lambda::Function', {
      Properties: { Environment: { Variables: { POSTDATE_RELAYS: Match.anyValue() } } },
    });
    const [relays] = Object.values(functions).map(
      (fn) => fn.Properties.Environment.Variables.POSTDATE_RELAYS as unknown,
    );
    const text = typeof relays === 'string' ? relays : JSON.stringify(relays);
    expect(text).toMatch(
      /"name\\?":\\?"primary\\?","host\\?":\\?"smtp.primary.example\\?","port\\?":587,"secure\\?":false,"require_tls\\?":true/,
    );
    expect(text).toMatch(
      /"name\\?":\\?"backup\\?","host\\?":\\?"smtp.backup.example\\?","port\\?":465,"secure\\?":true,"require_tls\\?":true/,
    );
    expect(text).not.toContain('max_send_rate');
  });
});
