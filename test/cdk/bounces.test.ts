import { Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { PARTITION_PREFIX } from '../../lambdas/store/tableLayout.js';
import { Postdate } from '../../lib/Postdate.js';
import {
  logicalIdOf,
  type Resource,
  statementsOfRole,
  synthesizePostdate,
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
