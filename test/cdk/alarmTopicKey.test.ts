import { describe, expect, it } from 'vitest';
import { only, synthesizePostdate } from './support/synthesize.js';

describe('the alarm topic key', () => {
  it('lets CloudWatch use it only for alarms of this account (aws:SourceAccount)', () => {
    const { template } = synthesizePostdate();
    const [, key] = only(template.findResources('AWS::KMS::Key'));
    const statements = (key.Properties.KeyPolicy as { Statement: Record<string, unknown>[] }).Statement;
    const cloudwatch = statements.filter(
      (statement) =>
        JSON.stringify(statement.Principal) === JSON.stringify({ Service: 'cloudwatch.amazonaws.com' }),
    );
    expect(cloudwatch).toHaveLength(1);
    expect(cloudwatch[0]?.Condition).toEqual({
      StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
    });
  });
});
