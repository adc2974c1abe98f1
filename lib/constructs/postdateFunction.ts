import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { type Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { PostdateFunctionName } from '../../lambdas/core/postdateFunctions.js';
import { acknowledge } from './acknowledge.js';

/**
 * The root the construct runs from: this repository when it runs from `lib/*.ts` (tests, `cdk synth`
 * here), the package's `dist/` when it runs from an installed package's `dist/lib/*.js`.
 */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const RUNTIME = lambda.Runtime.NODEJS_22_X;
export const ARCHITECTURE = lambda.Architecture.ARM_64;

/**
 * The bundles are ESM. Dependencies written as CommonJS (nodemailer) call `require` for Node
 * built-ins, which esbuild's ESM output cannot do without a real `require`: the banner provides one.
 */
const ESM_REQUIRE_BANNER =
  "import { createRequire as __postdateCreateRequire } from 'node:module'; const require = __postdateCreateRequire(import.meta.url);";

/**
 * The one definition of how a function is bundled, in esbuild's own option names: NodejsFunction's
 * `bundling` below is derived from it, and so is the package build (scripts/bundleFunctions.ts), so
 * the prebuilt bundles an installed package deploys are the very ones this repository tests. The AWS
 * SDK is bundled (no externals): its version is pinned in package.json and tested, not the runtime's;
 * its credential chain is replaced by the two links that can answer inside Lambda
 * (lambdas/adapters/lambdaCredentialProvider.ts).
 */
export const FUNCTION_ESBUILD_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  mainFields: ['module', 'main'],
  banner: { js: ESM_REQUIRE_BANNER },
  minify: true,
  // Stack traces point into lambdas/*.ts through the bundle's source map (NODE_OPTIONS below).
  sourcemap: true,
  sourcesContent: false,
  alias: {
    '@aws-sdk/credential-provider-node': `${PROJECT_ROOT}lambdas/adapters/lambdaCredentialProvider.ts`,
  },
} as const;

/** The file name of every bundle; the Lambda handler is `index.handler`. */
export const FUNCTION_BUNDLE_FILE = 'index.mjs';

/** Where the package build writes a function's bundle, below {@link PROJECT_ROOT} of the compiled package. */
export const prebuiltBundleDirectory = (name: PostdateFunctionName, root: string = PROJECT_ROOT): string =>
  `${root}functions/${name}`;

/**
 * How a function's code is made. The rule (docs/decisions/): the construct runs from the compiled
 * package exactly when this module is JavaScript (`dist/lib/constructs/postdateFunction.js`); then
 * the bundle the build wrote must be there, and is deployed as it is (`Code.fromAsset`: no esbuild,
 * no lock file, no Docker). From the TypeScript sources (this repository: tests, `cdk synth`) there
 * is no prebuilt bundle to trust, and NodejsFunction bundles `lambdas/{name}/handler.ts` with the
 * local esbuild, from the same options.
 */
export type FunctionCodeSource =
  | { readonly kind: 'prebuilt'; readonly directory: string }
  | { readonly kind: 'source'; readonly entry: string };

export class MissingFunctionBundleError extends Error {
  override readonly name = 'MissingFunctionBundleError';
  constructor(
    readonly functionName: PostdateFunctionName,
    readonly directory: string,
  ) {
    super(
      `Postdate's prebuilt ${functionName} function is missing (${directory}/${FUNCTION_BUNDLE_FILE}): the package was not built. Run \`npm run build\` in the Postdate repository before packing it.`,
    );
  }
}

export function functionCodeSource(
  name: PostdateFunctionName,
  moduleUrl: string = import.meta.url,
  exists: (path: string) => boolean = existsSync,
): FunctionCodeSource {
  const root = fileURLToPath(new URL('../../', moduleUrl));
  if (!moduleUrl.endsWith('.js')) return { kind: 'source', entry: `${root}lambdas/${name}/handler.ts` };
  const directory = prebuiltBundleDirectory(name, root);
  if (!exists(`${directory}/${FUNCTION_BUNDLE_FILE}`)) throw new MissingFunctionBundleError(name, directory);
  return { kind: 'prebuilt', directory };
}

