/**
 * Issue 17 §1: the package installs and works in another CDK app as construct libraries do. The test
 * builds and packs this repository (`npm run build`, `npm pack`), installs the tarball with
 * aws-cdk-lib and constructs into a scratch app in a temp dir, and there, with plain node (no cdk CLI,
 * no tsx, no esbuild installed), synthesizes a stack with `new Postdate(…)` and imports
 * `postdate/outbox` and `postdate/client`. It is slow (a build and an install): one generous timeout.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../lib/constructs/functionEsbuild.js';
import { STACK_OUTPUT } from '../../lib/stackOutputs.js';

const run = promisify(execFile);
/** Deployed by a stack with the defaults (`bounces` only comes with an SES notification topic). */
const FUNCTIONS = ['api', 'authorizer', 'events', 'relay', 'sender', 'sweeper', 'webhooks'];
/** Every bundle the package ships. */
const BUNDLES = [...FUNCTIONS, 'bounces'];
const repoPackage = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};

/** npm with a quiet, offline-first setup; the registry is still reachable for what the cache lacks. */
async function npm(args: readonly string[], cwd: string): Promise<string> {
  const { stdout } = await run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true', npm_config_update_notifier: 'false' },
  });
  return stdout;
}

const SYNTH_SCRIPT = `
import { readFileSync } from 'node:fs';
import { App, Stack } from 'aws-cdk-lib';
import { Postdate } from 'postdate';
import * as outbox from 'postdate/outbox';
import * as client from 'postdate/client';

const app = new App({ outdir: 'cdk.out' });
const stack = new Stack(app, 'Consumer');
const postdate = new Postdate(stack, 'Postdate', {
  defaultFrom: 'ops@example.com',
  allowedFrom: ['*@example.com'],
});
postdate.addStackOutputs();
const assembly = app.synth();
const template = JSON.parse(readFileSync(assembly.getStackByName('Consumer').templateFullPath, 'utf8'));
const functions = Object.values(template.Resources)
  .filter((resource) => resource.Type === 'AWS::Lambda::Function')
  .map((resource) => ({
    handler: resource.Properties.Handler,
    runtime: resource.Properties.Runtime,
    code: resource.Properties.Code,
    description: resource.Properties.Description,
  }));
const assets = JSON.parse(readFileSync(\`\${assembly.directory}/Consumer.assets.json\`, 'utf8')).files;
for (const fn of functions) {
  const key = fn.code.S3Key?.['Fn::Sub'] ?? fn.code.S3Key;
  fn.asset = assets[String(key).slice(0, -'.zip'.length)]?.source.path;
}
const transactItems = outbox.buildOutboxTransactItems({
  tableName: 'outbox',
  tenant: 'acme',
  idempotencyKey: 'order-7',
  now: new Date('2026-12-01T12:00:00Z'),
  body: { to: ['ada@example.com'], subject: 'Hi', text: 'Hello.' },
  validation: { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 30 },
});
const api = client.createPostdateClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'pd_x' });
process.stdout.write(JSON.stringify({
  functions,
  outdir: assembly.directory,
  functionNames: Object.keys(postdate.functions).sort(),
  outboxItems: transactItems.length,
  clientCalls: Object.keys(api).sort(),
  problemError: typeof client.PostdateProblemError,
  outputs: Object.keys(template.Outputs ?? {}).sort(),
}));
`;

const CONSUMER_TS = `
import { App, Stack } from 'aws-cdk-lib';
import { Postdate, type PostdateProps } from 'postdate';
import { buildOutboxTransactItems, type TransactWriteItem } from 'postdate/outbox';
import { createPostdateClient, type Message, PostdateProblemError } from 'postdate/client';

const props: PostdateProps = { defaultFrom: 'ops@example.com', allowedFrom: ['*@example.com'] };
new Postdate(new Stack(new App(), 'Typed'), 'Postdate', props).addStackOutputs();
const items: TransactWriteItem[] = buildOutboxTransactItems;
export async function send(): Promise<Message> {
  const postdate = createPostdateClient({ baseUrl: 'https://api.example.com', apiKey: 'pd_x' });
  try {
    return (await postdate.enqueue({ to: ['ada@example.com'], subject: 'Hi', text: 'Hello.' })).message;
  } catch (error) {
    if (error instanceof PostdateProblemError) throw new Error(error.type);
    throw error;
  }
}
`;

