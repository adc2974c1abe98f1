import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { applyPatch, MUTANTS, type Mutant } from './mutantPatches.js';

/**
 * `npm run chaos:mutants`: the proof tested by breaking the product on purpose (issue 35). For the
 * unmodified code (several seeds) and each deliberate bug of chaos/mutantPatches.ts, it copies the
 * working tree into a scratch directory (node_modules linked), applies the bug's patches there —
 * never in this repository — and runs a short chaos run in it. Every mutant must make the checker
 * FAIL; the unmodified code must PASS. A run that ends without a report (the harness itself broke)
 * is an ERROR, never counted as a kill. Prints the table and writes it, with each run's log and
 * JSON report, to chaos/reports/mutants-<time>/.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Row {
  readonly variant: string;
  readonly seed: number;
  readonly expected: 'PASS' | 'FAIL';
  readonly verdict: 'PASS' | 'FAIL' | 'ERROR';
  readonly detail: string;
  readonly seconds: number;
}

/** The working tree (tracked and untracked, not ignored) copied into a fresh directory. */
function scratchCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'postdate-mutant-'));
  const listed = spawnSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  for (const file of listed.stdout.split('\0').filter(Boolean)) {
    const from = join(ROOT, file);
    if (!existsSync(from)) continue; // deleted in the working tree
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(from, join(dir, file));
  }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

function applyMutant(dir: string, mutant: Mutant): void {
  for (const patch of mutant.patches) {
    const path = join(dir, patch.file);
    writeFileSync(path, applyPatch(readFileSync(path, 'utf8'), patch));
  }
}

/** One chaos run in `dir`; resolves with its report (null when it wrote none) and exit code. */
function chaosRun(
  dir: string,
  args: readonly string[],
  logPath: string,
): Promise<{ code: number | null; report: Record<string, unknown> | null }> {
  const reportPath = logPath.replace(/\.log$/, '.json');
  return new Promise((resolve) => {
    // Written as it comes, so that a long run can be followed.
    const log = createWriteStream(logPath);
    const child = spawn(
      join(dir, 'node_modules', '.bin', 'tsx'),
      ['chaos/run.ts', ...args, '--out', reportPath],
      {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.once('close', (code) => {
      log.end();
      const report = existsSync(reportPath)
        ? (JSON.parse(readFileSync(reportPath, 'utf8')) as Record<string, unknown>)
        : null;
      resolve({ code, report });
    });
  });
}

/** What the main checker found, in one cell. */
function detailOf(report: Record<string, unknown>): string {
  const counts = report.counts as Record<string, number>;
  const webhooks = (report.webhooks as { result?: { ok: boolean; counts: { missing: number } } } | undefined)
    ?.result;
  const parts = [
    `lost ${counts.lost}`,
    `unexplained dup ${counts.unexplainedDuplicates}`,
    `unexpected ${counts.unexpected}`,
    `wrong fate ${counts.wrongFate}`,
    `explained dup ${counts.explainedDuplicates}`,
  ];
  if (webhooks) parts.push(`webhooks ${webhooks.ok ? 'PASS' : `FAIL (missing ${webhooks.counts.missing})`}`);
  return parts.join(', ');
}

async function runVariant(
  variant: string,
  mutant: Mutant | undefined,
  seed: number,
  chaosArgs: readonly string[],
  outDir: string,
  log: (line: string) => void,
): Promise<Row> {
  const started = Date.now();
  const dir = scratchCopy();
  try {
    if (mutant) applyMutant(dir, mutant);
    log(`mutants: ${variant}, seed ${seed}: running in ${dir}`);
    const { code, report } = await chaosRun(
      dir,
      [...chaosArgs, '--seed', String(seed)],
      join(outDir, `${variant}-${seed}.log`),
    );
    const seconds = Math.round((Date.now() - started) / 1000);
    const expected = mutant ? 'FAIL' : 'PASS';
    if (report === null || typeof report.ok !== 'boolean') {
      return {
        variant,
        seed,
        expected,
        verdict: 'ERROR',
        detail: `no report (exit ${code}); see the log`,
        seconds,
      };
    }
    return {
      variant,
      seed,
      expected,
      verdict: report.ok ? 'PASS' : 'FAIL',
      detail: detailOf(report),
      seconds,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function formatTable(rows: readonly Row[]): string {
  const lines = ['| variant | seed | expected | checker | what it found | s |', '|---|---|---|---|---|---|'];
  for (const row of rows) {
    const mark = row.verdict === row.expected ? '✓' : '✗';
    lines.push(
      `| ${row.variant} | ${row.seed} | ${row.expected} | ${row.verdict} ${mark} | ${row.detail} | ${row.seconds} |`,
    );
  }
  return lines.join('\n');
}

async function main(argv: readonly string[]): Promise<number> {
  const program = new Command('chaos:mutants')
    .option('--messages <n>', 'messages per chaos run', '150')
    .option('--seed <n>', 'seed of the mutant runs (and the first unmodified run)', '777')
    .option('--clean-seeds <n>', 'unmodified runs, on seeds seed, seed+1, …', '2')
    .option('--only <names>', 'comma-separated variants to run (unmodified, or mutant names)')
    .option('--time-scale <x>', 'time scale of the chaos runs', '0.5')
    .option('--chaos <args>', 'more options for each chaos run (chaos/run.ts), space-separated', '')
    .parse(['node', 'chaos:mutants', ...argv]);
  const opts = program.opts<Record<string, string | undefined>>();
  const seed = Number(opts.seed);
  const only = opts.only ? new Set(opts.only.split(',')) : undefined;
  const chaosArgs = [
    '--messages',
    String(opts.messages),
    '--time-scale',
    String(opts.timeScale),
    ...String(opts.chaos ?? '')
      .split(' ')
      .filter(Boolean),
  ];
  // Every anchor is checked before a single run starts: a stale one stops the whole run at once.
  for (const mutant of MUTANTS) {
    for (const patch of mutant.patches) applyPatch(readFileSync(join(ROOT, patch.file), 'utf8'), patch);
  }
  const outDir = join(ROOT, 'chaos', 'reports', `mutants-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  mkdirSync(outDir, { recursive: true });
  const log = (line: string) => console.log(line);
  const rows: Row[] = [];
  const wanted = (name: string) => only === undefined || only.has(name);
  if (wanted('unmodified')) {
    for (let offset = 0; offset < Number(opts.cleanSeeds); offset += 1) {
      rows.push(await runVariant('unmodified', undefined, seed + offset, chaosArgs, outDir, log));
      log(formatTable(rows.slice(-1)).split('\n')[2] ?? '');
    }
  }
  for (const mutant of MUTANTS.filter((candidate) => wanted(candidate.name))) {
    rows.push(await runVariant(mutant.name, mutant, seed, chaosArgs, outDir, log));
    log(formatTable(rows.slice(-1)).split('\n')[2] ?? '');
  }
  const table = formatTable(rows);
  writeFileSync(join(outDir, 'table.md'), `${table}\n`);
  log(`\n${table}\n\nmutants: logs and reports in ${outDir}`);
  return rows.every((row) => row.verdict === row.expected) ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
