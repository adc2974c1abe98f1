/**
 * The sender's event source in provisioned mode (issue 34; docs/decisions/0103): `senderPollers`
 * puts the send queue's event source under `ProvisionedPollerConfig` instead of `MaximumConcurrency`
 * (mutually exclusive, AWS Lambda's "Configuring scaling behavior for SQS event source mappings"),
 * and each sender's share of the fleet's rate (DESIGN §5 Rate) follows: a poller runs at most 10
 * invocations at once, so the fleet runs at most 10 × the maximum pollers senders.
 */
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { settingsFromContext } from '../../lib/contextProps.js';
import { Postdate } from '../../lib/Postdate.js';
import type { PostdateProps } from '../../lib/postdateProps.js';
import { TEST_PROPS, testApp } from './support/synthesize.js';

const { senderMaxConcurrency: _, ...withoutConcurrency } = TEST_PROPS.postdate;

function synth(props: Partial<PostdateProps>): Template {
  const stack = new Stack(testApp(), 'S');
  new Postdate(stack, 'P', { ...withoutConcurrency, ...props });
  return Template.fromStack(stack);
}

function senderMapping(template: Template): Record<string, unknown> {
  const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'))
    .map((resource) => resource.Properties as Record<string, unknown>)
    .filter(
      (properties) =>
        properties.BatchSize === 10 && JSON.stringify(properties.EventSourceArn).includes('SendQueue'),
    );
  expect(mappings).toHaveLength(1);
  return mappings[0] as Record<string, unknown>;
}

function senderVariables(template: Template): Record<string, string> {
  const senders = Object.values(template.findResources('AWS::Lambda::Function')).filter((resource) =>
    JSON.stringify(resource.Properties.Description ?? '').includes('Postdate sender'),
  );
  expect(senders).toHaveLength(1);
  return senders[0]?.Properties.Environment.Variables as Record<string, string>;
}

describe("the sender's event source: MaximumConcurrency or provisioned pollers", () => {
  it('keeps MaximumConcurrency without senderPollers', () => {
    const template = synth({ senderMaxConcurrency: 300 });
    const mapping = senderMapping(template);
    expect(mapping.ScalingConfig).toEqual({ MaximumConcurrency: 300 });
    expect(mapping.ProvisionedPollerConfig).toBeUndefined();
    expect(senderVariables(template).POSTDATE_SENDER_MAX_CONCURRENCY).toBe('300');
  });

  it('puts the event source in provisioned mode with senderPollers, and no MaximumConcurrency', () => {
    const template = synth({ senderPollers: { minimum: 10, maximum: 150 } });
    const mapping = senderMapping(template);
    expect(mapping.ProvisionedPollerConfig).toEqual({ MinimumPollers: 10, MaximumPollers: 150 });
    expect(mapping.ScalingConfig).toBeUndefined();
  });

  it("gives each sender 1/(10 × maximum pollers) of the fleet's rate in provisioned mode", () => {
    const variables = senderVariables(
      synth({ senderPollers: { minimum: 2, maximum: 150 }, maxSendRate: 14 }),
    );
    // POSTDATE_SENDER_MAX_CONCURRENCY is what each sender divides POSTDATE_MAX_SEND_RATE by.
    expect(variables.POSTDATE_SENDER_MAX_CONCURRENCY).toBe('1500');
    expect(variables.POSTDATE_MAX_SEND_RATE).toBe('14');
  });

  it('refuses senderPollers beside senderMaxConcurrency, and pollers out of range, naming the prop', () => {
    expect(() => synth({ senderMaxConcurrency: 20, senderPollers: { minimum: 2, maximum: 10 } })).toThrow(
      /senderPollers and senderMaxConcurrency are exclusive/,
    );
    expect(() => synth({ senderPollers: { minimum: 1, maximum: 10 } })).toThrow(
      /senderPollers\.minimum must be a whole number from 2 to 200, got 1/,
    );
    expect(() => synth({ senderPollers: { minimum: 2, maximum: 2001 } })).toThrow(
      /senderPollers\.maximum must be a whole number from 2 to 2000, got 2001/,
    );
    expect(() => synth({ senderPollers: { minimum: 50, maximum: 20 } })).toThrow(
      /senderPollers\.minimum \(50\) must not exceed senderPollers\.maximum \(20\)/,
    );
  });

  it('reads provisioned mode from the app context (-c senderMinPollers, -c senderMaxPollers)', () => {
    const pollersOf = (context: Record<string, unknown>) =>
      settingsFromContext((key) => context[key]).stackProps.postdate.senderPollers;
    expect(pollersOf({})).toBeUndefined();
    expect(pollersOf({ senderMinPollers: '4', senderMaxPollers: '150' })).toEqual({
      minimum: 4,
      maximum: 150,
    });
    expect(pollersOf({ senderMaxPollers: '150' })).toEqual({ minimum: 2, maximum: 150 });
  });
});
