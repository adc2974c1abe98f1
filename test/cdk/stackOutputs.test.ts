import { readFileSync } from 'node:fs';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { CLI_STACK_OUTPUTS, targetFromStack } from '../../cli/stackTarget.js';
import { CONFIG_SETTINGS } from '../../lambdas/core/configSpec.js';
import { Postdate } from '../../lib/Postdate.js';
import { CLI_SETTINGS, STACK_OUTPUT } from '../../lib/stackOutputs.js';
import { logicalIdOf, synthesizePostdate, testApp } from './support/synthesize.js';

/**
 * `postdate --stack NAME` reads every resource name from the stack's outputs (DESIGN §6,
 * cli/stackTarget.ts): each output it needs must exist, under the key it reads, with the value the
 * functions themselves are given.
 */
describe('the stack outputs the CLI reads', () => {
  const { template, stack } = synthesizePostdate();
  const outputs = template.toJSON().Outputs as Record<string, unknown>;

  it('has every output of STACK_OUTPUT, and the CLI reads only those', () => {
    for (const key of Object.values(STACK_OUTPUT)) expect(outputs).toHaveProperty(key);
    for (const name of CLI_STACK_OUTPUTS) expect(Object.keys(STACK_OUTPUT)).toContain(name);
  });

  it("has each of them in docs/deploy.md's table of outputs, and no other", () => {
    const deploy = readFileSync('docs/deploy.md', 'utf8');
    const table = deploy.slice(deploy.indexOf('| output | what |')).split('\n\n')[0] ?? '';
    const documented = table
      .split('\n')
      .slice(2)
      .flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`(\w+)`/g)].map((match) => match[1]));
    expect(documented.sort()).toEqual(Object.keys(outputs).sort());
  });

  it("names the scheduler's role, the one the relay gives every schedule", () => {
    const role = logicalIdOf(stack.postdate.node.findChild('Dispatch').node.findChild('SchedulerRole'));
    template.hasOutput(STACK_OUTPUT.schedulerRoleArn, { Value: { 'Fn::GetAtt': [role, 'Arn'] } });
    const relay = template.toJSON().Resources[logicalIdOf(stack.postdate.functions.relay)];
    expect(relay.Properties.Environment.Variables.POSTDATE_SCHEDULER_ROLE_ARN).toEqual({
      'Fn::GetAtt': [role, 'Arn'],
    });
  });

  it('gives the table, the queues and the schedule group as the functions know them', () => {
    template.hasOutput(STACK_OUTPUT.tableName, { Value: { Ref: logicalIdOf(stack.postdate.table) } });
    template.hasOutput(STACK_OUTPUT.sendQueueUrl, { Value: { Ref: logicalIdOf(stack.postdate.sendQueue) } });
    template.hasOutput(STACK_OUTPUT.sendDeadLetterQueueUrl, {
      Value: { Ref: logicalIdOf(stack.postdate.sendDeadLetterQueue) },
    });
    template.hasOutput(STACK_OUTPUT.relayFailureQueueUrl, {
      Value: { Ref: logicalIdOf(stack.postdate.relayFailureQueue) },
    });
  });

  it('gives the settings the CLI decides with exactly as the functions have them (postdate --stack)', () => {
    const value = (outputs[STACK_OUTPUT.settings] as { Value: unknown }).Value;
    expect(typeof value).toBe('string');
    const settings = JSON.parse(value as string) as Record<string, string>;
    const variables = CLI_SETTINGS.map((name) => CONFIG_SETTINGS[name].variable);
    expect(Object.keys(settings).sort()).toEqual([...variables].sort());
    expect(settings.POSTDATE_MAX_ATTEMPTS).toBe('5'); // TEST_PROPS
    expect(settings.POSTDATE_MESSAGE_ID_DOMAIN).toBe('example.com'); // derived from defaultFrom
    const resources = template.toJSON().Resources;
    for (const fn of [stack.postdate.functions.api, stack.postdate.functions.sender]) {
      const environment = resources[logicalIdOf(fn)].Properties.Environment.Variables;
      for (const variable of variables) expect(settings[variable]).toBe(environment[variable]);
    }
  });
});

describe("the outputs of a Postdate in a user's own stack (the construct in a CDK app)", () => {
  it('are the same outputs under the same keys, given by postdate.addStackOutputs(), and the CLI reads them', () => {
    const stack = new Stack(testApp(), 'PlatformMail', {
      env: { account: '123456789012', region: 'eu-west-1' },
    });
    const postdate = new Postdate(stack, 'Mail', {
      defaultFrom: 'noreply@example.org',
      allowedFrom: ['*@example.org'],
    });
    postdate.addStackOutputs();
    const outputs = Template.fromStack(stack).toJSON().Outputs as Record<string, { Value: unknown }>;
    const { template: postdateStack } = synthesizePostdate();
    expect(Object.keys(outputs).sort()).toEqual(Object.keys(postdateStack.toJSON().Outputs).sort());
    // As DescribeStacks would answer once deployed: every output a text, read by the CLI's own reader.
    const described = Object.fromEntries(
      Object.entries(outputs).map(([key, output]) => [
        key,
        typeof output.Value === 'string' ? output.Value : `deployed-${key}`,
      ]),
    );
    const target = targetFromStack(
      'PlatformMail',
      { stackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/PlatformMail/1', outputs: described },
      {},
      {},
    );
    expect(target.warnings).toEqual([]);
    expect(target.options).toMatchObject({
      table: `deployed-${STACK_OUTPUT.tableName}`,
      queueUrl: `deployed-${STACK_OUTPUT.sendQueueUrl}`,
      region: 'eu-west-1',
    });
    expect(target.env).toMatchObject({ POSTDATE_RELAY_NAMES: 'default', POSTDATE_MAX_ATTEMPTS: '8' });
  });
});