describe('the postdate package, installed in another CDK app', () => {
  let work: string;
  let app: string;
  let tarball: string;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'postdate-package-'));
    app = join(work, 'app');
    await npm(['run', 'build', '--silent'], PROJECT_ROOT);
    // The build just ran; its scripts' output would spoil the JSON (`prepack` builds for a plain `npm pack`).
    const packed = JSON.parse(
      await npm(['pack', '--json', '--ignore-scripts', '--pack-destination', work], PROJECT_ROOT),
    ) as {
      filename: string;
      files: { path: string }[];
    }[];
    tarball = join(work, packed[0]?.filename ?? '');
    writeFileSync(join(work, 'files.json'), JSON.stringify(packed[0]?.files.map((file) => file.path)));
    await run('mkdir', ['-p', app]);
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2),
    );
    await npm(
      [
        'install',
        tarball,
        `aws-cdk-lib@${repoPackage.devDependencies['aws-cdk-lib']}`,
        `constructs@${repoPackage.devDependencies.constructs}`,
        '--prefer-offline',
      ],
      app,
    );
  }, 600_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('ships compiled ESM with types and every prebuilt bundle, no TypeScript sources', () => {
    const files = JSON.parse(readFileSync(join(work, 'files.json'), 'utf8')) as string[];
    for (const name of BUNDLES) expect(files).toContain(`dist/functions/${name}/index.mjs`);
    for (const entry of ['dist/lib/Postdate', 'dist/lambdas/outbox/index', 'dist/lambdas/client/index']) {
      expect(files).toContain(`${entry}.js`);
      expect(files).toContain(`${entry}.d.ts`);
    }
    expect(files).toContain('dist/openapi.json');
    expect(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
    expect(files.some((file) => file.startsWith('test/') || file.startsWith('local/'))).toBe(false);
  });

  it('installs without esbuild, patch-package or a lock file of its own', () => {
    const installed = join(app, 'node_modules');
    expect(existsSync(join(installed, 'postdate', 'dist', 'lib', 'Postdate.js'))).toBe(true);
    expect(existsSync(join(installed, 'esbuild'))).toBe(false);
    expect(existsSync(join(installed, 'patch-package'))).toBe(false);
    expect(existsSync(join(installed, 'postdate', 'package-lock.json'))).toBe(false);
  });

  it('installs the postdate bin as compiled JavaScript that runs without tsx (DESIGN §7)', async () => {
    const files = JSON.parse(readFileSync(join(work, 'files.json'), 'utf8')) as string[];
    expect(files).toEqual(expect.arrayContaining(['cli/postdate.mjs', 'dist/cli.mjs']));
    expect(existsSync(join(app, 'node_modules', 'tsx'))).toBe(false);
    const bin = join(app, 'node_modules', '.bin', 'postdate');
    const version = await run(bin, ['--version'], { cwd: app });
    expect(version.stdout.trim()).toBe(
      JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')).version,
    );
    const help = await run(bin, ['--help'], { cwd: app });
    for (const command of ['messages', 'dlq', 'reconcile', 'keys', 'templates']) {
      expect(help.stdout).toContain(command);
    }
  }, 60_000);

  it('synthesizes new Postdate(…) with plain node: its functions deployed from the prebuilt bundles', async () => {
    writeFileSync(join(app, 'synth.mjs'), SYNTH_SCRIPT);
    const { stdout } = await run(process.execPath, ['synth.mjs'], {
      cwd: app,
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
    });
    const result = JSON.parse(stdout) as {
      functions: { handler: string; runtime: string; code: { S3Key?: unknown }; asset: string }[];
      outdir: string;
      functionNames: string[];
      outboxItems: number;
      clientCalls: string[];
      problemError: string;
      outputs: string[];
    };
    expect(result.functionNames).toEqual(FUNCTIONS);
    const postdateFunctions = result.functions.filter((fn) => fn.handler === 'index.handler');
    expect(postdateFunctions).toHaveLength(FUNCTIONS.length);
    for (const fn of postdateFunctions) {
      expect(fn.runtime).toBe('nodejs22.x');
      expect(fn.code.S3Key).toBeDefined();
      // The asset is the directory the package build wrote (index.mjs, its chunks, their source maps),
      // copied as it is into the cloud assembly.
      const files = readdirSync(join(app, result.outdir, fn.asset));
      expect(files).toEqual(expect.arrayContaining(['index.mjs', 'index.mjs.map']));
      for (const file of files) expect(file).toMatch(/\.mjs(\.map)?$/);
      for (const file of files.filter((name) => name.endsWith('.mjs')))
        expect(files).toContain(`${file}.map`);
    }
    expect(result.outboxItems).toBe(2);
    // A typed method for every operation of the OpenAPI document, and the raw `http` client (issue 29).
    const operationIds = Object.values(
      JSON.parse(readFileSync(join(PROJECT_ROOT, 'docs/openapi.json'), 'utf8')).paths as Record<
        string,
        Record<string, { operationId?: string }>
      >,
    ).flatMap((operations) => Object.values(operations).flatMap((operation) => operation.operationId ?? []));
    expect(result.clientCalls).toEqual([...operationIds, 'http'].sort());
    expect(result.problemError).toBe('function');
    // The outputs `postdate --stack NAME` reads, under the keys it reads (lib/stackOutputs.ts).
    expect(result.outputs).toEqual(Object.values(STACK_OUTPUT).sort());
  }, 120_000);

  it('loads postdate/client from CommonJS too: require() of the ESM entry, as a CJS service of Node ≥ 20.19 does (decision 0270)', async () => {
    writeFileSync(
      join(app, 'require.cjs'),
      `const client = require('postdate/client');
const api = client.createPostdateClient({ baseUrl: 'https://api.example.com/prod/', apiKey: 'pd_x' });
console.log(JSON.stringify({ create: typeof client.createPostdateClient, paginate: typeof client.paginate,
  enqueue: typeof api.enqueue, network: typeof client.PostdateNetworkError }));
`,
    );
    const { stdout } = await run(process.execPath, ['require.cjs'], { cwd: app });
    expect(JSON.parse(stdout)).toEqual({
      create: 'function',
      paginate: 'function',
      enqueue: 'function',
      network: 'function',
    });
  }, 60_000);

  it("type-checks a consumer's code against the package's declarations (exports' types conditions)", async () => {
    writeFileSync(join(app, 'consumer.ts'), CONSUMER_TS);
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
          lib: ['ES2023', 'DOM'],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: app }).catch(
      (error: { stdout?: string }) => error,
    );
    // The one deliberate mistake (a function assigned to TransactWriteItem[]) proves the types are real.
    const output = 'stdout' in checked ? String(checked.stdout) : '';
    expect(output.match(/error TS\d+/g)).toHaveLength(1);
    expect(output).toContain('consumer.ts(9,');
  }, 120_000);
});
