import type { PolicyValidationPluginReport } from 'aws-cdk-lib';
import { type App, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { Postdate } from '../../lib/Postdate.js';
import { PostdateStack } from '../../lib/PostdateStack.js';
import { TEST_PROPS, testApp } from './support/synthesize.js';

/** Rule ids with the construct paths that break them; empty when the app is clean. */
function findings(report: PolicyValidationPluginReport): Record<string, string[]> {
  return Object.fromEntries(
    report.violations.map((violation) => [
      violation.ruleName,
      violation.violatingResources.map((resource) => resource.constructPath ?? '?'),
    ]),
  );
}

describe('cdk-nag AwsSolutions', () => {
  let app: App;
  let defaultReport: PolicyValidationPluginReport;
  let customReport: PolicyValidationPluginReport;
  let synthError: string | undefined;

  beforeAll(() => {
    app = testApp();
    const stack = new PostdateStack(app, 'NagDefaults', TEST_PROPS);

    // The reusable construct on its own, with the resources a team brings (secret, topic) and a
    // dev removal policy: the acknowledgements must hold in that shape too.
    const custom = new Stack(app, 'NagCustom', { env: { account: '123456789012', region: 'eu-west-1' } });
    new Postdate(custom, 'Mail', {
      defaultFrom: 'noreply@example.org',
      allowedFrom: ['*@example.org'],
      smtpSecret: secretsmanager.Secret.fromSecretNameV2(custom, 'Existing', 'team/smtp'),
      alarmTopic: sns.Topic.fromTopicArn(custom, 'Pager', 'arn:aws:sns:eu-west-1:123456789012:pager'),
      removalPolicy: RemovalPolicy.DESTROY,
    });

    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    try {
      app.synth();
    } catch (error) {
      synthError = error instanceof Error ? error.message : String(error);
    }
    defaultReport = new AwsSolutionsChecks(app).validateScope(stack);
    customReport = new AwsSolutionsChecks(app).validateScope(custom);
  });

  it('lets the app synthesize with the AwsSolutions plugin registered (the plugin fails synth on a finding)', () => {
    expect(synthError).toBeUndefined();
  });

  it('finds nothing unacknowledged in the stack with the default resources', () => {
    expect(findings(defaultReport)).toEqual({});
    expect(defaultReport.success).toBe(true);
  });

  it('finds nothing unacknowledged in the construct with a given secret and topic, in another region', () => {
    expect(findings(customReport)).toEqual({});
  });

  it('gives every acknowledgement a reason of at least a sentence, scoped to one finding', () => {
    const acknowledged = app.node
      .findAll()
      .flatMap((construct) =>
        construct.node.metadata
          .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
          .flatMap((entry) => Object.entries(entry.data as Record<string, string>)),
      );
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const [id, reason] of acknowledged) {
      // IAM5 is only ever acknowledged for one named resource, never as a whole rule.
      if (id.includes('IAM5')) expect(id).toMatch(/AwsSolutions-IAM5\[Resource::.+\]$/);
      expect(reason.length, id).toBeGreaterThan(40);
    }
  });
});
