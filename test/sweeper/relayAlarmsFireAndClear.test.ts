import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { functionMetrics } from '../../lambdas/adapters/powertoolsMetrics.js';
import { METRICS } from '../../lambdas/core/metricNames.js';
import {
  type BreakerState,
  opened,
  probeClaimed,
  probeSucceeded,
  throttled,
} from '../../lambdas/core/relayBreaker.js';
import type { Log } from '../../lambdas/ports/Log.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { wireSweeper } from '../../lambdas/sweeper/handler.js';
import { Postdate } from '../../lib/Postdate.js';
import { type Resource, testApp } from '../cdk/support/synthesize.js';
import { documentClient, freshQueues, freshTable, LOCAL_AWS } from '../support/awsLocal.js';
import { type AlarmOf, alarmOf, datapoints, type EmfDocument } from '../support/emfAlarms.js';

/**
 * DESIGN §15: "a metric and an alarm say when mail is leaving through anything but the first relay",
 * and §5/§6: a relay's outage is alarmed. Review 0244, from an operator's side: the alarms of a stack
 * with the relays `primary` and `backup`, read from the synthesized template, are evaluated as
 * CloudWatch evaluates them (their statistic over the datapoints of one period, their comparison and
 * threshold, missing data ignored) on the EMF documents the sweeper really writes — wired as its
 * Lambda entry wires it, its metrics through the functions' own Powertools set-up — after each run
 * over the relays' gates in DynamoDB Local. Each alarm must go to ALARM when what its description
 * says becomes true, and back to OK when it ends. Modules: sweeper/sweep.ts (the gauges),
 * core/relays.ts `relayGauges`, adapters/powertoolsMetrics.ts, lib/constructs/Ops.ts (the alarms).
 */

const STACK = 'Relays';
const RELAYS = ['primary', 'backup'] as const;
const GATE_SETTINGS = { probeIntervalMs: 30_000, probeTimeoutMs: 10_000 };

type AlarmState = 'ALARM' | 'OK' | 'unchanged';

/** The stack's relay alarms, as the template declares them. */
function relayAlarms(): Map<string, AlarmOf> {
  const stack = new Stack(testApp(), STACK, { env: { account: '123456789012', region: 'eu-west-1' } });
  new Postdate(stack, 'Mail', {
    defaultFrom: 'noreply@example.com',
    allowedFrom: ['*@example.com'],
    relays: RELAYS.map((name) => ({
      name,
      host: `smtp.${name}.example`,
      secret: secretsmanager.Secret.fromSecretCompleteArn(
        stack,
        `Secret-${name}`,
        `arn:aws:secretsmanager:eu-west-1:123456789012:secret:${name}-AbCdEf`,
      ),
    })),
  });
  const alarms = new Map<string, AlarmOf>();
  for (const [id, resource] of Object.entries(
    Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm'),
  )) {
    const properties = (resource as Resource).Properties;
    if (properties.Namespace !== METRICS.namespace) continue;
    const metricName = properties.MetricName as string;
    if (metricName !== 'RelayFailover' && metricName !== 'RelayUnavailable') continue;
    const dimensions = Object.fromEntries(
      (properties.Dimensions as { Name: string; Value: string }[]).map(({ Name, Value }) => [Name, Value]),
    );
    const name = metricName === 'RelayFailover' ? 'RelayFailover' : `RelayUnavailable-${dimensions.relay}`;
    alarms.set(name, alarmOf(id, properties));
  }
  return alarms;
}

/** One period's evaluation, as CloudWatch makes it for these alarms (one period, one datapoint each run). */
function evaluate(alarm: AlarmOf, documents: readonly EmfDocument[]): AlarmState {
  const values = datapoints(alarm, documents);
  if (values.length === 0) {
    // Missing data: `ignore` keeps the state the alarm had.
    expect(alarm.treatMissingData).toBe('ignore');
    return 'unchanged';
  }
  expect(alarm.statistic).toBe('Maximum');
  const value = Math.max(...values);
  const breaching =
    alarm.comparison === 'GreaterThanOrEqualToThreshold'
      ? value >= alarm.threshold
      : alarm.comparison === 'GreaterThanThreshold'
        ? value > alarm.threshold
        : Number.NaN;
  expect(typeof breaching, `${alarm.id}: ${alarm.comparison}`).toBe('boolean');
  return breaching ? 'ALARM' : 'OK';
}

