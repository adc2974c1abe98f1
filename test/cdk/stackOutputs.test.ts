import { describe, expect, it } from 'vitest';
import { CLI_STACK_OUTPUTS } from '../../cli/stackTarget.js';
import { STACK_OUTPUT } from '../../lib/stackOutputs.js';
import { logicalIdOf, synthesizePostdate } from './support/synthesize.js';

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
});
