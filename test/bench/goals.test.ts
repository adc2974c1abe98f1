import { describe, expect, it } from 'vitest';
import type { BenchResult, BenchRow } from '../../bench/benchResult.js';
import { budgetRow, ratioRow, rowCells } from '../../bench/benchResult.js';
import { goalLines, ISSUE_32_GOALS, type IssueGoal } from '../../bench/goals.js';

const result = (name: string, rows: BenchRow[]): BenchResult => ({ name, title: name, rows, seconds: 1 });

describe('ratioRow: a value over its baseline from the same run, judged on the ratio', () => {
  it('is MET at the goal and below it, MISSED above it', () => {
    const at = ratioRow({
      metric: 'm',
      value: 14,
      unit: 'ms',
      baselineLabel: 'b',
      baseline: 20,
      goal: { text: '≤ 0.7×', max: 0.7 },
    });
    const above = ratioRow({
      metric: 'm',
      value: 15,
      unit: 'ms',
      baselineLabel: 'b',
      baseline: 20,
      goal: { text: '≤ 0.7×', max: 0.7 },
    });
    expect(at.comparison).toEqual({ kind: 'ratio', value: 0.7 });
    expect(rowCells('bench', at).at(-1)).toBe('MET');
    expect(rowCells('bench', above).at(-1)).toBe('MISSED');
  });

  it('is MISSED when the baseline is zero or was not measured (no ratio to judge)', () => {
    const zero = ratioRow({
      metric: 'm',
      value: 1,
      unit: 'ms',
      baselineLabel: 'b',
      baseline: 0,
      goal: { text: '≤ 2×', max: 2 },
    });
    const nan = ratioRow({
      metric: 'm',
      value: 1,
      unit: 'ms',
      baselineLabel: 'b',
      baseline: Number.NaN,
      goal: { text: '≤ 2×', max: 2 },
    });
    expect(zero.pass).toBe(false);
    expect(nan.pass).toBe(false);
  });

  it('prints value, baseline, ratio, goal and verdict; a row without a goal has no verdict', () => {
    const row = ratioRow({
      metric: 'enqueue p50',
      value: 30,
      unit: 'ms',
      baselineLabel: 'PutItem p50',
      baseline: 10,
      goal: { text: '≤ 2×', max: 2 },
    });
    expect(rowCells('enqueueLatency', row)).toEqual([
      'enqueueLatency',
      'enqueue p50',
      '30 ms',
      'PutItem p50: 10',
      '3×',
      '≤ 2×',
      'MISSED',
    ]);
    const plain = ratioRow({
      metric: 'm',
      value: 1,
      unit: 'ms',
      baselineLabel: 'b',
      baseline: 2,
      note: 'reported, no goal',
    });
    expect(rowCells('x', plain).slice(-2)).toEqual(['reported, no goal', '']);
  });
});

describe('budgetRow: an absolute budget, printed beside its baseline and ratio', () => {
  it('is judged on the value, not on the ratio', () => {
    const row = budgetRow({
      metric: 'burst p50',
      value: 0.4,
      unit: 's',
      baselineLabel: 'nodemailer',
      baseline: 0.1,
      max: 0.5,
    });
    expect(row.comparison).toEqual({ kind: 'ratio', value: 4 });
    expect(row.goal).toBe('≤ 0.5 s');
    expect(row.pass).toBe(true);
    expect(
      budgetRow({ metric: 'b', value: 0.51, unit: 's', baselineLabel: 'n', baseline: 1, max: 0.5 }).pass,
    ).toBe(false);
  });

  it('is MISSED for a value that was not measured', () => {
    expect(
      budgetRow({ metric: 'b', value: Number.NaN, unit: 's', baselineLabel: 'n', baseline: 1, max: 0.5 })
        .pass,
    ).toBe(false);
  });
});

describe('goalLines: every goal of the issue with its verdict', () => {
  const goals: IssueGoal[] = [
    {
      figure: 'enqueue over PutItem',
      benchmark: 'enqueueLatency',
      command: 'enqueueLatency',
      rows: /^enqueue p/,
    },
    { figure: 'burst', benchmark: 'burst', command: 'burst', rows: /burst/ },
  ];
  const pass = (metric: string, ok: boolean): BenchRow => ({
    metric,
    value: 1,
    unit: 'ms',
    goal: '≤ 2×',
    pass: ok,
  });

  it('is MET when every row of the goal met it, MISSED when one missed, and says how to run a goal not run', () => {
    const lines = goalLines(goals, [
      result('enqueueLatency', [pass('enqueue p50', true), pass('enqueue p99', false), pass('other', false)]),
    ]);
    expect(lines.map((line) => [line.figure, line.metric, line.verdict])).toEqual([
      ['enqueue over PutItem', 'enqueue p50', 'MET'],
      ['enqueue over PutItem', 'enqueue p99', 'MISSED'],
      ['burst', 'not run', 'npm run bench -- burst'],
    ]);
    expect(lines.filter((line) => line.goalVerdict !== undefined).map((line) => line.goalVerdict)).toEqual([
      'MISSED',
    ]);
  });

  it('gives a goal whose rows all met it MET, and ignores rows without a verdict', () => {
    const lines = goalLines(goals.slice(0, 1), [
      result('enqueueLatency', [pass('enqueue p50', true), { metric: 'enqueue p90', value: 3, unit: 'ms' }]),
    ]);
    expect(lines.map((line) => [line.metric, line.verdict, line.goalVerdict])).toEqual([
      ['enqueue p50', 'MET', 'MET'],
    ]);
  });

  it('names every row of issue 32 beside cost, each with the benchmark that measures it', () => {
    expect(ISSUE_32_GOALS.map((goal) => goal.benchmark)).toEqual([
      'cost',
      'cost',
      'batchEnqueue',
      'coldStart',
      'enqueueLatency',
      'peer',
      'burst',
      'burst',
      'precision',
    ]);
  });
});