/** Resolves a package as Node would from the project root (the default of {@link assertEsbuildResolvable}). */
const resolveFromProject = (name: string): string =>
  createRequire(`${PROJECT_ROOT}package.json`).resolve(name);

/**
 * Throws, naming esbuild, when it cannot be resolved. Without it NodejsFunction silently falls back
 * to bundling in Docker (an `npm ci --omit=dev` deploy, where esbuild, a devDependency, is absent):
 * a different build, or a synth that hangs on a machine without Docker.
 */
export function assertEsbuildResolvable(resolve: (name: string) => string = resolveFromProject): void {
  try {
    resolve('esbuild');
  } catch (error) {
    throw new Error(
      'Postdate bundles its functions with esbuild, which cannot be resolved from the project: install the dev dependencies (`npm ci`, not `npm ci --omit=dev`) or add esbuild to your dependencies. Postdate never falls back to Docker bundling.',
      { cause: error },
    );
  }
}

/** {@link FUNCTION_ESBUILD_OPTIONS} in NodejsFunction's names (it adds `bundle` and `platform` itself). */
const nodejsBundling: nodejs.BundlingOptions = {
  forceDockerBundling: false,
  format: nodejs.OutputFormat.ESM,
  target: FUNCTION_ESBUILD_OPTIONS.target,
  mainFields: [...FUNCTION_ESBUILD_OPTIONS.mainFields],
  banner: FUNCTION_ESBUILD_OPTIONS.banner.js,
  minify: FUNCTION_ESBUILD_OPTIONS.minify,
  sourceMap: FUNCTION_ESBUILD_OPTIONS.sourcemap,
  sourcesContent: FUNCTION_ESBUILD_OPTIONS.sourcesContent,
  bundleAwsSDK: true,
  esbuildArgs: Object.fromEntries(
    Object.entries(FUNCTION_ESBUILD_OPTIONS.alias).map(([from, to]) => [`--alias:${from}`, to]),
  ),
};

export interface PostdateFunctionProps {
  readonly name: PostdateFunctionName;
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize: number;
  readonly environment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
}

/**
 * One Postdate Lambda: its prebuilt bundle (installed package) or local esbuild bundling (never
 * Docker), nodejs22.x on arm64, its own log
 * group with a retention, and its own role that may write only to that log group. Every other
 * permission is granted by the construct that owns the resource.
 */
export class PostdateFunction extends Construct {
  readonly function: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: PostdateFunctionProps) {
    super(scope, id);
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // An explicit role instead of the AWSLambdaBasicExecutionRole managed policy, which may write to
    // every log group of the account.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Postdate ${props.name} function`,
    });
    this.logGroup.grantWrite(this.role);

    const common = {
      description: props.description,
      runtime: RUNTIME,
      architecture: ARCHITECTURE,
      memorySize: props.memorySize,
      timeout: props.timeout,
      role: this.role,
      logGroup: this.logGroup,
      environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps' },
    };
    const source = functionCodeSource(props.name);
    if (source.kind === 'prebuilt') {
      this.function = new lambda.Function(this, 'Function', {
        ...common,
        code: lambda.Code.fromAsset(source.directory),
        handler: 'index.handler',
      });
    } else {
      // Only when this stack is bundled (the assertion tests skip bundling).
      if (Stack.of(this).bundlingRequired) assertEsbuildResolvable();
      this.function = new nodejs.NodejsFunction(this, 'Function', {
        ...common,
        entry: source.entry,
        handler: 'handler',
        projectRoot: PROJECT_ROOT,
        depsLockFilePath: `${PROJECT_ROOT}package-lock.json`,
        bundling: nodejsBundling,
      });
    }
    acknowledge(
      this.function,
      'AwsSolutions-L1',
      'Postdate pins nodejs22.x (issue 7): the code is built and tested for Node 20 and 22, and a runtime change is a deliberate, tested upgrade rather than whatever is newest at synth time.',
    );
  }
}
