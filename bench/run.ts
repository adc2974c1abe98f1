import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { batchEnqueue } from './batchEnqueue.js';
import type { BenchOptions, BenchResult } from './benchResult.js';
import { rowCells } from './benchResult.js';
import { burst } from './burst.js';
import { writeCharts } from './chart.js';
import { coldStart } from './coldStart.js';
import { cost } from './cost.js';
import { enqueueLatency } from './enqueueLatency.js';
import { firstMinute } from './firstMinute.js';
import { GOAL_HEADER, goalLines, ISSUE_32_GOALS } from './goals.js';
import { immediateCopy } from './immediateCopy.js';
import { outage, outageFailover } from './outage.js';
import { peer } from './peer.js';
import { postfixFailover, postfixOutage } from './postfixOutage.js';
import { precision } from './precision.js';
import { scale } from './scale.js';
import { soak } from './soak.js';
import { round } from './stats.js';
import { templates } from './templates.js';
import { throughput } from './throughput.js';

/**
 * `npm run bench [-- --quick] [-- --scale-messages N] [-- name …]`: runs the benchmarks (all, or
 * those named), prints one table, writes bench/results/latest.json and draws the charts of the
 * benchmarks that ran (chart.ts). Each benchmark that needs the local stack starts its
 * own (with its own compressed configuration) and stops it before the next one begins.
 */
const BENCHMARKS: Record<string, (options: BenchOptions) => Promise<BenchResult>> = {
  coldStart,
  'first-minute': firstMinute,
  cost,
  templates,
  enqueueLatency,
  'batch-enqueue': batchEnqueue,
  burst,
  throughput,
  precision,
  'immediate-copy': immediateCopy,
  peer,
  scale,
  soak,
  outage,
  'outage-failover': outageFailover,
  'postfix-outage': postfixOutage,
  'postfix-failover': postfixFailover,
};

// The SDK's "Node 22 soon" notice (this machine runs Node 20) is noise in a benchmark's output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

async function main(argv: readonly string[]): Promise<number> {
  const parsed = parseArguments(argv);
  if ('error' in parsed) {
    console.error(parsed.error);
    return 2;
  }
  const { quick, names, scaleMessages } = parsed;
  const unknown = names.filter((name) => !(name in BENCHMARKS));
  if (unknown.length > 0) {
    console.error(
      `unknown benchmark(s): ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}`,
    );
    return 2;
  }
  const selected = names.length > 0 ? names : Object.keys(BENCHMARKS);
  const log = (line: string) => console.log(line);
  const results: BenchResult[] = [];
  const failures: { name: string; error: string }[] = [];
  const began = new Date();
  for (const name of selected) {
    const run = BENCHMARKS[name];
    if (!run) continue;
    log(`▶ ${name}${quick ? ' (quick)' : ''}`);
    try {
      const result = await run({ quick, log, ...(scaleMessages !== undefined ? { scaleMessages } : {}) });
      results.push(result);
      log(`  done in ${round(result.seconds, 1)} s`);
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      failures.push({ name, error: message });
      log(`  FAILED: ${message}`);
    }
  }
  log('');
  log(renderText(TABLE_HEADER, tableLines(results)));
  const goals = goalTable(results);
  log('');
  log(renderText(GOAL_HEADER, goals.lines));
  log(goals.summary);
  for (const failure of failures) log(`✗ ${failure.name} did not complete: ${failure.error}`);

  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = `${RESULTS_DIR}latest.json`;
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        startedAt: began.toISOString(),
        finishedAt: new Date().toISOString(),
        quick,
        machine: {
          node: process.version,
          platform: `${process.platform} ${process.arch}`,
          cpus: cpus().length,
          cpuModel: cpus()[0]?.model ?? 'unknown',
          memoryGb: round(totalmem() / 1024 ** 3, 1),
        },
        results,
        failures,
      },
      null,
      2,
    )}\n`,
  );
  writeFileSync(
    `${RESULTS_DIR}latest.md`,
    `${renderMarkdown(TABLE_HEADER, tableLines(results))}\n\n${renderMarkdown(GOAL_HEADER, goals.lines)}\n\n${goals.summary}\n`,
  );
  log(`results written to ${file} (and latest.md, the same table in Markdown)`);
  for (const chart of writeCharts(results, RESULTS_DIR)) log(`chart written to ${chart}`);
  return failures.length > 0 ? 1 : 0;
}

/** `--quick`, `--scale-messages N` (or `=N`), and the names of the benchmarks to run. */
function parseArguments(
  argv: readonly string[],
): { quick: boolean; names: string[]; scaleMessages: number | undefined } | { error: string } {
  let quick = false;
  let scaleMessages: number | undefined;
  const names: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--quick') quick = true;
    else if (arg === '--scale-messages' || arg.startsWith('--scale-messages=')) {
      const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      const count = Number(value);
      if (!Number.isInteger(count) || count < 100) {
        return { error: `--scale-messages needs a whole number of at least 100, not ${value ?? 'nothing'}` };
      }
      scaleMessages = count;
    } else if (arg.startsWith('--')) return { error: `unknown option ${arg}` };
    else names.push(arg);
  }
  return { quick, names, scaleMessages };
}

const TABLE_HEADER = [
  'benchmark',
  'metric',
  'value',
  'baseline (same run)',
  'ratio / diff',
  'goal',
  'verdict',
];

function tableLines(results: readonly BenchResult[]): string[][] {
  return results.flatMap((result) => result.rows.map((row) => rowCells(result.name, row)));
}

/** Issue 32's goals, each with the rows that judge it (bench/goals.ts), and how many are met. */
function goalTable(results: readonly BenchResult[]): { lines: string[][]; summary: string } {
  const lines = goalLines(ISSUE_32_GOALS, results);
  const judged = lines.filter((line) => line.goalVerdict !== undefined);
  const met = judged.filter((line) => line.goalVerdict === 'MET').length;
  const notRun = ISSUE_32_GOALS.length - judged.length;
  return {
    lines: lines.map((line) => [...line.cells]),
    summary: `issue 32: ${met} of ${ISSUE_32_GOALS.length} goals MET, ${judged.length - met} MISSED${notRun > 0 ? `, ${notRun} not run` : ''}`,
  };
}

function renderText(header: readonly string[], lines: readonly string[][]): string {
  const all = [header, ...lines];
  const widths = header.map((_, column) => Math.max(...all.map((line) => (line[column] ?? '').length)));
  const format = (line: readonly string[]) =>
    line
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  const rule = widths.map((width) => '─'.repeat(width)).join('  ');
  return [format(header), rule, ...lines.map(format)].join('\n');
}

function renderMarkdown(header: readonly string[], lines: readonly string[][]): string {
  const escapePipes = (cell: string) => cell.replaceAll('|', '\\|');
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...lines.map((line) => `| ${line.map(escapePipes).join(' | ')} |`),
  ].join('\n');
}

process.exitCode = await main(process.argv.slice(2));
