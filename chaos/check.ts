import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type CheckInput, type CheckResult, checkRun, formatReport } from './checker.js';

/**
 * Prints the one-screen report, writes the whole result (with the input's figures) as JSON, and
 * answers the exit code: 0 when nothing was lost, doubled without explanation, unexpected or
 * wrongly reported; 1 otherwise.
 */
export function emitReport(
  result: CheckResult,
  jsonPath: string,
  extra: Record<string, unknown> = {},
  title?: string,
  print: (text: string) => void = (text) => console.log(text),
): number {
  print(formatReport(result, title));
  mkdirSync(dirname(jsonPath), { recursive: true });
  writeFileSync(jsonPath, `${JSON.stringify({ ...extra, ...result }, null, 2)}\n`);
  print(`  report: ${jsonPath}`);
  return result.ok ? 0 : 1;
}

/**
 * `tsx chaos/check.ts <report-or-input.json> [report.json]`: checks a saved run again from its
 * transactions, kills, views and accepted messages (a chaos report keeps them under `input`).
 */
async function main(argv: readonly string[]): Promise<number> {
  const [inputPath, outPath] = argv;
  if (!inputPath) {
    console.error('usage: tsx chaos/check.ts <check-input.json> [report.json]');
    return 2;
  }
  // A chaos report holds its checker input under `input`; a bare input file works too.
  const parsed = JSON.parse(readFileSync(inputPath, 'utf8')) as CheckInput | { input: CheckInput };
  const input = 'input' in parsed ? parsed.input : parsed;
  return emitReport(checkRun(input), outPath ?? inputPath.replace(/(\.json)?$/, '.report.json'));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
