import { type App, Stack, Stage } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { RESOURCE_SETTINGS } from '../../lambdas/core/configSpec.js';
import { Postdate } from '../../lib/Postdate.js';
import { logicalIdOf, testApp } from './support/synthesize.js';

/**
 * Postdates side by side, as a platform team deploys them (DESIGN §6, STYLE 7 "no hard-coded
 * names"): one stack per stage from one app (the same construct path, another `stackName`), a stage
 * of a CDK pipeline, and two Postdates in one stack. Nothing a second one creates may take a name the
 * first holds in the account and Region, and each one's alarms and dashboard watch its own metrics
 * only. Covers lib/Postdate.ts, lib/constructs/Webhooks.ts (the bus) and lib/constructs/alarms.ts.
 */

const ENV = { account: '123456789012', region: 'eu-west-1' } as const;
const PROPS = { defaultFrom: 'noreply@example.org', allowedFrom: ['*@example.org'] };

/**
 * The property that names a resource of each type Postdate creates whose name is unique in an account
 * (and Region): two resources of a type with the same value there cannot both be created.
 */
const NAMED_BY: Record<string, string> = {
  'AWS::Events::EventBus': 'Name',
  'AWS::Scheduler::ScheduleGroup': 'Name',
  'AWS::Logs::LogGroup': 'LogGroupName',
  'AWS::CloudWatch::Dashboard': 'DashboardName',
  'AWS::DynamoDB::Table': 'TableName',
  'AWS::SQS::Queue': 'QueueName',
  'AWS::SNS::Topic': 'TopicName',
  'AWS::S3::Bucket': 'BucketName',
  'AWS::Lambda::Function': 'FunctionName',
  'AWS::IAM::Role': 'RoleName',
  'AWS::SecretsManager::Secret': 'Name',
  'AWS::KMS::Alias': 'AliasName',
  'AWS::Events::Rule': 'Name',
  'AWS::CloudWatch::Alarm': 'AlarmName',
};

/** Every given name of a Postdate stack, as `type name` (the Region written in where a name has it). */
function givenNames(stack: Stack): string[] {
  const resources = Template.fromStack(stack).toJSON().Resources as Record<
    string,
    { Type: string; Properties?: Record<string, unknown> }
  >;
  return Object.values(resources).flatMap((resource) => {
    const property = NAMED_BY[resource.Type];
    const value = property === undefined ? undefined : resource.Properties?.[property];
    if (value === undefined) return [];
    return [`${resource.Type} ${JSON.stringify(value).replaceAll('{"Ref":"AWS::Region"}', ENV.region)}`];
  });
}

function postdateIn(app: App, path: string, stackName?: string): Stack {
  const [stageId, stackId] = path.includes('/') ? path.split('/') : [undefined, path];
  const scope = stageId === undefined ? app : new Stage(app, stageId);
  const stack = new Stack(scope, stackId ?? path, { env: ENV, ...(stackName ? { stackName } : {}) });
  new Postdate(stack, 'Postdate', PROPS);
  return stack;
}

function clashes(first: Stack, second: Stack): string[] {
  const taken = new Set(givenNames(first));
  return givenNames(second).filter((name) => taken.has(name));
}

describe('Postdates side by side in one account and Region', () => {
  it('two stacks of one app, the same construct path under another stackName, share no name', () => {
    const staging = postdateIn(testApp(), 'Mail', 'mail-staging');
    const production = postdateIn(testApp(), 'Mail', 'mail-production');
    expect(givenNames(staging).length).toBeGreaterThan(0);
    expect(clashes(staging, production)).toEqual([]);
  });

  it('a stack named by its path keeps the names it was deployed with (a new bus would strand the rules on the old one)', () => {
    const names = givenNames(postdateIn(testApp(), 'Mail'));
    // CDK's own name for a bus, from the construct path: what every stack so far was deployed with.
    expect(names).toContain('AWS::Events::EventBus "MailPostdateWebhooksBus92A5A570"');
    const staged = givenNames(postdateIn(testApp(), 'Beta/Mail'));
    expect(staged.filter((name) => name.startsWith('AWS::Events::EventBus'))).toEqual([
      expect.stringMatching(/^AWS::Events::EventBus "BetaMailPostdateWebhooksBus[0-9A-F]{8}"$/),
    ]);
  });

  it('two stages of a pipeline share no name', () => {
    const app = testApp();
    const beta = postdateIn(app, 'Beta/Mail');
    const gamma = postdateIn(app, 'Gamma/Mail');
    expect(clashes(beta, gamma)).toEqual([]);
  });

  it('two Postdates in one stack share no name', () => {
    const stack = new Stack(testApp(), 'Mail', { env: ENV });
    new Postdate(stack, 'Transactional', PROPS);
    new Postdate(stack, 'Marketing', PROPS);
    const names = givenNames(stack);
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((name, index) => names.indexOf(name) !== index)).toEqual([]);
  });
});

