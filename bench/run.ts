import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { batchEnqueue } from './batchEnqueue.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { writeCharts } from './chart.js';
import { coldStart } from './coldStart.js';
import { cost } from './cost.js';
import { enqueueLatency } from './enqueueLatency.js';
import { firstMinute } from './firstMinute.js';
import { immediateCopy } from './immediateCopy.js';
import { outage, outageFailover } from './outage.js';
import { peer } from './peer.js';
import { postfixFailover, postfixOutage } from './postfixOutage.js';
import { precision } from './precision.js';
import { scale } from './scale.js';
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
  throughput,
  precision,
  'immediate-copy': immediateCopy,
  peer,
  scale,
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
  log(renderTable(results));
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
  writeFileSync(`${RESULTS_DIR}latest.md`, `${renderMarkdown(results)}\n`);
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

function renderTable(results: readonly BenchResult[]): string {
  const header = ['benchmark', 'metric', 'value', 'baseline (same run)', 'ratio / diff', 'goal', ''];
  const lines: string[][] = [header];
  for (const result of results) {
    for (const row of result.rows) lines.push(cells(result.name, row));
  }
  const widths = header.map((_, column) => Math.max(...lines.map((line) => (line[column] ?? '').length)));
  const format = (line: string[]) => line.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ');
  const rule = widths.map((width) => '─'.repeat(width)).join('  ');
  return [format(header), rule, ...lines.slice(1).map(format)].join('\n');
}

function renderMarkdown(results: readonly BenchResult[]): string {
  const header = ['benchmark', 'metric', 'value', 'baseline (same run)', 'ratio / diff', 'goal', ''];
  const escapePipes = (cell: string) => cell.replaceAll('|', '\\|');
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const result of results) {
    for (const row of result.rows) lines.push(`| ${cells(result.name, row).map(escapePipes).join(' | ')} |`);
  }
  return lines.join('\n');
}

function cells(benchmark: string, row: BenchRow): string[] {
  const comparison = row.comparison
    ? row.comparison.kind === 'ratio'
      ? `${round(row.comparison.value, 3)}×`
      : `${row.comparison.value >= 0 ? '+' : ''}${round(row.comparison.value, 1)} ${row.unit}`
    : '';
  const verdict = row.pass === undefined ? '' : row.pass ? 'ok' : 'MISSED';
  return [
    benchmark,
    row.metric,
    `${row.value} ${row.unit}`,
    row.baseline ? `${row.baseline.label}: ${row.baseline.value}` : '',
    comparison,
    row.goal ?? row.note ?? '',
    verdict,
  ];
}

process.exitCode = await main(process.argv.slice(2));