describe('the relay alarms fire and clear on what the sweeper publishes (DESIGN §15)', () => {
  let alarms: Map<string, AlarmOf>;
  beforeAll(() => {
    alarms = relayAlarms();
    expect([...alarms.keys()].sort()).toEqual([
      'RelayFailover',
      'RelayUnavailable-backup',
      'RelayUnavailable-primary',
    ]);
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  async function world() {
    const { tableName } = await freshTable('relay-alarms');
    const { urls } = await freshQueues();
    const documents = documentClient();
    const env = {
      AWS_REGION: LOCAL_AWS.region,
      AWS_ACCESS_KEY_ID: LOCAL_AWS.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_AWS.credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
      AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
      POSTDATE_LOCAL: 'true',
      POSTDATE_STACK: STACK,
      POSTDATE_TABLE_NAME: tableName,
      POSTDATE_SEND_QUEUE_URL: urls.send,
      POSTDATE_SEND_DLQ_URL: urls.sendDeadLetter,
      POSTDATE_RELAYS: JSON.stringify(
        RELAYS.map((name, index) => ({
          name,
          host: '127.0.0.1',
          port: 2525 + index,
          secure: false,
          require_tls: false,
        })),
      ),
    };
    const quiet = () => {};
    const log: Log = { info: quiet, warn: quiet, error: quiet };
    let clockMs = Date.now();
    const metrics = functionMetrics(env);
    const sweepOnce = wireSweeper(
      env,
      log as never,
      { count: (name, value, relay) => metrics.add(name, MetricUnit.Count, value, relay) },
      () => new Date(clockMs),
    );
    /** One sweeper run and what it wrote to stdout, as its Lambda entry publishes it. */
    const run = async (): Promise<EmfDocument[]> => {
      const written: string[] = [];
      const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        written.push(String(chunk));
        return true;
      });
      try {
        await sweepOnce();
        metrics.publish();
      } finally {
        spy.mockRestore();
      }
      return written
        .flatMap((chunk) => chunk.split('\n'))
        .filter((line) => line.includes('CloudWatchMetrics'))
        .map((line) => JSON.parse(line) as EmfDocument);
    };
    /** Each relay alarm's state after one run. */
    const states = async () => {
      const documents = await run();
      return Object.fromEntries([...alarms].map(([name, alarm]) => [name, evaluate(alarm, documents)]));
    };
    const gate = (name: string) => new DynamoSendingGate(documents, tableName, name);
    const move = async (name: string, next: (breaker: BreakerState) => BreakerState | undefined) => {
      const { breaker } = await gate(name).read();
      const written = next(breaker);
      if (written === undefined) throw new Error(`no transition of ${name}'s breaker`);
      expect(await gate(name).writeBreaker(breaker, written)).toBe('written');
    };
    const now = () => new Date(clockMs);
    return {
      states,
      gate,
      advance: (ms: number) => {
        clockMs += ms;
      },
      open: (name: string) =>
        move(name, (breaker) => opened(breaker, { reason: '421: greeting' }, now(), GATE_SETTINGS, '7')),
      /** The probe that succeeds, as a sender runs it once the probe is due. */
      close: async (name: string) => {
        clockMs += GATE_SETTINGS.probeIntervalMs;
        await move(name, (breaker) => probeClaimed(breaker, 'probe-1', now(), GATE_SETTINGS));
        await move(name, (breaker) => probeSucceeded(breaker, 'probe-1', now()));
      },
      spendQuota: (name: string) =>
        move(name, (breaker) =>
          throttled(breaker, now(), { ...GATE_SETTINGS, quotaHoldMs: 300_000 }, 'quota'),
        ),
    };
  }

  const OK = { RelayFailover: 'OK', 'RelayUnavailable-primary': 'OK', 'RelayUnavailable-backup': 'OK' };

  it('the first relay down: RelayFailover and its RelayUnavailable fire; both down: RelayFailover clears, both relays alarm; back: all clear', async () => {
    const stack = await world();
    expect(await stack.states()).toEqual(OK);

    await stack.open('primary');
    expect(await stack.states()).toEqual({
      ...OK,
      RelayFailover: 'ALARM',
      'RelayUnavailable-primary': 'ALARM',
    });

    // Mail leaves through no relay: not a failover, each relay's own alarm says it.
    await stack.open('backup');
    expect(await stack.states()).toEqual({
      RelayFailover: 'OK',
      'RelayUnavailable-primary': 'ALARM',
      'RelayUnavailable-backup': 'ALARM',
    });

    await stack.close('backup');
    expect(await stack.states()).toEqual({
      ...OK,
      RelayFailover: 'ALARM',
      'RelayUnavailable-primary': 'ALARM',
    });
    await stack.close('primary');
    expect(await stack.states()).toEqual(OK);
  });

  it("the first relay drained: RelayFailover fires, its RelayUnavailable does not; enabled: clear. Its daily quota spent: RelayFailover fires until the hold's end", async () => {
    const stack = await world();
    await stack.gate('primary').setDisabled({ reason: 'maintenance', at: new Date().toISOString() });
    expect(await stack.states()).toEqual({ ...OK, RelayFailover: 'ALARM' });
    await stack.gate('primary').setDisabled(undefined);
    expect(await stack.states()).toEqual(OK);

    await stack.spendQuota('primary');
    expect(await stack.states()).toEqual({ ...OK, RelayFailover: 'ALARM' });
    stack.advance(300_001);
    expect(await stack.states()).toEqual(OK);
  });
});
