/**
 * The package build's second half (`npm run build`): the eight prebuilt function bundles, written to
 * `dist/functions/{name}/index.mjs` with the esbuild options the construct's NodejsFunction uses in
 * this repository (FUNCTION_ESBUILD_OPTIONS, one definition). An installed package deploys these
 * with `Code.fromAsset`, so a consumer's `cdk deploy` needs no esbuild, lock file or Docker.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { POSTDATE_FUNCTIONS } from '../lambdas/core/postdateFunctions.js';
import { FUNCTION_BUNDLE_FILE, FUNCTION_ESBUILD_OPTIONS } from '../lib/constructs/postdateFunction.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Writes every bundle below `outDir/functions/` and returns their paths. */
export async function bundleFunctions(outDir: string = join(ROOT, 'dist')): Promise<string[]> {
  const functionsDir = join(outDir, 'functions');
  rmSync(functionsDir, { recursive: true, force: true });
  return Promise.all(
    POSTDATE_FUNCTIONS.map(async (name) => {
      const outfile = join(functionsDir, name, FUNCTION_BUNDLE_FILE);
      await build({
        ...FUNCTION_ESBUILD_OPTIONS,
        mainFields: [...FUNCTION_ESBUILD_OPTIONS.mainFields],
        entryPoints: [join(ROOT, 'lambdas', name, 'handler.ts')],
        outfile,
        absWorkingDir: ROOT,
        logLevel: 'error',
      });
      return outfile;
    }),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const written = await bundleFunctions();
  process.stdout.write(`${written.map((file) => file.slice(ROOT.length)).join('\n')}\n`);
}
