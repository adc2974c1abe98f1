/**
 * DESIGN §6: an alarm on the send queue's oldest message age, and every alarm must be able to fire
 * for what it names, and only for it: `SendQueueOldestMessage` says "due copies are not being taken".
 * Each case below is a queue as SQS describes it to CloudWatch, and the synthesized alarm, with its
 * documented threshold (docs/operations.md: 30 min, 3 of 3 one-minute periods), is evaluated on it.
 *
 * What SQS publishes, from its "Available CloudWatch metrics" page
 * (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html):
 * `ApproximateAgeOfOldestMessage` is "the approximate age of the oldest non-deleted message in the
 * queue" — a copy the sender holds hidden for its backoff is not deleted, so it counts — and "after a
 * message is received three times (or more) and not processed, the message is moved to the back of
 * the queue and the metric points to the second-oldest message that hasn't been received more than
 * three times" (docs/decisions/0224).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { logicalIdOf, type Resource, synthesizePostdate } from './support/synthesize.js';

/** One copy on the send queue: when it was sent, how often it was received, whether it is hidden. */
interface Copy {
  readonly sentAtSeconds: number;
  readonly receives: number;
  readonly hidden: boolean;
}

type Sample = Readonly<Record<string, number>>;

/** The send queue's metrics at one moment, as the AWS page above says SQS computes them. */
function sqsPublishes(copies: readonly Copy[], nowSeconds: number): Sample {
  const aged = copies.filter((copy) => copy.receives < 3);
  return {
    ApproximateAgeOfOldestMessage: Math.max(0, ...aged.map((copy) => nowSeconds - copy.sentAtSeconds)),
    ApproximateNumberOfMessagesVisible: copies.filter((copy) => !copy.hidden).length,
    ApproximateNumberOfMessagesNotVisible: copies.filter((copy) => copy.hidden).length,
  };
}

interface MetricQuery {
  readonly Id: string;
  readonly Expression?: string;
  readonly ReturnData?: boolean;
  readonly MetricStat?: { readonly Metric: { readonly MetricName: string } };
}

/**
 * Whether the alarm is in ALARM after its last `EvaluationPeriods` one-minute samples: each value, the
 * metric or the metric-math expression the alarm returns, at or above its threshold.
 */
function alarmFires(alarm: Resource, samples: readonly Sample[]): boolean {
  const properties = alarm.Properties as {
    readonly Threshold: number;
    readonly EvaluationPeriods: number;
    readonly ComparisonOperator: string;
    readonly MetricName?: string;
    readonly Metrics?: readonly MetricQuery[];
  };
  expect(properties.ComparisonOperator).toBe('GreaterThanOrEqualToThreshold');
  const window = samples.slice(-properties.EvaluationPeriods);
  expect(window).toHaveLength(properties.EvaluationPeriods);
  return window.every((sample) => alarmValue(properties, sample) >= properties.Threshold);
}

function alarmValue(
  alarm: { MetricName?: string; Metrics?: readonly MetricQuery[] },
  sample: Sample,
): number {
  if (alarm.MetricName !== undefined) return read(sample, alarm.MetricName);
  const queries = alarm.Metrics ?? [];
  const values = new Map<string, number>();
  for (const query of queries) {
    if (query.MetricStat !== undefined)
      values.set(query.Id, read(sample, query.MetricStat.Metric.MetricName));
  }
  const returned = queries.filter((query) => query.ReturnData !== false);
  expect(returned).toHaveLength(1);
  const expression = returned[0]?.Expression;
  if (expression === undefined) throw new Error('the returned query has no expression');
  return evaluate(expression, values);
}

function read(sample: Sample, metricName: string): number {
  const value = sample[metricName];
  if (value === undefined) throw new Error(`the case gives no ${metricName}`);
  return value;
}

/**
 * CloudWatch metric math, the part alarms here use: numbers, query ids, `+ - * /`, comparisons
 * (1 or 0), `AND`, `OR` and `IF(condition, then, else)` (a condition is true when not 0).
 */
