import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { type App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { functionMetrics } from '../../lambdas/adapters/powertoolsMetrics.js';
import {
  METRICS,
  PER_RELAY_METRICS,
  RELAY_METRIC,
  SENDER_METRIC,
  SWEEPER_METRIC,
  WEBHOOK_METRIC,
} from '../../lambdas/core/metricNames.js';
import { DEFAULT_RELAY, parseRelays, RELAYS_VARIABLE } from '../../lambdas/core/relays.js';
import { Postdate } from '../../lib/Postdate.js';
import { type Resource, testApp } from './support/synthesize.js';

/**
 * DESIGN §6: "Every metric carries the stack's own dimension, so two Postdates in one account and
 * region never add up in each other's alarms or dashboards", and an alarm can only fire on a metric
 * some function emits. The metrics are the real EMF documents the functions' own Powertools set-up
 * writes, given each function's environment as the template sets it; the alarms and the dashboard
 * are read from the synthesized template.
 */

const ACCOUNT = { account: '123456789012', region: 'eu-west-1' } as const;
const EVERY_NAME = [
  ...Object.values(RELAY_METRIC),
  ...Object.values(SENDER_METRIC),
  ...Object.values(SWEEPER_METRIC.waiting),
  SWEEPER_METRIC.redispatched,
  SWEEPER_METRIC.staleDeadLettersRemoved,
  // The gauge behind RelayFailover (DESIGN §15), published by the sweeper from core/relays.ts relayInUse.
  SWEEPER_METRIC.relayFailover,
  // The gauge behind RefusedRecords (decision 0166): overdue messages a newer writer made.
  SWEEPER_METRIC.refusedRecords,
  ...Object.values(WEBHOOK_METRIC),
];

/** A dimension set in a comparable form: `name=value` pairs, sorted. */
type Dimensions = readonly string[];

interface Deployed {
  readonly stackName: string;
  readonly template: Template;
}

/**
 * One Postdate in its own stack, all of it in one account and region; bounces when asked; with two
 * relays (DESIGN §15) when `relays` names them.
 */
function deploy(app: App, stackName: string, withBounces: boolean, relays: readonly string[] = []): Stack {
  const stack = new Stack(app, stackName, { env: ACCOUNT });
  new Postdate(stack, 'Mail', {
    defaultFrom: 'noreply@example.org',
    allowedFrom: ['*@example.org'],
    ...(relays.length === 0
      ? {}
      : {
          relays: relays.map((name) => ({
            name,
            host: `smtp.${name}.example`,
            secret: secretsmanager.Secret.fromSecretCompleteArn(
              stack,
              `Secret-${name}`,
              `arn:aws:secretsmanager:${ACCOUNT.region}:${ACCOUNT.account}:secret:${name}-AbCdEf`,
            ),
          })),
        }),
    ...(withBounces
      ? {
          sesNotificationTopic: sns.Topic.fromTopicArn(
            stack,
            'SesFeedback',
            `arn:aws:sns:${ACCOUNT.region}:${ACCOUNT.account}:ses-feedback`,
          ),
        }
      : {}),
  });
  return stack;
}

/** The functions of Postdate (those given the outbox table): their environments, literal values only. */
function functionEnvironments(template: Template): Record<string, string>[] {
  const functions = Object.values(template.findResources('AWS::Lambda::Function')) as Resource[];
  const environments = functions
    .map(
      (fn) => (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables,
    )
    .filter((variables) => variables?.POSTDATE_TABLE_NAME !== undefined)
    .map((variables) =>
      Object.fromEntries(
        Object.entries(variables ?? {}).filter(
          (entry): entry is [string, string] => typeof entry[1] === 'string',
        ),
      ),
    );
  expect(environments.length).toBeGreaterThanOrEqual(7);
  return environments;
}

/**
 * Every metric name, emitted once through the functions' set-up with `environment` — a metric the
 * sender publishes per relay (DESIGN §15) once for each relay of the environment, only as the sender
 * does it — and the dimension sets each name is written with, read from the EMF documents
 * Powertools writes to stdout.
 */
function emittedDimensions(environment: Record<string, string>): Map<string, Dimensions[]> {
  const relaysJson = environment[RELAYS_VARIABLE];
  const relays =
    relaysJson === undefined ? [DEFAULT_RELAY] : parseRelays(relaysJson).map((relay) => relay.name);
  const written: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  try {
    const metrics = functionMetrics(environment);
    for (const name of EVERY_NAME) {
      if (PER_RELAY_METRICS.has(name)) {
        for (const relay of relays) metrics.add(name, MetricUnit.Count, 1, relay);
      } else {
        metrics.add(name, MetricUnit.Count, 1);
      }
      metrics.publish();
    }
  } finally {
    spy.mockRestore();
  }
  const emitted = new Map<string, Dimensions[]>();
  for (const line of written
    .flatMap((chunk) => chunk.split('\n'))
    .filter((l) => l.includes('CloudWatchMetrics'))) {
    const document = JSON.parse(line) as Record<string, unknown> & {
      _aws: {
        CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[];
      };
    };
    for (const directive of document._aws.CloudWatchMetrics) {
      expect(directive.Namespace).toBe(METRICS.namespace);
      for (const set of directive.Dimensions) {
        const dimensions = set.map((name) => `${name}=${String(document[name])}`).sort();
        for (const metric of directive.Metrics) {
          emitted.set(metric.Name, [...(emitted.get(metric.Name) ?? []), dimensions]);
        }
      }
    }
  }
  expect([...emitted.keys()].sort()).toEqual([...new Set(EVERY_NAME)].sort());
  return emitted;
}

/** The dimension sets the stack's functions write each metric with (every function, every name). */
function stackEmissions(template: Template): Map<string, Dimensions[]> {
  const byName = new Map<string, Dimensions[]>();
  for (const environment of functionEnvironments(template)) {
    for (const [name, sets] of emittedDimensions(environment)) {
      byName.set(name, [...(byName.get(name) ?? []), ...sets]);
    }
  }
  return byName;
}

function postdateAlarms(template: Template): { id: string; metricName: string; dimensions: Dimensions }[] {
  // An alarm on a metric query (a labelled metric is written so) names no metric here: none may be Postdate's.
  for (const [id, alarm] of Object.entries(template.findResources('AWS::CloudWatch::Alarm'))) {
    expect(JSON.stringify((alarm as Resource).Properties.Metrics ?? []), id).not.toContain(METRICS.namespace);
    // An alarm that names a unit watches only datapoints written in that unit: none names one, so
    // each sees its metric whatever unit the function (Count, Milliseconds) or AWS writes it in.
    expect((alarm as Resource).Properties.Unit, id).toBeUndefined();
  }
  return Object.entries(template.findResources('AWS::CloudWatch::Alarm'))
    .map(([id, alarm]) => [id, (alarm as Resource).Properties] as const)
    .filter(([, properties]) => properties.Namespace === METRICS.namespace)
    .map(([id, properties]) => ({
      id,
      metricName: properties.MetricName as string,
      dimensions: (properties.Dimensions as { Name: string; Value: unknown }[])
        .map((dimension) => `${dimension.Name}=${String(dimension.Value)}`)
        .sort(),
    }));
}

/** The dashboard's body with every `Fn::GetAtt [id, Arn]` written as `arn-of:id`, parsed. */
function dashboardBody(template: Template): {
  widgets: { type: string; properties: Record<string, unknown> }[];
} {
  const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard')) as Resource[];
  expect(dashboards).toHaveLength(1);
  const body = dashboards[0]?.Properties.DashboardBody as string | { 'Fn::Join': [string, unknown[]] };
  const text =
    typeof body === 'string'
      ? body
      : body['Fn::Join'][1]
          .map((part) => {
            if (typeof part === 'string') return part;
            const getAtt = (part as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt'];
            if (getAtt !== undefined) return `arn-of:${getAtt[0]}`;
            return `token:${JSON.stringify(part).replaceAll('"', "'")}`;
          })
          .join(body['Fn::Join'][0]);
  return JSON.parse(text);
}

/** Every Postdate metric a dashboard graph draws: its name and dimensions. */
function dashboardMetrics(template: Template): { metricName: string; dimensions: Dimensions }[] {
  return dashboardBody(template)
    .widgets.filter((widget) => widget.type === 'metric')
    .flatMap((widget) => (widget.properties.metrics as unknown[][]) ?? [])
    .filter((metric) => metric[0] === METRICS.namespace)
    .map((metric) => {
      const fields = metric.filter((field) => typeof field === 'string') as string[];
      const pairs: string[] = [];
      for (let index = 2; index + 1 < fields.length; index += 2)
        pairs.push(`${fields[index]}=${fields[index + 1]}`);
      return { metricName: fields[1] ?? '', dimensions: pairs.sort() };
    });
}

describe.each([
  { variant: 'without SES feedback', withBounces: false },
  { variant: 'with SES feedback (the bounces function)', withBounces: true },
])('metric dimensions, $variant', ({ withBounces }) => {
  let staging: Deployed;
  let production: Deployed;
  let emittedByStack: Map<Deployed, Map<string, Dimensions[]>>;

  beforeAll(() => {
    // Both stacks exist before either is synthesized (one synthesis per app).
    const app = testApp();
    const stacks = [
      deploy(app, 'PostdateStaging', withBounces),
      deploy(app, 'PostdateProduction', withBounces, ['primary', 'backup']),
    ];
    [staging, production] = stacks.map((stack) => ({
      stackName: stack.stackName,
      template: Template.fromStack(stack),
    })) as [Deployed, Deployed];
    emittedByStack = new Map([
      [staging, stackEmissions(staging.template)],
      [production, stackEmissions(production.template)],
    ]);
  });

  it("every metric a function emits carries its stack's own dimension", () => {
    for (const deployed of [staging, production]) {
      for (const [name, sets] of emittedByStack.get(deployed) ?? []) {
        for (const dimensions of sets) {
          expect(
            dimensions.some((pair) => pair.endsWith(`=${deployed.stackName}`)),
            `${name} in ${deployed.stackName}: ${dimensions.join(', ')}`,
          ).toBe(true);
        }
      }
    }
  });

  it('every alarm on a Postdate metric watches a name and dimensions some function of its stack emits', () => {
    for (const deployed of [staging, production]) {
      const emitted = emittedByStack.get(deployed) ?? new Map();
      const alarms = postdateAlarms(deployed.template);
      expect(alarms.length).toBeGreaterThan(0);
      for (const alarm of alarms) {
        const sets: Dimensions[] = emitted.get(alarm.metricName) ?? [];
        expect(sets, `${alarm.id} watches ${alarm.metricName}, which no function emits`).not.toHaveLength(0);
        expect(sets, `${alarm.id} in ${deployed.stackName}`).toContainEqual(alarm.dimensions);
      }
    }
  });

  it("the relay alarms watch the sweeper's gauges as it writes them: RelayFailover the stack's, RelayUnavailable each relay's (DESIGN §15)", () => {
    const relayAlarms = (deployed: Deployed) =>
      postdateAlarms(deployed.template)
        .filter((alarm) =>
          new Set<string>([SWEEPER_METRIC.relayFailover, SWEEPER_METRIC.relayUnavailable]).has(
            alarm.metricName,
          ),
        )
        .map((alarm) => `${alarm.metricName}:${alarm.dimensions.join(',')}`)
        .sort();
    const stack = (name: string) => [`service=${METRICS.service}`, `stack=${name}`];
    for (const [deployed, relays] of [
      [staging, [DEFAULT_RELAY]],
      [production, ['primary', 'backup']],
    ] as const) {
      const expected = [
        `${SWEEPER_METRIC.relayFailover}:${stack(deployed.stackName).join(',')}`,
        ...relays.map(
          (relay) =>
            `${SWEEPER_METRIC.relayUnavailable}:${[`relay=${relay}`, ...stack(deployed.stackName)].join(',')}`,
        ),
      ];
      expect(relayAlarms(deployed)).toEqual(expected.sort());
    }
  });

  it("no alarm or dashboard graph of one stack watches the other stack's metrics", () => {
    const watched = (deployed: Deployed) =>
      new Set(
        [...postdateAlarms(deployed.template), ...dashboardMetrics(deployed.template)].map(
          ({ metricName, dimensions }) => `${metricName}:${dimensions.join(',')}`,
        ),
      );
    const emitted = (deployed: Deployed) =>
      new Set(
        [...(emittedByStack.get(deployed) ?? [])].flatMap(([name, sets]) =>
          sets.map((dimensions) => `${name}:${dimensions.join(',')}`),
        ),
      );
    for (const [own, other] of [
      [staging, production],
      [production, staging],
    ] as const) {
      const mine = watched(own);
      expect(mine.size).toBeGreaterThan(0);
      for (const series of mine) {
        expect(emitted(own).has(series), `${own.stackName} watches ${series}, which it does not emit`).toBe(
          true,
        );
        expect(emitted(other).has(series), `${own.stackName} watches ${other.stackName}'s ${series}`).toBe(
          false,
        );
      }
    }
  });

  it('the dashboard draws each relay, in the order of relays (DESIGN §15)', () => {
    const relaysDrawn = (deployed: Deployed) =>
      dashboardMetrics(deployed.template)
        .filter((metric) => metric.metricName === SENDER_METRIC.sent)
        .flatMap((metric) => metric.dimensions.filter((pair) => pair.startsWith('relay=')));
    expect(relaysDrawn(staging)).toEqual(['relay=default']);
    expect(relaysDrawn(production)).toEqual(['relay=primary', 'relay=backup']);
  });

  it("the dashboard's alarm widget shows every alarm of the stack", () => {
    for (const deployed of [staging, production]) {
      const alarmIds = Object.keys(deployed.template.findResources('AWS::CloudWatch::Alarm')).sort();
      const shown = dashboardBody(deployed.template)
        .widgets.filter((widget) => widget.type === 'alarm')
        .flatMap((widget) => widget.properties.alarms as string[])
        .map((arn) => arn.replace(/^arn-of:/, ''))
        .sort();
      expect(shown).toEqual(alarmIds);
    }
  });
});
