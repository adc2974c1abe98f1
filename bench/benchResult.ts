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

export function withinGoal(value: number, goal: { max?: number; min?: number }): boolean {
  if (!Number.isFinite(value)) return false;
  if (goal.max !== undefined && value > goal.max) return false;
  if (goal.min !== undefined && value < goal.min) return false;
  return true;
}