function evaluate(expression: string, values: ReadonlyMap<string, number>): number {
  const tokens = expression.match(/\d+(?:\.\d+)?|\w+|>=|<=|==|!=|[-+*/(),<>]/g) ?? [];
  let at = 0;
  const peek = () => tokens[at];
  const take = (expected?: string): string => {
    const token = tokens[at++];
    if (token === undefined || (expected !== undefined && token !== expected))
      throw new Error(`cannot read ${expression} at ${token}`);
    return token;
  };
  const binary = (next: () => number, operators: Record<string, (a: number, b: number) => number>) => () => {
    let value = next();
    for (let op = operators[peek() ?? '']; op !== undefined; op = operators[peek() ?? '']) {
      take();
      value = op(value, next());
    }
    return value;
  };
  const primary = (): number => {
    const token = take();
    if (token === '(') {
      const value = or();
      take(')');
      return value;
    }
    if (token === 'IF') {
      take('(');
      const condition = or();
      take(',');
      const then = or();
      take(',');
      const otherwise = or();
      take(')');
      return condition !== 0 ? then : otherwise;
    }
    if (/^\d/.test(token)) return Number(token);
    const value = values.get(token);
    if (value === undefined) throw new Error(`unknown id ${token} in ${expression}`);
    return value;
  };
  const product = binary(primary, { '*': (a, b) => a * b, '/': (a, b) => a / b });
  const sum = binary(product, { '+': (a, b) => a + b, '-': (a, b) => a - b });
  const bool = (holds: boolean) => (holds ? 1 : 0);
  const comparison = binary(sum, {
    '>=': (a, b) => bool(a >= b),
    '>': (a, b) => bool(a > b),
    '<=': (a, b) => bool(a <= b),
    '<': (a, b) => bool(a < b),
    '==': (a, b) => bool(a === b),
    '!=': (a, b) => bool(a !== b),
  });
  const and = binary(comparison, { AND: (a, b) => bool(a !== 0 && b !== 0) });
  const or = binary(and, { OR: (a, b) => bool(a !== 0 || b !== 0) });
  const value = or();
  if (at !== tokens.length) throw new Error(`cannot read ${expression} past ${peek()}`);
  return value;
}

describe('SendQueueOldestMessage fires when due copies are not taken, not for a backoff', () => {
  let alarm: Resource;
  let threshold: number;

  beforeAll(() => {
    const { template, stack } = synthesizePostdate();
    const sendQueue = { 'Fn::GetAtt': [logicalIdOf(stack.postdate.sendQueue), 'QueueName'] };
    const onSendQueue = (
      Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[]
    ).filter((candidate) => JSON.stringify(candidate.Properties).includes(JSON.stringify(sendQueue)));
    expect(onSendQueue).toHaveLength(1);
    alarm = onSendQueue[0] as Resource;
    threshold = alarm.Properties.Threshold as number;
    // docs/operations.md: "≥ 30 min (prop oldestMessageAgeAlarmThreshold)", 3 of 3 one-minute periods.
    expect(threshold).toBe(30 * 60);
    expect(alarm.Properties.EvaluationPeriods).toBe(3);
  });

  /** The queue's samples at each of the `minutes` minutes that end `endSeconds` after the first send. */
  const samplesUntil = (copies: readonly Copy[], endSeconds: number, minutes = 5): Sample[] =>
    Array.from({ length: minutes }, (_, index) =>
      sqsPublishes(copies, endSeconds - (minutes - 1 - index) * 60),
    );

  it('fires when the sender takes nothing: copies wait visible, never received, past the threshold', () => {
    const waiting = [0, 60, 120, 600].map((sentAtSeconds) => ({ sentAtSeconds, receives: 0, hidden: false }));
    expect(alarmFires(alarm, samplesUntil(waiting, threshold + 5 * 60))).toBe(true);
  });

  it('fires for one due copy nobody takes, alone on the queue', () => {
    const alone = [{ sentAtSeconds: 0, receives: 0, hidden: false }];
    expect(alarmFires(alarm, samplesUntil(alone, threshold + 5 * 60))).toBe(true);
  });

  // DESIGN §5 backoff: delay = random(0, min(cap, base · 2^attempts)), attempts never reset. A copy of a
  // message with attempts behind it — redriven from the DLQ, an operator's retry, a sweeper
  // re-dispatch — is held hidden up to the cap (3600 s by default) on its first receive, and SQS
  // still counts it; nothing waits to be taken.
  it('stays OK while the only copy is held hidden for a backoff up to the retry cap, received once', () => {
    const backingOff = [{ sentAtSeconds: 0, receives: 1, hidden: true }];
    for (const endSeconds of [threshold + 5 * 60, 3600]) {
      expect(alarmFires(alarm, samplesUntil(backingOff, endSeconds))).toBe(false);
    }
  });

  it('stays OK while two copies back off, received once and twice, and nothing else waits', () => {
    const backingOff = [
      { sentAtSeconds: 0, receives: 1, hidden: true },
      { sentAtSeconds: 300, receives: 2, hidden: true },
    ];
    expect(alarmFires(alarm, samplesUntil(backingOff, 3000))).toBe(false);
  });
});
