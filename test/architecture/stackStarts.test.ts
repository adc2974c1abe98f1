/**
 * A local stack that a test starts in a process (`npm start`, `node --import tsx local/start.ts`)
 * writes its endpoints to `.postdate/local-stack.json` in its working directory. Started in the
 * repository's root, one file's stack overwrote another's file, and the CLI run by any test in the
 * root found whichever stack wrote last (decision 0299). So a test starts such a process only through
 * test/local/npmStartProcess.ts (`npmStart`, `startInOwnCheckout`: a checkout of its own). Each test
 * file is read here for a spawn of either that does not.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const THE_ONE_HOME = 'test/local/npmStartProcess.ts';

/** A call that starts a process, and what it is given up to its closing parenthesis's line. */
const SPAWN = /\b(spawn|spawnSync|spawnCaptured|execFile|execFileSync|fork)\(([^;]*?)\)[;,]?\n/gs;
/** What names a stack's start among its arguments. */
const STARTS_A_STACK = /local\/start\.ts|'npm',\s*\[\s*'start'/;

function testSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : testSources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Each spawn of a stack in `source`, as `file:line`. */
function stackSpawns(file: string, source: string): string[] {
  return [...source.matchAll(SPAWN)]
    .filter((call) => STARTS_A_STACK.test(call[2] ?? ''))
    .map((call) => `${file}:${source.slice(0, call.index).split('\n').length}`);
}

describe('a stack a test starts in a process', () => {
  it('is started through npmStartProcess.ts, in a checkout of its own, by every test file', () => {
    const found = testSources(join(ROOT, 'test'))
      .map((path) => relative(ROOT, path))
      .filter((file) => file !== THE_ONE_HOME)
      .flatMap((file) => stackSpawns(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(found).toEqual([]);
  });

  it('spots the spawns it forbids, on one line or several', () => {
    expect(
      stackSpawns(
        'a.test.ts',
        [
          "const child = spawn(process.execPath, ['--import', 'tsx', 'local/start.ts'], {",
          '  env,',
          '});',
          "spawnCaptured('npm', ['start'], { env });",
          "spawn('npx', ['tsx', 'cli/postdate.ts']);",
        ].join('\n'),
      ),
    ).toEqual(['a.test.ts:1', 'a.test.ts:4']);
  });
});
