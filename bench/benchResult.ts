import { round } from './stats.js';

/**
 * What every benchmark returns: rows of one measured value beside the baseline measured in the same
 * run, their ratio (or difference) and the goal it is judged against. Only ratios travel between
 * machines; the absolute numbers are kept for context.
 */
export interface BenchRow {
  /** e.g. "api bundle import (ms)". */
  readonly metric: string;
  readonly value: number;
  readonly unit: string;
  /** What the value is compared with, measured in the same run (absent for a pure budget, e.g. a size). */
  readonly baseline?: { readonly label: string; readonly value: number };
  /** value ÷ baseline, or value − baseline when `comparison` is `difference`. */
  readonly comparison?: { readonly kind: 'ratio' | 'difference'; readonly value: number };
  /** Human text of the goal, e.g. "≤ 2×". */
  readonly goal?: string;
  readonly pass?: boolean;
  readonly note?: string;
}

export interface BenchResult {
  readonly name: string;
  readonly title: string;
  readonly rows: readonly BenchRow[];
  /** Free-form details kept in latest.json (breakdowns, settings, raw spreads). */
  readonly details?: unknown;
  readonly seconds: number;
}

export interface BenchOptions {
  /** Fewer samples and shorter delays: a smoke run of the benchmark, not a measurement. */
  readonly quick: boolean;
  readonly log: (line: string) => void;
  /** `--scale-messages N`: how many queued messages the scale benchmark drains (defaults in scale.ts). */
  readonly scaleMessages?: number;
}

export function ratioRow(input: {
  metric: string;
  value: number;
  unit: string;
  baselineLabel: string;
  baseline: number;
  goal?: { text: string; max?: number; min?: number };
  note?: string;
}): BenchRow {
  const ratio = input.value / input.baseline;
  return {
    metric: input.metric,
    value: input.value,
    unit: input.unit,
    baseline: { label: input.baselineLabel, value: input.baseline },
    comparison: { kind: 'ratio', value: ratio },
    ...(input.goal ? { goal: input.goal.text, pass: withinGoal(ratio, input.goal) } : {}),
    ...(input.note ? { note: input.note } : {}),
  };
}

/**
 * An absolute budget (e.g. "≤ 0.5 s"), judged on the value itself, still printed beside the
 * baseline measured in the same run and the ratio to it, so that a reader sees how far the machine
 * alone is from the budget.
 */
export function budgetRow(input: {
  metric: string;
  value: number;
  unit: string;
  baselineLabel: string;
  baseline: number;
  max: number;
  note?: string;
}): BenchRow {
  return {
    metric: input.metric,
    value: input.value,
    unit: input.unit,
    baseline: { label: input.baselineLabel, value: input.baseline },
    comparison: { kind: 'ratio', value: input.value / input.baseline },
    goal: `≤ ${input.max} ${input.unit}`,
    pass: withinGoal(input.value, { max: input.max }),
    ...(input.note ? { note: input.note } : {}),
  };
}

/** A row's verdict as printed: MET, MISSED, or nothing for a row without a goal. */
export function verdictOf(row: BenchRow): 'MET' | 'MISSED' | '' {
  return row.pass === undefined ? '' : row.pass ? 'MET' : 'MISSED';
}

/** The printed cells of a row: benchmark, metric, value, baseline, ratio / difference, goal (or note), verdict. */
export function rowCells(benchmark: string, row: BenchRow): string[] {
  const comparison = row.comparison
    ? row.comparison.kind === 'ratio'
      ? `${round(row.comparison.value, 3)}×`
      : `${row.comparison.value >= 0 ? '+' : ''}${round(row.comparison.value, 1)} ${row.unit}`
    : '';
  return [
    benchmark,
    row.metric,
    `${row.value} ${row.unit}`,
    row.baseline ? `${row.baseline.label}: ${row.baseline.value}` : '',
    comparison,
    row.goal ?? row.note ?? '',
    verdictOf(row),
  ];
}

export function withinGoal(value: number, goal: { max?: number; min?: number }): boolean {
  if (!Number.isFinite(value)) return false;
  if (goal.max !== undefined && value > goal.max) return false;
  if (goal.min !== undefined && value < goal.min) return false;
  return true;
}
