/**
 * The package build's second half (`npm run build`): the eight prebuilt functions, each written to
 * `dist/functions/{name}/` (`index.mjs` and the chunks it loads) with the esbuild options the
 * construct bundles with in this repository (functionBuildOptions, one definition). An installed
 * package deploys these directories with `Code.fromAsset`, so a consumer's `cdk deploy` needs no
 * esbuild, lock file or Docker.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { POSTDATE_FUNCTIONS } from '../lambdas/core/postdateFunctions.js';
import {
  FUNCTION_BUNDLE_FILE,
  functionBuildOptions,
  prebuiltBundleDirectory,
} from '../lib/constructs/postdateFunction.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Writes every function below `outDir/functions/` and returns the paths of their entries. */
export async function bundleFunctions(outDir: string = join(ROOT, 'dist')): Promise<string[]> {
  rmSync(join(outDir, 'functions'), { recursive: true, force: true });
  return Promise.all(
    POSTDATE_FUNCTIONS.map(async (name) => {
      const directory = prebuiltBundleDirectory(name, `${outDir}/`);
      await build(functionBuildOptions(name, directory));
      return join(directory, FUNCTION_BUNDLE_FILE);
    }),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const written = await bundleFunctions();
  process.stdout.write(`${written.map((file) => file.slice(ROOT.length)).join('\n')}\n`);
}
