import { Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { PARTITION_PREFIX } from '../../lambdas/store/tableLayout.js';
import { settingsFromContext } from '../../lib/contextProps.js';
import { Postdate } from '../../lib/Postdate.js';
import { PostdateStack } from '../../lib/PostdateStack.js';
import {
  logicalIdOf,
  type Resource,
  statementsOfRole,
  synthesizePostdate,
  TEST_PROPS,
  testApp,
} from './support/synthesize.js';

/**
 * DESIGN §12 on AWS: given the SES bounce/complaint topic, the construct subscribes a small function
 * to it that may read message state records and write suppression entries, and nothing else; without
 * it there is no such function.
 */

const SES_TOPIC_ARN = 'arn:aws:sns:eu-west-1:123456789012:ses-feedback';

let template: Template;
let postdate: Postdate;
let stack: Stack;

beforeAll(() => {
  const app = testApp();
  stack = new Stack(app, 'WithSesFeedback', { env: { account: '123456789012', region: 'eu-west-1' } });
  postdate = new Postdate(stack, 'Mail', {
    defaultFrom: 'noreply@example.org',
    allowedFrom: ['*@example.org'],
    sesNotificationTopic: sns.Topic.fromTopicArn(stack, 'SesFeedback', SES_TOPIC_ARN),
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  template = Template.fromStack(stack);
});

const bouncesId = () => {
  if (postdate.bounces === undefined) throw new Error('no bounces function');
  return logicalIdOf(postdate.bounces);
};
const tableArn = () => ({ 'Fn::GetAtt': [logicalIdOf(postdate.table), 'Arn'] });

describe('the SES feedback function', () => {
  it('is not there without the topic', () => {
    const { stack: plain } = synthesizePostdate();
    expect(plain.postdate.bounces).toBeUndefined();
    const plainTemplate = Template.fromStack(plain);
    plainTemplate.resourcePropertiesCountIs('AWS::SNS::Subscription', { Protocol: 'lambda' }, 0);
    expect(
      Object.values(plainTemplate.findResources('AWS::Lambda::Function')).some((fn) =>
        String((fn as Resource).Properties.Description).includes('bounces'),
      ),
    ).toBe(false);
  });

  it('subscribes the function to the topic, and lets only SNS from that topic invoke it', () => {
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'lambda',
      TopicArn: SES_TOPIC_ARN,
      Endpoint: { 'Fn::GetAtt': [bouncesId(), 'Arn'] },
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'sns.amazonaws.com',
      SourceArn: SES_TOPIC_ARN,
      FunctionName: { 'Fn::GetAtt': [bouncesId(), 'Arn'] },
    });
  });

  it('runs the bounces handler with the table name, on the runtime every function uses', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('bounces'),
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Environment: {
        Variables: Match.objectLike({ POSTDATE_TABLE_NAME: { Ref: logicalIdOf(postdate.table) } }),
      },
    });
  });

  it('may only get message state records and update suppression entries of the base table', () => {
    const fn = template.toJSON().Resources[bouncesId()] as Resource;
    const role = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const dynamo = statementsOfRole(template, role).filter((statement) =>
      statement.Action.some((action) => action.startsWith('dynamodb:')),
    );
    expect(dynamo).toEqual([
      expect.objectContaining({
        Effect: 'Allow',
        Action: ['dynamodb:GetItem'],
        Resource: [tableArn()],
        Condition: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${PARTITION_PREFIX.message}*`] },
        },
      }),
      expect.objectContaining({
        Effect: 'Allow',
        Action: ['dynamodb:UpdateItem'],
        Resource: [tableArn()],
        Condition: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${PARTITION_PREFIX.suppression}*`] },
        },
      }),
    ]);
  });

  it('keeps what it could not process after two retries on an encrypted queue, and alarms on it and on errors', () => {
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: bouncesId() },
      MaximumRetryAttempts: 2,
      DestinationConfig: { OnFailure: { Destination: Match.anyValue() } },
    });
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).filter((alarm) =>
      String((alarm as Resource).Properties.AlarmDescription).match(/bounces function|SES notifications/),
    );
    expect(alarms).toHaveLength(2);
    for (const alarm of alarms) {
      expect((alarm as Resource).Properties.AlarmActions).toEqual([
        { Ref: logicalIdOf(postdate.alarmTopic as unknown as sns.Topic) },
      ]);
    }
  });

  it('passes cdk-nag AwsSolutions with nothing unacknowledged', () => {
    const report = new AwsSolutionsChecks(stack.node.scope as never).validateScope(stack);
    expect(report.violations.map((violation) => violation.ruleName)).toEqual([]);
  });
});

/**
 * DESIGN §15, "Suppressions and SES feedback work whichever relay sent": SES publishes an identity's
 * feedback only to a topic in the Region where it sends, so with SES in eu-west-1 and then in
 * us-east-1 there are two topics, and the function must hear both.
 */
