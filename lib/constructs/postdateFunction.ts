import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { type Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { acknowledge } from './acknowledge.js';

/** The repository root: entries, tsconfig and the lock file are resolved from here. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The functions of Postdate; each is `lambdas/{name}/handler.ts` exporting `handler`. */
export type PostdateFunctionName = 'api' | 'authorizer' | 'relay' | 'sender' | 'sweeper';

export const RUNTIME = lambda.Runtime.NODEJS_22_X;
export const ARCHITECTURE = lambda.Architecture.ARM_64;

/**
 * The bundles are ESM. Dependencies written as CommonJS (nodemailer) call `require` for Node
 * built-ins, which esbuild's ESM output cannot do without a real `require`: the banner provides one.
 */
const ESM_REQUIRE_BANNER =
  "import { createRequire as __postdateCreateRequire } from 'node:module'; const require = __postdateCreateRequire(import.meta.url);";

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

export interface PostdateFunctionProps {
  readonly name: PostdateFunctionName;
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize: number;
  readonly environment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
}

/**
 * One Postdate Lambda: local esbuild bundling (never Docker), nodejs22.x on arm64, its own log
 * group with a retention, and its own role that may write only to that log group. Every other
 * permission is granted by the construct that owns the resource.
 */
export class PostdateFunction extends Construct {
  readonly function: nodejs.NodejsFunction;
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

    // Only when this stack is bundled (the assertion tests skip bundling).
    if (Stack.of(this).bundlingRequired) assertEsbuildResolvable();

    this.function = new nodejs.NodejsFunction(this, 'Function', {
      entry: `${PROJECT_ROOT}lambdas/${props.name}/handler.ts`,
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: `${PROJECT_ROOT}package-lock.json`,
      description: props.description,
      runtime: RUNTIME,
      architecture: ARCHITECTURE,
      memorySize: props.memorySize,
      timeout: props.timeout,
      role: this.role,
      logGroup: this.logGroup,
      // Stack traces point into lambdas/*.ts through the bundle's source map.
      environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps' },
      bundling: {
        forceDockerBundling: false,
        format: nodejs.OutputFormat.ESM,
        mainFields: ['module', 'main'],
        banner: ESM_REQUIRE_BANNER,
        target: 'node22',
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        // The SDK version is pinned in package.json and tested; bundle it rather than take the
        // runtime's.
        bundleAwsSDK: true,
      },
    });
    acknowledge(
      this.function,
      'AwsSolutions-L1',
      'Postdate pins nodejs22.x (issue 7): the code is built and tested for Node 20 and 22, and a runtime change is a deliberate, tested upgrade rather than whatever is newest at synth time.',
    );
  }
}