describe('two Postdates in one stack: metrics that never add up (DESIGN §6)', () => {
  const stack = new Stack(testApp(), 'Mail', { env: ENV });
  const transactional = new Postdate(stack, 'Transactional', PROPS);
  const marketing = new Postdate(stack, 'Marketing', PROPS);
  // Synthesized once, after both exist, as `cdk synth` does.
  const resources = Template.fromStack(stack).toJSON().Resources as Record<
    string,
    { Properties: Record<string, unknown> }
  >;
  /** The template's properties of a construct's resource (its logical id read from the construct). */
  const propertiesOf = (construct: IConstruct) => resources[logicalIdOf(construct)]?.Properties ?? {};

  /** The `stack` dimension every function of `postdate` writes its metrics with (POSTDATE_STACK). */
  const emittedStack = (postdate: Postdate): string[] => [
    ...new Set(
      postdate.node
        .findAll()
        .filter((construct): construct is lambda.Function => construct instanceof lambda.Function)
        .map((fn) => {
          const environment = propertiesOf(fn).Environment as { Variables: Record<string, unknown> };
          return environment.Variables[RESOURCE_SETTINGS.stackName.variable] as string;
        }),
    ),
  ];

  /** The `stack` dimension of every alarm of `postdate` on a Postdate metric. */
  const watchedStack = (postdate: Postdate): string[] => [
    ...new Set(
      postdate.node
        .findAll()
        .filter((construct): construct is cloudwatch.Alarm => construct instanceof cloudwatch.Alarm)
        .flatMap((alarm) => {
          const dimensions = propertiesOf(alarm).Dimensions as { Name: string; Value: string }[] | undefined;
          return (dimensions ?? [])
            .filter((dimension) => dimension.Name === 'stack')
            .map((dimension) => dimension.Value);
        }),
    ),
  ];

  it('each writes its metrics under a dimension of its own', () => {
    const [first, second] = [emittedStack(transactional), emittedStack(marketing)];
    expect(first).toHaveLength(1);
    expect(second).toHaveLength(1);
    expect(first[0]).not.toBe(second[0]);
    // Both still name their stack first, as a dashboard or a search reads them.
    expect(first[0]).toMatch(/^Mail/);
  });

  it("each one's alarms watch its own dimension only", () => {
    expect(watchedStack(transactional)).toEqual(emittedStack(transactional));
    expect(watchedStack(marketing)).toEqual(emittedStack(marketing));
  });

  it("each one's dashboard draws its own metrics only", () => {
    const body = (postdate: Postdate) => {
      const dashboard = postdate.node
        .findAll()
        .find((construct) => construct instanceof cloudwatch.Dashboard) as cloudwatch.Dashboard;
      return JSON.stringify(propertiesOf(dashboard).DashboardBody);
    };
    const [own, other] = [emittedStack(transactional)[0], emittedStack(marketing)[0]];
    expect(body(transactional)).toContain(`\\"stack\\",\\"${own}\\"`);
    expect(body(transactional)).not.toContain(`\\"stack\\",\\"${other}\\"`);
  });

  it('one Postdate alone in its stack writes the stack name, as deployed stacks always did', () => {
    const alone = new Stack(testApp(), 'Alone', { env: ENV, stackName: 'mail-alone' });
    new Postdate(alone, 'Postdate', PROPS);
    const functions = Template.fromStack(alone).findResources('AWS::Lambda::Function', {
      Properties: {
        Environment: { Variables: { [RESOURCE_SETTINGS.stackName.variable]: Match.anyValue() } },
      },
    });
    const values = Object.values(functions).map(
      (fn) => fn.Properties.Environment.Variables[RESOURCE_SETTINGS.stackName.variable],
    );
    expect(values.length).toBeGreaterThanOrEqual(7);
    expect(new Set(values)).toEqual(new Set(['mail-alone']));
  });
});
