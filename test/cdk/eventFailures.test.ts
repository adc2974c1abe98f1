/**
 * The event producer's give-ups can be replayed (DESIGN §11, docs/decisions/0134): it gives a batch
 * up while the stream still holds it for long enough to replay, its failure queue is a stack output,
 * and so is everything `postdate event-failures redrive --stack NAME` hands the producer's logic.
 */
import { describe, expect, it } from 'vitest';
import { EVENTS_STREAM, STREAM_RETENTION_HOURS } from '../../lib/eventSourceLayout.js';
import { STACK_OUTPUT } from '../../lib/stackOutputs.js';
import { logicalIdOf, synthesizePostdate } from './support/synthesize.js';

describe("the event producer's failures", () => {
  const { template, stack } = synthesizePostdate();
  const postdate = stack.postdate;

  it('gives a batch up with at least 12 of the stream’s 24 hours left to replay it, into the event failure queue', () => {
    expect(STREAM_RETENTION_HOURS - EVENTS_STREAM.maxRecordAgeHours).toBeGreaterThanOrEqual(12);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalIdOf(postdate.functions.events) },
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: EVENTS_STREAM.retryAttempts,
      MaximumRecordAgeInSeconds: EVENTS_STREAM.maxRecordAgeHours * 3600,
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [logicalIdOf(postdate.eventFailureQueue), 'Arn'] } },
      },
    });
  });

  it('names the failure queue, the webhook queue, the bus and the bucket in its outputs', () => {
    template.hasOutput(STACK_OUTPUT.eventFailureQueueUrl, {
      Value: { Ref: logicalIdOf(postdate.eventFailureQueue) },
    });
    template.hasOutput(STACK_OUTPUT.webhookQueueUrl, { Value: { Ref: logicalIdOf(postdate.webhookQueue) } });
    template.hasOutput(STACK_OUTPUT.eventBusName, {
      Value: { Ref: logicalIdOf(postdate.eventBus) },
    });
    template.hasOutput(STACK_OUTPUT.attachmentBucketName, {
      Value: { Ref: logicalIdOf(postdate.attachmentBucket) },
    });
  });

  it('tells the alarm’s reader what to run', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    const descriptions = alarms.map((alarm) => String(alarm.Properties.AlarmDescription));
    expect(descriptions.some((text) => text.includes('postdate event-failures redrive'))).toBe(true);
  });

  it('says the given-up events may have missed the bus, not only the webhooks (decision 0252)', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    const description = alarms
      .map((alarm) => String(alarm.Properties.AlarmDescription))
      .find((text) => text.includes('postdate event-failures redrive'));
    expect(description).toMatch(/webhook.*bus|bus.*webhook/);
  });
});
