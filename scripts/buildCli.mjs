/**
 * Compiles the `postdate` CLI (cli/postdate.ts and what it imports) into one JavaScript file,
 * `dist/cli.mjs`, that `node` runs as it is: no TypeScript compiler at run time (DESIGN §7: a
 * command answers in well under a second). Run by `prepare` (so after `npm ci`, and before
 * `npm pack`), and by the bin (cli/postdate.mjs) in a checkout whose sources are newer than the file.
 *
 * Plain JavaScript, not TypeScript: it runs before anything can compile TypeScript. Everything the
 * CLI imports is bundled in, its dependencies included: one file parses faster than the SDK's
 * hundreds of modules resolve (measured: about half the CPU time of `--help` with the package's
 * `dependencies` left as imports), and it runs from an installed tarball, which has no devDependencies
 * (commander, the SQS and Scheduler clients). `dist/cli.mjs` sits one level below the package root, as `cli/postdate.ts`
 * does, so its `new URL('../package.json', import.meta.url)` still finds the package's manifest.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The compiled CLI and the list of the repository's source files it was compiled from. */
export const CLI_BUNDLE = join(ROOT, 'dist', 'cli.mjs');
export const CLI_INPUTS = join(ROOT, 'dist', 'cli.inputs.json');

/** Writes `dist/cli.mjs` (and its inputs list); resolves with its path. */
export async function buildCli() {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [join(ROOT, 'cli', 'postdate.ts')],
    outfile: CLI_BUNDLE,
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // CommonJS dependencies bundled into ESM call `require` for Node's built-ins.
    banner: {
      js: "import { createRequire as __postdateCreateRequire } from 'node:module'; const require = __postdateCreateRequire(import.meta.url);",
    },
    metafile: true,
    write: false,
    logLevel: 'error',
  });
  // Written aside and renamed: a CLI started meanwhile (another terminal) reads the old file or the
  // new one, never half of one.
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  const writeWhole = (path, contents) => {
    const aside = `${path}.${process.pid}.tmp`;
    writeFileSync(aside, contents);
    renameSync(aside, path);
  };
  for (const file of result.outputFiles) writeWhole(file.path, file.contents);
  const inputs = Object.keys(result.metafile.inputs)
    .filter((input) => !input.includes('node_modules/'))
    .map((input) => relative(ROOT, join(ROOT, input)));
  writeWhole(CLI_INPUTS, `${JSON.stringify(inputs, null, 2)}\n`);
  return CLI_BUNDLE;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const written = await buildCli();
  process.stdout.write(`${relative(ROOT, written)}\n`);
}
