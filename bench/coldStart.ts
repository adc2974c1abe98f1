import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { POSTDATE_FUNCTIONS, type PostdateFunctionName } from '../lambdas/core/postdateFunctions.js';
import {
  FUNCTION_BUNDLE_FILE,
  functionBuildOptions,
  outputsLoadedAtStart,
} from '../lib/constructs/postdateFunction.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { withinGoal } from './benchResult.js';
import { median, round } from './stats.js';

const GOAL_KB = 250;
/** Issue 21: each function's import at most 40 ms over an empty module's. */
const GOAL_EXTRA_MS = 40;

type Variant = 'shipped' | 'runtime-sdk' | 'sdk-credential-chain';

/** One function's bundle as written: its entry, and the bytes of its code (source maps not counted). */
interface Bundle {
  readonly file: string;
  /** Every output file's KB: the entry and all its chunks. */
  readonly kb: number;
  /** The KB a cold start loads: the entry and the chunks it imports statically (decision 0114). */
  readonly startKb: number;
}

/**
 * Bundles one function exactly as the stack does (functionBuildOptions, the one definition the
 * construct and the package build use: `index.mjs` and its chunks in a directory), or, for
 * comparison only, a variant the stack deliberately does not ship: the runtime's own SDK
 * (`@aws-sdk/*` and `@smithy/*` external), or the SDK's whole credential chain instead of the two
 * links that answer inside Lambda. Source maps go to their own files, which Lambda never loads: they
 * are not counted in the size.
 */
async function bundle(name: PostdateFunctionName, outDir: string, variant: Variant): Promise<Bundle> {
  const options = functionBuildOptions(name, join(outDir, `${name}-${variant}`));
  const { metafile } = await build({
    ...options,
    alias: variant === 'sdk-credential-chain' ? {} : options.alias,
    external: variant === 'runtime-sdk' ? ['@aws-sdk/*', '@smithy/*'] : [],
    metafile: true,
  });
  const kbOf = (paths: readonly string[]) =>
    paths.reduce((sum, path) => sum + (metafile.outputs[path]?.bytes ?? 0), 0) / 1024;
  return {
    file: join(options.outdir, FUNCTION_BUNDLE_FILE),
    kb: kbOf(Object.keys(metafile.outputs).filter((path) => path.endsWith('.mjs'))),
    startKb: kbOf(outputsLoadedAtStart(metafile)),
  };
}

/** How long one `import()` took: wall time, and the CPU time the process spent on it. */
interface ImportTime {
  readonly ms: number;
  readonly cpuMs: number;
}

/**
 * Imports one module in a fresh Node process and reports how long `import()` took, measured inside
 * that process (so process start-up, which the baseline shares, does not dilute the difference).
 * Beside the wall time (the goal's measure), the process's CPU time (user + system) over the same
 * `import()`: on a shared machine the wall time also counts the time the process waited for a core
 * (at load average 10–15 the api's difference doubles), the CPU time much less so (issue 32).
 */
