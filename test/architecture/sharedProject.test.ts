/**
 * The `shared` project (vitest.config.ts `SHARED`) runs its files in one worker's module graph
 * (`isolate: false`): what one file leaves in a module or on `process` is there for the next file of
 * that worker. Its rule is that none leaves anything: no environment variable set, no spy, mock,
 * stub or fake timer, no listener on `process`, no exit code, no patched prototype, no child
 * process, no borrowed CLI `main` (test/cli/cliFixtures.ts `runMain` sets `process.env` and the
 * streams while it runs). Each file is read here: one that needs any of these belongs in `parts`.
 * What the files import was read when they moved (decision 0298); this holds the files themselves.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SHARED } from '../../vitest.config.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `dir/{a,b}.test.ts` → `dir/a.test.ts`, `dir/b.test.ts` (the only glob SHARED uses). */
function expand(pattern: string): string[] {
  const braces = /^(.*)\{([^}]*)\}(.*)$/.exec(pattern);
  if (braces === null) return [pattern];
  const [, before = '', names = '', after = ''] = braces;
  return names.split(',').map((name) => `${before}${name}${after}`);
}

/** What may leak into the next file of a worker, and how each is spotted in a file's source. */
const LEAKS: readonly (readonly [string, RegExp])[] = [
  ['a spy, mock, stub or fake timer', /\bvi\.(spyOn|mock|doMock|stubEnv|stubGlobal|useFakeTimers)\b/],
  [
    'an environment variable set',
    /(\bprocess\.env(\.\w+|\[[^\]]+\])\s*(=(?!=)|\?\?=|\|\|=)|delete process\.env)/,
  ],
  ['a listener on process', /\bprocess\.(on|once|addListener|prependListener)\(/],
  ['an exit code', /\bprocess\.exitCode\s*=(?!=)/],
  [
    'a patched prototype or global',
    /(\.prototype\.\w+|\bglobalThis\.\w+|\bprocess\.std(out|err)\.write)\s*=(?!=)/,
  ],
  ['a child process', /from 'node:child_process'/],
  ['the CLI main borrowed', /\brunMain\(/],
];

const files = SHARED.flatMap(expand);

describe('the shared project', () => {
  it('names files that exist (a misspelt one would run in parts unnoticed)', () => {
    expect(files.filter((file) => !existsSync(`${ROOT}${file}`))).toEqual([]);
  });

  it('holds no file that leaves module or process state to the next file of its worker', () => {
    const leaking = files
      .filter((file) => existsSync(`${ROOT}${file}`))
      .flatMap((file) => {
        const source = readFileSync(`${ROOT}${file}`, 'utf8');
        return LEAKS.filter(([, pattern]) => pattern.test(source)).map(([what]) => `${file}: ${what}`);
      });
    expect(leaking).toEqual([]);
  });
});
