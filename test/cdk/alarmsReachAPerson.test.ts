import { Stack } from 'aws-cdk-lib';
import { Annotations, Capture, Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { SENDER_METRIC } from '../../lambdas/core/metricNames.js';
import { POSTDATE_METRIC } from '../../lib/constructs/Ops.js';
import { assertEsbuildResolvable } from '../../lib/constructs/postdateFunction.js';
import { Postdate } from '../../lib/Postdate.js';
import {
  logicalIdOf,
  type Resource,
  statementsOfRole,
  synthesizePostdate,
  TEST_PROPS,
  testApp,
} from './support/synthesize.js';

const MINIMAL = { defaultFrom: 'noreply@example.org', allowedFrom: ['*@example.org'] } as const;

/** Every topic (by logical id) that some alarm notifies, read from the alarms' actions. */
function notifiedTopics(template: Template): string[] {
  const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[];
  expect(alarms.length).toBeGreaterThan(0);
  const topics = alarms.flatMap((alarm) => {
    const actions = [
      ...((alarm.Properties.AlarmActions as unknown[] | undefined) ?? []),
      ...((alarm.Properties.OKActions as unknown[] | undefined) ?? []),
    ];
    return actions.map((action) => {
      const ref = (action as { Ref?: string }).Ref;
      if (ref === undefined)
        throw new Error(`alarm action is not a topic of this stack: ${JSON.stringify(action)}`);
      return ref;
    });
  });
  return [...new Set(topics)];
}

/** The statements of every topic policy that covers the topic. */
function topicPolicyStatements(template: Template, topicLogicalId: string): Record<string, unknown>[] {
  const policies = Object.values(
    template.findResources('AWS::SNS::TopicPolicy', {
      Properties: { Topics: Match.arrayWith([{ Ref: topicLogicalId }]) },
    }),
  ) as Resource[];
  return policies.flatMap(
    (policy) => (policy.Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement,
  );
}

/** Asserts that CloudWatch alarms of this account may publish to the topic, and only they. */
function expectCloudWatchMayPublish(template: Template, topicLogicalId: string): void {
  const sourceArn = new Capture();
  const statements = topicPolicyStatements(template, topicLogicalId);
  expect(statements, topicLogicalId).toEqual(
    expect.arrayContaining([
      expect.objectContaining({
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: 'sns:Publish',
        Resource: { Ref: topicLogicalId },
        Condition: {
          StringEquals: { 'aws:SourceAccount': expect.anything() },
          ArnLike: { 'aws:SourceArn': expect.anything() },
        },
      }),
    ]),
  );
  template.hasResourceProperties('AWS::SNS::TopicPolicy', {
    Topics: Match.arrayWith([{ Ref: topicLogicalId }]),
    PolicyDocument: {
      Statement: Match.arrayWith([
        Match.objectLike({
          Principal: { Service: 'cloudwatch.amazonaws.com' },
          Condition: Match.objectLike({ ArnLike: { 'aws:SourceArn': sourceArn } }),
        }),
      ]),
    },
  });
  expect(JSON.stringify(sourceArn.asObject())).toMatch(/:cloudwatch:.*:alarm:\*/);
}

describe('alarms reach a person', () => {
  let template: Template;
  let stack: ReturnType<typeof synthesizePostdate>['stack'];

  beforeAll(() => {
    ({ template, stack } = synthesizePostdate());
  });

  it('lets CloudWatch publish to every topic an alarm notifies, beside the TLS Deny', () => {
    const topics = notifiedTopics(template);
    expect(topics).toHaveLength(1);
    for (const topic of topics) {
      expectCloudWatchMayPublish(template, topic);
      expect(topicPolicyStatements(template, topic)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            Effect: 'Deny',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      );
    }
  });

  it("adds the same Allow to a user's own alarmTopic when it is a Topic of the stack", () => {
    const app = testApp();
    const own = new Stack(app, 'OwnTopic');
    const topic = new sns.Topic(own, 'Pager');
    new Postdate(own, 'Mail', { ...MINIMAL, alarmTopic: topic });
    const ownTemplate = Template.fromStack(own);
    expect(notifiedTopics(ownTemplate)).toEqual([
      own.resolve((topic.node.defaultChild as sns.CfnTopic).logicalId),
    ]);
    for (const id of notifiedTopics(ownTemplate)) expectCloudWatchMayPublish(ownTemplate, id);
  });

  it('warns at synth that an imported alarm topic needs the Allow (the stack cannot add it)', () => {
    const { stack: imported } = synthesizePostdate({
      ...TEST_PROPS,
      alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:pager',
    });
    Annotations.fromStack(imported).hasWarning(
      '*',
      Match.stringLikeRegexp('alarmTopic is imported: its policy must allow cloudwatch.amazonaws.com'),
    );
  });

  it('alarms on failed messages and on unexpected sender errors from the EMF metrics', () => {
    expect(POSTDATE_METRIC.failed).toBe(SENDER_METRIC.failed);
    for (const metric of [POSTDATE_METRIC.failed, POSTDATE_METRIC.unexpectedErrors]) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'Postdate',
        MetricName: metric,
        Dimensions: [
          { Name: 'service', Value: 'postdate' },
          { Name: 'stack', Value: 'PostdateUnderTest' },
        ],
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
    }
    expect(POSTDATE_METRIC.unexpectedErrors).toBe('UnexpectedErrors');
  });

  it('never retries an asynchronous invocation of the sweeper (a missed run is covered by the next)', () => {
    const sweeper = stack.resolve(stack.postdate.functions.sweeper.functionName);
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: sweeper,
      MaximumRetryAttempts: 0,
    });
  });

  it('lets the sender decrypt an imported SMTP secret encrypted with a customer-managed key', () => {
    const app = testApp();
    const own = new Stack(app, 'OwnSecret', { env: { account: '123456789012', region: 'eu-west-1' } });
    const keyArn = 'arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555';
    const secret = secretsmanager.Secret.fromSecretAttributes(own, 'Smtp', {
      secretCompleteArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/smtp-AbCdEf',
      encryptionKey: kms.Key.fromKeyArn(own, 'SmtpKey', keyArn),
    });
    const mail = new Postdate(own, 'Mail', { ...MINIMAL, smtpSecret: secret });
    const ownTemplate = Template.fromStack(own);
    const senderFn = ownTemplate.toJSON().Resources[logicalIdOf(mail.functions.sender)] as Resource;
    const role = (senderFn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const decrypt = statementsOfRole(ownTemplate, role).filter((s) => s.Action.includes('kms:Decrypt'));
    expect(decrypt.flatMap((s) => s.Resource)).toEqual([keyArn]);
  });

  it('lets the sender decrypt the secret of -c smtpSecretArn under -c smtpSecretKeyArn', () => {
    const keyArn = 'arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555';
    const { template: keyed, stack: keyedStack } = synthesizePostdate({
      ...TEST_PROPS,
      smtpSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/smtp-AbCdEf',
      smtpSecretKeyArn: keyArn,
    });
    const senderFn = keyed.toJSON().Resources[logicalIdOf(keyedStack.postdate.functions.sender)] as Resource;
    const role = (senderFn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const decrypt = statementsOfRole(keyed, role).filter((s) => s.Action.includes('kms:Decrypt'));
    expect(decrypt.flatMap((s) => s.Resource)).toEqual([keyArn]);
  });

  it('turns on source maps at run time in every function', () => {
    const functions = Object.values(
      template.findResources('AWS::Lambda::Function', {
        Properties: { Handler: 'index.handler' },
      }),
    ) as Resource[];
    expect(functions).toHaveLength(7);
    for (const fn of functions) {
      expect(
        (fn.Properties.Environment as { Variables: Record<string, string> }).Variables.NODE_OPTIONS,
      ).toBe('--enable-source-maps');
    }
  });

  it('puts the API access logs under /aws/vendedlogs/', () => {
    const accessLogs = logicalIdOf(stack.postdate.node.findChild('Api').node.findChild('AccessLogs'));
    const group = template.toJSON().Resources[accessLogs] as Resource;
    expect(group.Properties.LogGroupName).toEqual(expect.stringMatching(/^\/aws\/vendedlogs\/./));
  });

  it('fails fast naming esbuild when it cannot be resolved (never a silent Docker build)', () => {
    const missing = () => {
      throw new Error("Cannot find module 'esbuild'");
    };
    expect(() => assertEsbuildResolvable(missing)).toThrow(/esbuild.*(dependenc|npm)/is);
    expect(() => assertEsbuildResolvable(() => '/node_modules/esbuild/lib/main.js')).not.toThrow();
  });
});
