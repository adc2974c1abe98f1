import { Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { METRICS, SENDER_METRIC } from '../../lambdas/core/metricNames.js';
import { Postdate } from '../../lib/Postdate.js';
import { type Resource, synthesizePostdate, TEST_PROPS, testApp } from './support/synthesize.js';

/** DESIGN §5, §6: the relay outage is alarmed, on the dashboard, and its probe interval is a prop. */
describe('the RelayUnavailable alarm', () => {
  const { template } = synthesizePostdate({
    ...TEST_PROPS,
    postdate: { ...TEST_PROPS.postdate, relayProbeSeconds: 45 },
  });

  it('watches the metric the senders and the sweeper publish for the relay, and notifies the alarm topic', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRICS.namespace,
      MetricName: SENDER_METRIC.relayUnavailable,
      Dimensions: [
        { Name: 'relay', Value: 'default' },
        { Name: 'service', Value: METRICS.service },
        { Name: 'stack', Value: 'PostdateUnderTest' },
      ],
      Statistic: 'Maximum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'ignore',
      AlarmActions: Match.anyValue(),
      OKActions: Match.anyValue(),
    });
  });

  it('has a dashboard widget for the breaker, the pauses and the drain of every relay', () => {
    const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboards[0]?.Properties.DashboardBody);
    expect(body).toContain('Relay and sending gate');
    expect(body).toContain(SENDER_METRIC.sendingPaused);
    expect(body).toContain(SENDER_METRIC.relaysDisabled);
  });

  it('sets POSTDATE_RELAY_PROBE_SECONDS on the functions from the prop', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ POSTDATE_RELAY_PROBE_SECONDS: '45' }) },
    });
  });
});

/**
 * DESIGN §15 and docs/runbook.md §5a, with two relays: an alarm is on while what its description
 * says is true, and tells when that starts and ends — not every quiet minute. A relay's outage is its
 * own alarm, so the second relay failing while the first is down (or drained) is news.
 */
describe('the relay alarms with several relays', () => {
  const ACCOUNT = { account: '123456789012', region: 'eu-west-1' } as const;
  const stack = new Stack(testApp(), 'Relays', { env: ACCOUNT });
  new Postdate(stack, 'Mail', {
    defaultFrom: 'noreply@example.com',
    allowedFrom: ['*@example.com'],
    sweepInterval: Duration.minutes(3),
    relays: ['primary', 'backup'].map((name) => ({
      name,
      host: `smtp.${name}.example`,
      secret: secretsmanager.Secret.fromSecretCompleteArn(
        stack,
        `Secret-${name}`,
        `arn:aws:secretsmanager:${ACCOUNT.region}:${ACCOUNT.account}:secret:${name}-AbCdEf`,
      ),
    })),
  });
  const template = Template.fromStack(stack);
  const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[];
  const watching = (metricName: string) =>
    alarms.map((alarm) => alarm.Properties).filter((properties) => properties.MetricName === metricName);

  it("RelayFailover watches the sweeper's gauge: its maximum over one sweep interval, a late sweep keeping the state", () => {
    expect(watching(SENDER_METRIC.failoverSends)).toEqual([]);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRICS.namespace,
      MetricName: 'RelayFailover',
      Dimensions: [
        { Name: 'service', Value: METRICS.service },
        { Name: 'stack', Value: 'Relays' },
      ],
      Statistic: 'Maximum',
      Period: 180,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'ignore',
      AlarmActions: Match.anyValue(),
      OKActions: Match.anyValue(),
    });
    // It is on whenever core/relays.ts relayGauges says so: the first relay unavailable, disabled or
    // its daily quota spent (decision 0198); the description names each, so the operator looks for it.
    const [failover] = watching('RelayFailover');
    expect(failover?.AlarmDescription).toMatch(/unavailable, disabled or its daily quota spent/);
  });

  it('RelayUnavailable is one alarm per relay, on its own series, and none says the breaker holds every message', () => {
    const perRelay = watching(SENDER_METRIC.relayUnavailable);
    const relayOf = (properties: Record<string, unknown>) =>
      (properties.Dimensions as { Name: string; Value: string }[]).find((d) => d.Name === 'relay')?.Value;
    expect(perRelay.map(relayOf)).toEqual(['primary', 'backup']);
    for (const properties of perRelay) {
      expect(properties).toMatchObject({ Statistic: 'Maximum', Period: 180, TreatMissingData: 'ignore' });
      expect(properties.AlarmDescription).toContain(`relay ${relayOf(properties)}`);
      expect(properties.AlarmDescription).not.toMatch(/every message/);
    }
  });
});
