import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { METRICS, SENDER_METRIC } from '../../lambdas/core/metricNames.js';
import { synthesizePostdate, TEST_PROPS } from './support/synthesize.js';

/** DESIGN §5, §6: the relay outage is alarmed, on the dashboard, and its probe interval is a prop. */
describe('the RelayUnavailable alarm', () => {
  const { template } = synthesizePostdate({
    ...TEST_PROPS,
    postdate: { ...TEST_PROPS.postdate, relayProbeSeconds: 45 },
  });

  it('watches the metric the senders and the sweeper publish, and notifies the alarm topic', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRICS.namespace,
      MetricName: SENDER_METRIC.relayUnavailable,
      Dimensions: [
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

  it('has a dashboard widget for the breaker and the pauses', () => {
    const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboards[0]?.Properties.DashboardBody);
    expect(body).toContain('Relay and sending gate');
    expect(body).toContain(SENDER_METRIC.sendingPaused);
  });

  it('sets POSTDATE_RELAY_PROBE_SECONDS on the functions from the prop', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ POSTDATE_RELAY_PROBE_SECONDS: '45' }) },
    });
  });
});
