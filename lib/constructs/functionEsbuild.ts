import { fileURLToPath } from 'node:url';

/**
 * The root the construct runs from: this repository when it runs from `lib/*.ts` (tests, `cdk synth`
 * here), the package's `dist/` when it runs from an installed package's `dist/lib/*.js`.
 */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The bundles are ESM. Dependencies written as CommonJS (nodemailer) call `require` for Node
 * built-ins, which esbuild's ESM output cannot do without a real `require`: the banner provides one.
 */
const ESM_REQUIRE_BANNER =
  "import { createRequire as __postdateCreateRequire } from 'node:module'; const require = __postdateCreateRequire(import.meta.url);";

/**
 * The one definition of how a function is compiled, in esbuild's own option names: the construct's
 * bundling, the package build (scripts/bundleFunctions.ts) and the cold-start benchmark use it
 * through `functionBuildOptions` (postdateFunction.ts), so the prebuilt bundles an installed package
 * deploys are the very ones this repository tests and measures; the local stack's sandboxes
 * (local/runners/functionBundle.ts) load what it builds, unminified. Kept apart from the construct
 * so that the local stack reads it without loading aws-cdk-lib. The AWS SDK is bundled (no externals): its
 * version is pinned in package.json and tested, not the runtime's; its credential chain is replaced
 * by the two links that can answer inside Lambda (lambdas/adapters/lambdaCredentialProvider.ts).
 */
export const FUNCTION_ESBUILD_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  mainFields: ['module', 'main'],
  banner: { js: ESM_REQUIRE_BANNER },
  minify: true,
  // Stack traces point into lambdas/*.ts through the source maps (the function's NODE_OPTIONS,
  // postdateFunction.ts), each in its own file, which Node reads only when a stack trace is printed.
  sourcemap: true,
  sourcesContent: false,
  alias: {
    '@aws-sdk/credential-provider-node': `${PROJECT_ROOT}lambdas/adapters/lambdaCredentialProvider.ts`,
  },
} as const;
