/**
 * DESIGN §6: alarms must be able to fire for what they name. `DueMailHeldBack` (decision 0231) says
 * "due mail is being held back": copies the sender hands back unsent — out of time under a low
 * POSTDATE_MAX_SEND_RATE, a pause, no relay, a throttle — are no attempts (DESIGN §2) and leave the
 * send queue's age after three receives (decision 0224), so no other alarm follows them. Each
 * hand-back of a due copy publishes `HeldBackLateness`, the time since it came due
 * (test/sender/heldBackLateness.test.ts); here the synthesized alarm is evaluated on the datapoints
 * such hand-backs write, as CloudWatch evaluates it (the Maximum of each period; a period without a
 * datapoint is not breaching; ALARM when DatapointsToAlarm of the last EvaluationPeriods breach).
 * That the name and dimensions are those the functions' EMF documents carry is
 * test/cdk/metricDimensions.test.ts, for every alarm on a Postdate metric.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { METRICS, metricDimensions, SENDER_METRIC } from '../../lambdas/core/metricNames.js';
import { type Resource, synthesizePostdate } from './support/synthesize.js';

const MINUTE_MS = 60_000;

/** One datapoint the sender writes: when (ms since the test's start) and the lateness it carries. */
interface Datapoint {
  readonly atMs: number;
  readonly latenessMs: number;
}

interface AlarmProperties {
  readonly Namespace: string;
  readonly MetricName: string;
  readonly Dimensions: readonly { readonly Name: string; readonly Value: unknown }[];
  readonly Statistic: string;
  readonly Period: number;
  readonly EvaluationPeriods: number;
  readonly DatapointsToAlarm?: number;
  readonly Threshold: number;
  readonly ComparisonOperator: string;
  readonly TreatMissingData: string;
}

/** Whether the alarm is in ALARM once the period that ends at `endMs` is evaluated. */
function inAlarm(alarm: AlarmProperties, datapoints: readonly Datapoint[], endMs: number): boolean {
  expect(alarm.ComparisonOperator).toBe('GreaterThanOrEqualToThreshold');
  expect(alarm.TreatMissingData).toBe('notBreaching');
  expect(alarm.Statistic).toBe('Maximum');
  const periodMs = alarm.Period * 1000;
  let breaching = 0;
  for (let index = 0; index < alarm.EvaluationPeriods; index++) {
    const to = endMs - index * periodMs;
    const inPeriod = datapoints.filter((point) => point.atMs >= to - periodMs && point.atMs < to);
    if (inPeriod.length > 0 && Math.max(...inPeriod.map((point) => point.latenessMs)) >= alarm.Threshold)
      breaching++;
  }
  return breaching >= (alarm.DatapointsToAlarm ?? alarm.EvaluationPeriods);
}

/** A copy due at `dueMs`, handed back every `everyMs` from `fromMs` until `untilMs`, each time as late as it is. */
function handBacks(dueMs: number, fromMs: number, untilMs: number, everyMs: number): Datapoint[] {
  const points: Datapoint[] = [];
  for (let atMs = fromMs; atMs < untilMs; atMs += everyMs) points.push({ atMs, latenessMs: atMs - dueMs });
  return points;
}

describe('DueMailHeldBack fires while due mail is held back, not for a moment of it', () => {
  let alarm: AlarmProperties;
  let stackName: string;
  let periodMs: number;
  /** The period ends from `fromMs` to `untilMs`. */
  const periodEnds = (fromMs: number, untilMs: number) => {
    const ends: number[] = [];
    for (let end = Math.ceil(fromMs / periodMs) * periodMs; end <= untilMs; end += periodMs) ends.push(end);
    return ends;
  };

  beforeAll(() => {
    const { template, stack } = synthesizePostdate();
    stackName = stack.stackName;
    const watching = (Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[])
      .map((resource) => resource.Properties as unknown as AlarmProperties)
      .filter((properties) => properties.MetricName === SENDER_METRIC.heldBackLateness);
    expect(watching).toHaveLength(1);
    alarm = watching[0] as AlarmProperties;
    periodMs = alarm.Period * 1000;
  });

  it('watches the sender’s HeldBackLateness with the dimensions it publishes, at the oldest-copy threshold', () => {
    expect(alarm.Namespace).toBe(METRICS.namespace);
    const dimensions = Object.fromEntries(alarm.Dimensions.map(({ Name, Value }) => [Name, Value]));
    expect(dimensions).toEqual(metricDimensions(stackName));
    // docs/operations.md: ≥ 30 min (prop oldestMessageAgeAlarmThreshold), in milliseconds as published.
    expect(alarm.Threshold).toBe(30 * MINUTE_MS);
  });

  it('fires for one copy handed back out of time every 15 minutes (the longest delay), and stays in alarm', () => {
    // Each return takes a little longer than the delay: sooner or later a period holds no datapoint.
    const points = handBacks(0, 0, 4 * 60 * MINUTE_MS, 15 * MINUTE_MS + 20_000);
    const late = periodEnds(alarm.Threshold + 2 * periodMs, 4 * 60 * MINUTE_MS);
    expect(late.length).toBeGreaterThan(8);
    for (const end of late)
      expect([end / MINUTE_MS, inAlarm(alarm, points, end)]).toEqual([end / MINUTE_MS, true]);
  });

  it('fires for copies an operator’s pause hands back every minute, once they are as late as the threshold', () => {
    const points = handBacks(0, 0, 3 * 60 * MINUTE_MS, MINUTE_MS);
    // OK in every period that ends before a copy was as late as the threshold, in ALARM from the next.
    for (const end of periodEnds(periodMs, alarm.Threshold)) expect(inAlarm(alarm, points, end)).toBe(false);
    for (const end of periodEnds(alarm.Threshold + periodMs, 3 * 60 * MINUTE_MS))
      expect(inAlarm(alarm, points, end)).toBe(true);
  });

  it('stays OK for a backlog that holds copies back ten minutes, and clears once held mail has gone', () => {
    const briefly = Array.from({ length: 12 * 60 }, (_, minute) => ({
      atMs: minute * MINUTE_MS,
      latenessMs: (minute % 10) * MINUTE_MS,
    }));
    for (const end of periodEnds(periodMs, 12 * 60 * MINUTE_MS))
      expect(inAlarm(alarm, briefly, end)).toBe(false);

    // Held two hours, then sent: no hand-back after that.
    const held = handBacks(0, 0, 2 * 60 * MINUTE_MS, MINUTE_MS);
    const after = periodEnds(2 * 60 * MINUTE_MS + alarm.EvaluationPeriods * periodMs, 3 * 60 * MINUTE_MS);
    for (const end of after) expect(inAlarm(alarm, held, end)).toBe(false);
  });
});