describe('SES feedback from more than one Region', () => {
  const HOME = 'arn:aws:sns:eu-west-1:123456789012:ses-feedback';
  const FAILOVER = 'arn:aws:sns:us-east-1:123456789012:ses-feedback';
  const OPT_IN = 'arn:aws:sns:eu-south-1:123456789012:ses-feedback';
  const VALID = { defaultFrom: 'noreply@example.org', allowedFrom: ['*@example.org'] };
  const regionalStack = (region = 'eu-west-1') =>
    new Stack(testApp(), 'WithSesFeedbackFromRegions', { env: { account: '123456789012', region } });
  const topic = (scope: Stack, id: string, arn: string) => sns.Topic.fromTopicArn(scope, id, arn);

  it("subscribes the function to one topic per Region, each subscription made in its topic's Region", () => {
    const scope = regionalStack();
    const mail = new Postdate(scope, 'Mail', {
      ...VALID,
      sesNotificationTopics: [topic(scope, 'Home', HOME), topic(scope, 'Failover', FAILOVER)],
    });
    const regional = Template.fromStack(scope);
    const fn = { 'Fn::GetAtt': [logicalIdOf(mail.bounces as NonNullable<typeof mail.bounces>), 'Arn'] };
    regional.resourcePropertiesCountIs('AWS::SNS::Subscription', { Protocol: 'lambda' }, 2);
    regional.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'lambda',
      TopicArn: HOME,
      Endpoint: fn,
    });
    regional.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'lambda',
      TopicArn: FAILOVER,
      Endpoint: fn,
      Region: 'us-east-1',
    });
    regional.resourcePropertiesCountIs(
      'AWS::Lambda::Permission',
      { Principal: Match.stringLikeRegexp('^sns') },
      2,
    );
    for (const arn of [HOME, FAILOVER]) {
      regional.hasResourceProperties('AWS::Lambda::Permission', {
        Action: 'lambda:InvokeFunction',
        Principal: 'sns.amazonaws.com',
        SourceArn: arn,
        FunctionName: fn,
      });
    }
  });

  it("lets SNS of an opt-in Region invoke it by that Region's own principal", () => {
    const scope = regionalStack();
    new Postdate(scope, 'Mail', { ...VALID, sesNotificationTopics: [topic(scope, 'Milan', OPT_IN)] });
    Template.fromStack(scope).hasResourceProperties('AWS::Lambda::Permission', {
      Principal: 'sns.eu-south-1.amazonaws.com',
      SourceArn: OPT_IN,
    });
  });

  it('refuses a topic AWS cannot deliver from to a function in an opt-in Region', () => {
    const scope = regionalStack('eu-south-1');
    expect(
      () => new Postdate(scope, 'Mail', { ...VALID, sesNotificationTopics: [topic(scope, 'Home', HOME)] }),
    ).toThrow(/sesNotificationTopics.*eu-west-1.*eu-south-1/);
  });

  it('refuses the single topic and the list together, an empty list, and one topic twice', () => {
    const scope = regionalStack();
    const home = topic(scope, 'Home', HOME);
    expect(
      () =>
        new Postdate(scope, 'Both', {
          ...VALID,
          sesNotificationTopic: home,
          sesNotificationTopics: [topic(scope, 'Failover', FAILOVER)],
        }),
    ).toThrow(/sesNotificationTopic and sesNotificationTopics/);
    expect(() => new Postdate(scope, 'Empty', { ...VALID, sesNotificationTopics: [] })).toThrow(
      /sesNotificationTopics must list at least one topic/,
    );
    expect(
      () =>
        new Postdate(scope, 'Twice', {
          ...VALID,
          sesNotificationTopics: [home, topic(scope, 'Again', HOME)],
        }),
    ).toThrow(/sesNotificationTopics lists .*ses-feedback.* twice/);
  });

  it('keeps the single topic as it was deployed: the same subscription and permission', () => {
    template.resourcePropertiesCountIs('AWS::SNS::Subscription', { Protocol: 'lambda' }, 1);
    template.resourcePropertiesCountIs('AWS::Lambda::Permission', { SourceArn: SES_TOPIC_ARN }, 1);
  });

  it('takes the topics by ARN in the standalone stack, from a comma-separated context key', () => {
    const settings = settingsFromContext(
      (key) => ({ sesNotificationTopicArns: `${HOME}, ${FAILOVER}` })[key as string],
    );
    expect(settings.stackProps.sesNotificationTopicArns).toEqual([HOME, FAILOVER]);
    expect(() =>
      settingsFromContext((key) => ({ sesNotificationTopicArns: `${HOME},ses-feedback` })[key as string]),
    ).toThrow(/context sesNotificationTopicArns must list sns ARNs/);
    expect(() =>
      settingsFromContext(
        (key) => ({ sesNotificationTopicArn: HOME, sesNotificationTopicArns: FAILOVER })[key as string],
      ),
    ).toThrow(/context sesNotificationTopicArn and sesNotificationTopicArns/);

    const app = testApp();
    const standalone = new PostdateStack(app, 'Standalone', {
      ...TEST_PROPS,
      env: { account: '123456789012', region: 'eu-west-1' },
      sesNotificationTopicArns: [HOME, FAILOVER],
    });
    const synthesized = Template.fromStack(standalone);
    synthesized.resourcePropertiesCountIs('AWS::SNS::Subscription', { Protocol: 'lambda' }, 2);
    synthesized.hasResourceProperties('AWS::SNS::Subscription', { TopicArn: FAILOVER, Region: 'us-east-1' });
    expect(
      () =>
        new PostdateStack(testApp(), 'Both', {
          ...TEST_PROPS,
          sesNotificationTopicArn: HOME,
          sesNotificationTopicArns: [FAILOVER],
        }),
    ).toThrow(/sesNotificationTopicArn and sesNotificationTopicArns/);
  });
});
