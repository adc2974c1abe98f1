import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetHashType, DockerImage, type Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { PostdateFunctionName } from '../../lambdas/core/postdateFunctions.js';
import { acknowledge } from './acknowledge.js';
import { FUNCTION_ESBUILD_OPTIONS, PROJECT_ROOT } from './functionEsbuild.js';

export const RUNTIME = lambda.Runtime.NODEJS_22_X;
export const ARCHITECTURE = lambda.Architecture.ARM_64;

/** The file name of every function's entry; the Lambda handler is `index.handler`. */
export const FUNCTION_BUNDLE_FILE = 'index.mjs';

/**
 * esbuild's options for one function: {@link FUNCTION_ESBUILD_OPTIONS}, written as a directory with
 * code splitting (decision 0114). `outdir` receives `index.mjs` and the chunks it loads: those it
 * imports statically load with it at a cold start, those behind a dynamic `import()` (Handlebars,
 * the S3 client) only when that `import()` first runs, so a cold start neither parses nor runs them.
 */
export function functionBuildOptions(name: PostdateFunctionName, outdir: string) {
  return {
    ...FUNCTION_ESBUILD_OPTIONS,
    mainFields: [...FUNCTION_ESBUILD_OPTIONS.mainFields],
    entryPoints: [{ in: `${PROJECT_ROOT}lambdas/${name}/handler.ts`, out: 'index' }],
    outdir,
    splitting: true,
    outExtension: { '.js': '.mjs' },
    chunkNames: '[name]-[hash]',
    absWorkingDir: PROJECT_ROOT,
    logLevel: 'error' as const,
  };
}

/** The part of esbuild's metafile that says which output loads which (esbuild's `Metafile`). */
export interface BundleOutputs {
  readonly outputs: Readonly<
    Record<
      string,
      {
        readonly bytes: number;
        readonly entryPoint?: string;
        readonly imports: readonly { readonly path: string; readonly kind: string }[];
      }
    >
  >;
}

/**
 * The output files a cold start loads: the entry and every chunk it reaches through static `import`
 * statements. Chunks reached only through a dynamic `import()` load when that code first runs.
 */
export function outputsLoadedAtStart(metafile: BundleOutputs): string[] {
  const entry = Object.keys(metafile.outputs).find((path) => metafile.outputs[path]?.entryPoint);
  const loaded = new Set<string>(entry === undefined ? [] : [entry]);
  for (const path of loaded)
    for (const imported of metafile.outputs[path]?.imports ?? [])
      if (imported.kind === 'import-statement' && imported.path in metafile.outputs)
        loaded.add(imported.path);
  return [...loaded];
}

/** Where the package build writes a function's bundle, below {@link PROJECT_ROOT} of the compiled package. */
export const prebuiltBundleDirectory = (name: PostdateFunctionName, root: string = PROJECT_ROOT): string =>
  `${root}functions/${name}`;

/**
 * How a function's code is made. The rule (docs/decisions/): the construct runs from the compiled
 * package exactly when this module is JavaScript (`dist/lib/constructs/postdateFunction.js`); then
 * the bundle the build wrote must be there, and is deployed as it is (`Code.fromAsset`: no esbuild,
 * no lock file, no Docker). From the TypeScript sources (this repository: tests, `cdk synth`) there
 * is no prebuilt bundle to trust, and the construct bundles `lambdas/{name}/handler.ts` with the
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
 * Throws, naming esbuild, when it cannot be resolved (an `npm ci --omit=dev` deploy, where esbuild,
 * a devDependency, is absent), rather than an error about a module path or a fall-back to Docker.
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

/**
 * Bundles one function into `outputDir` with the project's esbuild, synchronously (CDK's local
 * bundling is a synchronous call). esbuild is loaded here, not imported: an installed package,
 * which deploys its prebuilt bundles, has no esbuild.
 */
function bundleFunctionSync(name: PostdateFunctionName, outputDir: string): void {
  assertEsbuildResolvable();
  const esbuild = createRequire(`${PROJECT_ROOT}package.json`)('esbuild') as typeof import('esbuild');
  esbuild.buildSync(functionBuildOptions(name, outputDir));
}

/**
 * The image CDK would bundle in when local bundling declines. Postdate's local bundling never
 * declines (it bundles or throws), so this only says why there is no Docker path.
 */
class NoDockerBundling extends DockerImage {
  constructor() {
    super('postdate-bundles-locally-only');
  }
  override run(): void {
    throw new Error(
      'Postdate bundles its functions with the local esbuild only (code splitting, decision 0114); it never bundles in Docker.',
    );
  }
}

/**
 * A function's code from the TypeScript sources: bundled by {@link bundleFunctionSync} when the stack
 * is synthesized for deployment. The asset is hashed on the bundle's output; a stack the CDK does not
 * bundle (the assertion tests' `aws:cdk:bundling-stacks: []`) stages a placeholder and runs no esbuild.
 */
function bundledCode(name: PostdateFunctionName, entry: string): lambda.Code {
  return lambda.Code.fromAsset(dirname(entry), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: new NoDockerBundling(),
      local: {
        tryBundle(outputDir) {
          bundleFunctionSync(name, outputDir);
          return true;
        },
      },
    },
  });
}

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
 * Docker), nodejs22.x on arm64, its own log group with a retention, and its own role that may write only to that log group. Every other
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

    const source = functionCodeSource(props.name);
    this.function = new lambda.Function(this, 'Function', {
      description: props.description,
      runtime: RUNTIME,
      architecture: ARCHITECTURE,
      memorySize: props.memorySize,
      timeout: props.timeout,
      role: this.role,
      logGroup: this.logGroup,
      environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps' },
      code:
        source.kind === 'prebuilt'
          ? lambda.Code.fromAsset(source.directory)
          : bundledCode(props.name, source.entry),
      handler: 'index.handler',
    });
    acknowledge(
      this.function,
      'AwsSolutions-L1',
      'Postdate pins nodejs22.x (issue 7): the code is built and tested for Node 20 and 22, and a runtime change is a deliberate, tested upgrade rather than whatever is newest at synth time.',
    );
  }

  /**
   * Lets the function's code send to `queue`: sqs:SendMessage only (DESIGN §6), not CDK's
   * `grantSendMessages`, which adds the queue's attributes and URL, read by none of Postdate's code.
   * Every queue is SQS-managed encrypted, so no key grant goes with it.
   */
  sendsTo(queue: sqs.IQueue): void {
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [queue.queueArn] }),
    );
  }
}
