import type { BenchResult, BenchRow } from './benchResult.js';
import { rowCells, verdictOf } from './benchResult.js';

/**
 * Issue 32's table of goals ("Cost and speed close to the floor"), each row of it tied to the
 * benchmark rows that measure it. `npm run bench` prints, after its table, every goal with the rows
 * that judge it (value, baseline from the same run, ratio, goal, MET / MISSED) and the goal's own
 * verdict: MET when every one of its rows met it. The rows themselves carry the goal and the
 * verdict (each benchmark judges what it measures); this only gathers them under the issue's
 * figures, so that a goal whose benchmark did not run says so instead of vanishing.
 */
export interface IssueGoal {
  /** The issue's figure, as its table words it. */
  readonly figure: string;
  /** `BenchResult.name` of the benchmark that measures it. */
  readonly benchmark: string;
  /** The name `npm run bench -- <command>` runs it by (bench/run.ts). */
  readonly command: string;
  /** Which of that benchmark's rows judge the goal (only rows with a verdict count). */
  readonly rows: RegExp;
}

export const ISSUE_32_GOALS: readonly IssueGoal[] = [
  {
    figure: 'cost, 1 KB immediate, busy / alone, everything counted (≤ $8 / ≤ $11)',
    benchmark: 'cost',
    command: 'cost',
    rows: /^immediate 1 KB: \$ per million/,
  },
  {
    figure: 'cost, 20 KB immediate, busy (≤ $11)',
    benchmark: 'cost',
    command: 'cost',
    rows: /^immediate 20 KB: \$ per million, busy/,
  },
  {
    figure: "batch enqueue, per message (≤ 0.7× a single enqueue's cost and latency)",
    benchmark: 'batchEnqueue',
    command: 'batch-enqueue',
    rows: /^enqueue (latency|cost) per/,
  },
  {
    figure: 'import over an empty module, each of the 8 functions (≤ +40 ms)',
    benchmark: 'coldStart',
    command: 'coldStart',
    rows: / import, median/,
  },
  {
    figure: 'enqueue p50 / p99 over one bare PutItem (≤ 2×)',
    benchmark: 'enqueueLatency',
    command: 'enqueueLatency',
    rows: /^enqueue p(50|99)$/,
  },
  {
    figure: "lateness p99 over BullMQ's delayed-job p99, every path (≤ 1×)",
    benchmark: 'peer',
    command: 'peer',
    rows: /^lateness .* over BullMQ's delayed-job p99$/,
  },
  {
    figure: 'a burst: 30 immediate messages at once, enqueue → relay p50, cold and warm (≤ 0.5 s)',
    benchmark: 'burst',
    command: 'burst',
    rows: /enqueue → relay's 250 p50/,
  },
  {
    figure: 'messages due in 3 s, enqueued during that burst (≤ 0.5 s late)',
    benchmark: 'burst',
    command: 'burst',
    rows: /due in 3 s/,
  },
  {
    figure: 'webhook latency p99, status change → arrival (≤ 1 s)',
    benchmark: 'precision',
    command: 'precision',
    rows: /^webhook latency/,
  },
];

/** One printed line of the goals table: a row that judges a goal, or a goal that did not run. */
export interface GoalLine {
  readonly figure: string;
  readonly metric: string;
  readonly cells: readonly string[];
  readonly verdict: string;
  /** On the goal's last line only: MET when every one of its rows met it, else MISSED. */
  readonly goalVerdict?: 'MET' | 'MISSED';
}

/** The columns of GoalLine.cells. */
export const GOAL_HEADER = [
  'issue 32 goal',
  'metric',
  'value',
  'baseline (same run)',
  'ratio / diff',
  'goal',
  'verdict',
  'goal verdict',
] as const;

export function goalLines(goals: readonly IssueGoal[], results: readonly BenchResult[]): GoalLine[] {
  return goals.flatMap((goal): GoalLine[] => {
    const rows: BenchRow[] = results
      .filter((result) => result.name === goal.benchmark)
      .flatMap((result) => result.rows)
      .filter((row) => row.pass !== undefined && goal.rows.test(row.metric));
    if (rows.length === 0) {
      const hint = `npm run bench -- ${goal.command}`;
      return [
        {
          figure: goal.figure,
          metric: 'not run',
          cells: [goal.figure, 'not run', '', '', '', '', '', hint],
          verdict: hint,
        },
      ];
    }
    const met = rows.every((row) => row.pass === true);
    return rows.map((row, index) => {
      // The figure on its goal's first line only: the lines below it are the same goal's.
      const cells = [index === 0 ? goal.figure : '', ...rowCells(goal.benchmark, row).slice(1)];
      const last = index === rows.length - 1;
      return {
        figure: goal.figure,
        metric: row.metric,
        cells: last ? [...cells, met ? 'goal MET' : 'goal MISSED'] : [...cells, ''],
        verdict: verdictOf(row),
        ...(last ? { goalVerdict: met ? ('MET' as const) : ('MISSED' as const) } : {}),
      };
    });
  });
}