function timeImport(file: string): Promise<ImportTime> {
  const script = `const c0 = process.cpuUsage(); const t0 = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); const ms = performance.now() - t0; const cpu = process.cpuUsage(c0); process.stdout.write(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000 }));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      // The handlers read nothing at import but Powertools' service name; keep the env minimal and stable.
      env: { PATH: process.env.PATH ?? '', AWS_REGION: 'us-east-1', POWERTOOLS_METRICS_DISABLED: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const time = parseImportTime(out);
      if (code !== 0 || time === undefined)
        reject(new Error(`importing ${file} failed (${code}): ${err.trim()}`));
      else resolve(time);
    });
  });
}

function parseImportTime(out: string): ImportTime | undefined {
  try {
    const { ms, cpuMs } = JSON.parse(out) as Partial<ImportTime>;
    return Number.isFinite(ms) && Number.isFinite(cpuMs)
      ? { ms: Number(ms), cpuMs: Number(cpuMs) }
      : undefined;
  } catch {
    return undefined;
  }
}

export async function coldStart(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const samples = options.quick ? 5 : 20;
  const dir = mkdtempSync(join(tmpdir(), 'postdate-bench-cold-'));
  try {
    const empty = join(dir, 'empty.mjs');
    writeFileSync(empty, 'export {};\n');
    const bundles: {
      name: string;
      file: string;
      chainFile: string;
      kb: number;
      startKb: number;
      runtimeSdkKb: number;
    }[] = [];
    for (const name of POSTDATE_FUNCTIONS) {
      const shipped = await bundle(name, dir, 'shipped');
      const chain = await bundle(name, dir, 'sdk-credential-chain');
      const runtimeSdk = await bundle(name, dir, 'runtime-sdk');
      bundles.push({
        name,
        file: shipped.file,
        chainFile: chain.file,
        kb: shipped.kb,
        startKb: shipped.startKb,
        runtimeSdkKb: runtimeSdk.kb,
      });
      options.log(
        `  bundled ${name}: ${round(shipped.kb, 1)} KB, ${round(shipped.startKb, 1)} KB of it loaded at start (${round(chain.kb, 1)} KB with the SDK's credential chain, ${round(runtimeSdk.kb, 1)} KB with the runtime's SDK)`,
      );
    }
    // Interleaved: each round imports the empty module and then every bundle, so drift in the
    // machine's load hits the baseline and the bundles alike.
    const baseline: ImportTime[] = [];
    const times = new Map<string, ImportTime[]>(bundles.map((b) => [b.name, []]));
    const chainTimes = new Map<string, ImportTime[]>(bundles.map((b) => [b.name, []]));
    for (let round_ = 0; round_ < samples; round_ += 1) {
      baseline.push(await timeImport(empty));
      for (const b of bundles) {
        times.get(b.name)?.push(await timeImport(b.file));
        chainTimes.get(b.name)?.push(await timeImport(b.chainFile));
      }
    }
    const wall = (samples_: readonly ImportTime[]) => median(samples_.map((t) => t.ms));
    const cpu = (samples_: readonly ImportTime[]) => median(samples_.map((t) => t.cpuMs));
    const baselineMs = wall(baseline);
    const baselineCpuMs = cpu(baseline);
    const rows: BenchRow[] = [];
    const details: Record<string, unknown> = { samples, baselineMs, baselineCpuMs, node: process.version };
    for (const b of bundles) {
      const ms = wall(times.get(b.name) ?? []);
      const extra = ms - baselineMs;
      const cpuExtra = cpu(times.get(b.name) ?? []) - baselineCpuMs;
      const chainMs = wall(chainTimes.get(b.name) ?? []);
      options.log(
        `  ${b.name}: import +${round(extra, 1)} ms over an empty module (CPU +${round(cpuExtra, 1)} ms): ${extra <= GOAL_EXTRA_MS ? 'MET' : 'MISSED'} (≤ +${GOAL_EXTRA_MS} ms)`,
      );
      rows.push({
        metric: `${b.name} bundle size`,
        value: round(b.kb, 1),
        unit: 'KB',
        goal: `≤ ${GOAL_KB} KB`,
        pass: b.kb <= GOAL_KB,
        note: `${round(b.startKb, 1)} KB of it loaded at start, the rest in chunks loaded on first use; ${round(b.runtimeSdkKb, 1)} KB with the runtime's SDK`,
      });
      rows.push({
        metric: `${b.name} import, median of ${samples}`,
        value: round(ms, 1),
        unit: 'ms',
        baseline: { label: 'empty module import', value: round(baselineMs, 2) },
        comparison: { kind: 'difference', value: round(extra, 1) },
        goal: `≤ +${GOAL_EXTRA_MS} ms`,
        pass: withinGoal(extra, { max: GOAL_EXTRA_MS }),
        note: `CPU time +${round(cpuExtra, 1)} ms (${cpuExtra <= GOAL_EXTRA_MS ? 'within' : 'over'} the goal); ${round(chainMs - baselineMs, 1)} ms over it with the SDK's whole credential chain`,
      });
      details[b.name] = {
        kb: round(b.kb, 1),
        startKb: round(b.startKb, 1),
        runtimeSdkKb: round(b.runtimeSdkKb, 1),
        medianMs: round(ms, 2),
        medianCpuMs: round(cpu(times.get(b.name) ?? []), 2),
        sdkCredentialChainMedianMs: round(chainMs, 2),
        samplesMs: times.get(b.name)?.map((t) => round(t.ms, 2)),
        samplesCpuMs: times.get(b.name)?.map((t) => round(t.cpuMs, 2)),
      };
    }
    return {
      name: 'coldStart',
      title: 'Cold start: bundle size and import time in a fresh Node process',
      rows,
      details,
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
