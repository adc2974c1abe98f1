import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import { describe, expect, it } from 'vitest';
import { WEBHOOK_PARTITION_PREFIX } from '../../lambdas/store/webhookStore.js';
import { Postdate } from '../../lib/Postdate.js';
import { type PostdateProps, PostdatePropsError } from '../../lib/postdateProps.js';
import { EVENTS_STREAM_FILTER, WEBHOOK_QUEUE } from '../../lib/webhookLayout.js';
import { synthesizePostdate, TEST_PROPS, testApp } from './support/synthesize.js';

const { template } = synthesizePostdate();

const functionWithEnv = (variable: string) =>
  template.findResources('AWS::Lambda::Function', {
    Properties: { Environment: { Variables: Match.objectLike({ [variable]: Match.anyValue() }) } },
  });

describe('events and webhooks in AWS (DESIGN §11)', () => {
  it('creates a bus and gives the event producer its name and the right to put events', () => {
    template.resourceCountIs('AWS::Events::EventBus', 1);
    const producers = functionWithEnv('POSTDATE_EVENT_BUS_NAME');
    expect(Object.keys(producers)).toHaveLength(1);
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Action: 'events:PutEvents', Effect: 'Allow' })]),
      },
    });
  });

  it('feeds the producer from the stream with its own filter, bisecting and sending failures to a queue', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BisectBatchOnFunctionError: true,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      FilterCriteria: { Filters: [{ Pattern: JSON.stringify(EVENTS_STREAM_FILTER) }] },
      DestinationConfig: { OnFailure: { Destination: Match.anyValue() } },
      StartingPosition: 'TRIM_HORIZON',
    });
  });

  it('delivers from a queue with a DLQ, partial batch failures and bounded concurrency', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: WEBHOOK_QUEUE.visibilityTimeoutSeconds,
      RedrivePolicy: {
        maxReceiveCount: WEBHOOK_QUEUE.maxReceiveCount,
        deadLetterTargetArn: Match.anyValue(),
      },
      SqsManagedSseEnabled: true,
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: Match.anyValue() },
      EventSourceArn: Match.anyValue(),
    });
    // The producer, the delivery function and the api all know the webhook queue.
    expect(Object.keys(functionWithEnv('POSTDATE_WEBHOOK_QUEUE_URL')).length).toBe(3);
  });

  it('scopes the webhook functions to webhook items of the table', () => {
    for (const prefix of ['WHEP#*', 'WHDL#*']) {
      template.hasResourceProperties('AWS::IAM::Policy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [prefix] } },
            }),
          ]),
        },
      });
    }
  });

  it("lets the api query only the failed deliveries' entries of the due index", () => {
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: 'dynamodb:Query',
            Condition: {
              'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${WEBHOOK_PARTITION_PREFIX.failed}*`] },
            },
          }),
        ]),
      },
    });
  });

  it('alarms on deliveries that end failed, to the alarm topic', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'WebhookDeliveriesFailed',
      Namespace: 'Postdate',
      Dimensions: [
        { Name: 'service', Value: 'postdate' },
        { Name: 'stack', Value: 'PostdateUnderTest' },
      ],
      Threshold: 1,
      AlarmActions: [Match.anyValue()],
    });
  });

  it('sets POSTDATE_WEBHOOK_RETRY_HOURS from its prop and checks its range', () => {
    const app = testApp();
    const stack = new Stack(app, 'Hours');
    new Postdate(stack, 'P', { ...TEST_PROPS.postdate, webhookRetryHours: 6 });
    const hours = Template.fromStack(stack).findResources('AWS::Lambda::Function', {
      Properties: { Environment: { Variables: Match.objectLike({ POSTDATE_WEBHOOK_RETRY_HOURS: '6' }) } },
    });
    expect(Object.keys(hours).length).toBeGreaterThanOrEqual(2);
    expect(
      () => new Postdate(new Stack(testApp(), 'Bad'), 'P', { ...TEST_PROPS.postdate, webhookRetryHours: 0 }),
    ).toThrow(PostdatePropsError);
  });

  it('bounds the delivery function by webhookMaxConcurrency (default 10, 2–1000; issue 34)', () => {
    const deliveryScaling = (template: Template) =>
      Object.values(
        template.findResources('AWS::Lambda::EventSourceMapping', {
          Properties: { ScalingConfig: Match.anyValue(), EventSourceArn: Match.anyValue() },
        }),
      ).map((mapping) => (mapping as { Properties: { ScalingConfig: unknown } }).Properties.ScalingConfig);
    expect(deliveryScaling(template)).toContainEqual({ MaximumConcurrency: 10 });
    const stack = new Stack(testApp(), 'Wide');
    new Postdate(stack, 'P', { ...TEST_PROPS.postdate, webhookMaxConcurrency: 200 });
    expect(deliveryScaling(Template.fromStack(stack))).toContainEqual({ MaximumConcurrency: 200 });
    expect(
      () =>
        new Postdate(new Stack(testApp(), 'Bad'), 'P', { ...TEST_PROPS.postdate, webhookMaxConcurrency: 1 }),
    ).toThrow(/webhookMaxConcurrency must be a whole number from 2 to 1000, got 1/);
  });

  it('uses a bus passed in its props instead of creating one', () => {
    const stack = new Stack(testApp(), 'OwnBus');
    const bus = new events.EventBus(stack, 'Mine', { eventBusName: 'mine' });
    const postdate = new Postdate(stack, 'P', { ...TEST_PROPS.postdate, eventBus: bus });
    expect(postdate.eventBus).toBe(bus);
    Template.fromStack(stack).resourceCountIs('AWS::Events::EventBus', 1);
  });

  describe('busEvents: which event types go on the bus (issue 32, decision 0178)', () => {
    /** The event producer's POSTDATE_BUS_EVENTS, and whether any role may put events. */
    const synthesized = (busEvents?: PostdateProps['busEvents']) => {
      const stack = new Stack(testApp(), `Bus${String(busEvents).replace(/\W/g, '')}`);
      new Postdate(stack, 'P', { ...TEST_PROPS.postdate, ...(busEvents === undefined ? {} : { busEvents }) });
      const template = Template.fromStack(stack);
      const [producer] = Object.values(
        template.findResources('AWS::Lambda::Function', {
          Properties: {
            Environment: { Variables: Match.objectLike({ POSTDATE_EVENT_BUS_NAME: Match.anyValue() }) },
          },
        }),
      );
      const putEvents = Object.values(template.findResources('AWS::IAM::Policy')).flatMap((policy) =>
        (policy.Properties.PolicyDocument.Statement as { Action: string | string[] }[]).filter((statement) =>
          [statement.Action].flat().includes('events:PutEvents'),
        ),
      );
      return { variable: producer?.Properties.Environment.Variables.POSTDATE_BUS_EVENTS, putEvents };
    };

    it("puts every event on the bus by default ('all'), as before the prop", () => {
      const { variable, putEvents } = synthesized();
      expect(variable).toBe('all');
      expect(putEvents).toHaveLength(1);
    });

    it("with 'none' (or an empty list), tells the producer so and grants no events:PutEvents", () => {
      for (const busEvents of ['none', []] as const) {
        const { variable, putEvents } = synthesized(busEvents);
        expect(variable).toBe('none');
        expect(putEvents).toEqual([]);
      }
    });

    it('with a list, gives the producer that list and a grant for those types only (test/iam/busEventsGrant.test.ts)', () => {
      const { variable, putEvents } = synthesized(['message.sent', 'message.dead']);
      expect(variable).toBe('message.sent,message.dead');
      expect(putEvents).toEqual([
        expect.objectContaining({
          Condition: expect.objectContaining({
            'ForAllValues:StringEquals': {
              'events:source': 'postdate',
              'events:detail-type': ['message.sent', 'message.dead'],
            },
          }),
        }),
      ]);
    });

    it('refuses a type that is no message event type at synth, naming the prop', () => {
      expect(() =>
        synthesized([
          'message.sent',
          'message.snet',
          'webhook.test',
        ] as unknown as PostdateProps['busEvents']),
      ).toThrow(/busEvents: "message.snet", "webhook.test" is not a message event type/);
      expect(() => synthesized('some' as unknown as PostdateProps['busEvents'])).toThrow(
        /busEvents must be 'all', 'none' or a list of message event types, got "some"/,
      );
    });
  });
});
