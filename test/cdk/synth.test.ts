import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../lib/constructs/functionEsbuild.js';
import { WEBHOOK_QUEUE } from '../../lib/webhookLayout.js';

const run = promisify(execFile);

interface RunResult {
  readonly code: number;
  readonly output: string;
}

/**
 * Runs bin/postdate.ts the way the CDK CLI does (`CDK_OUTDIR`, context in `CDK_CONTEXT_JSON`), with
 * real esbuild bundling, in an environment that holds no AWS credentials, no AWS config, no
 * region and no instance metadata: a synth that needed any of them would fail here.
 */
async function synthesizeApp(outdir: string, context: Record<string, string>): Promise<RunResult> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: outdir,
    CDK_OUTDIR: outdir,
    // The CLI merges cdk.json's context (the pinned feature flags) under the -c values.
    CDK_CONTEXT_JSON: JSON.stringify({ ...(await cdkJsonContext()), ...context }),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: join(outdir, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(outdir, 'no-aws-credentials'),
  };
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'bin/postdate.ts'], {
      cwd: PROJECT_ROOT,
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? 1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

/** The context of cdk.json, as the CDK CLI reads it. */
async function cdkJsonContext(): Promise<Record<string, unknown>> {
  const cdkJson = JSON.parse(await readFile(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdkJson.context;
}

describe('cdk.json', () => {
  it("pins every feature flag aws-cdk-lib recommends, and fails the synth on CloudFormation's default rules", async () => {
    const recommended = JSON.parse(
      await readFile(join(PROJECT_ROOT, 'node_modules/aws-cdk-lib/recommended-feature-flags.json'), 'utf8'),
    ) as Record<string, unknown>;
    const context = await cdkJsonContext();
    expect(context).toEqual(expect.objectContaining(recommended));
    expect(context['@aws-cdk/core:validateAgainstDefaultRules']).toBe(true);
  });
});

describe('the app synthesizes offline, with real bundling and no AWS credentials', () => {
  let outdir: string;
  let result: RunResult;
  let template: { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
  let manifest: { missing?: unknown[] };

  beforeAll(async () => {
    outdir = await mkdtemp(join(tmpdir(), 'postdate-synth-'));
    result = await synthesizeApp(outdir, {
      stackName: 'PostdateSynthTest',
      defaultFrom: 'noreply@example.org',
      allowedFrom: 'noreply@example.org,*@mail.example.org',
      maxAttempts: '6',
    });
    if (result.code === 0) {
      template = JSON.parse(await readFile(join(outdir, 'PostdateSynthTest.template.json'), 'utf8'));
      manifest = JSON.parse(await readFile(join(outdir, 'manifest.json'), 'utf8'));
    }
  }, 240_000);

  afterAll(async () => {
    if (outdir) await rm(outdir, { recursive: true, force: true });
  });

  it('exits 0 and writes the template, past cdk-nag and the built-in CloudFormation schema validation', () => {
    expect(result.output).not.toMatch(/ValidationFailed|AwsSolutions-/);
    expect(result.code, result.output).toBe(0);
    expect(Object.keys(template.Resources).length).toBeGreaterThan(50);
  });

  it('needs no context lookup (nothing that would call AWS)', () => {
    expect(manifest.missing ?? []).toEqual([]);
  });

  it('reads the props from context (-c maxAttempts=6)', () => {
    const queues = Object.values(template.Resources).filter((r) => r.Type === 'AWS::SQS::Queue');
    const redrive = queues.map((q) => q.Properties.RedrivePolicy).filter(Boolean);
    // The send queue's backstop of lib/queueLayout.ts for POSTDATE_MAX_ATTEMPTS = 6, beside the
    // webhook queue's own (lib/webhookLayout.ts), which does not depend on it.
    expect(redrive).toHaveLength(2);
    expect(redrive).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ maxReceiveCount: 3 * 6 + 10 }),
        expect.objectContaining({ maxReceiveCount: WEBHOOK_QUEUE.maxReceiveCount }),
      ]),
    );
  });

  it('bundles every function into an ES module that loads on Node and exports handler', async () => {
    const functions = Object.entries(template.Resources).filter(
      ([, r]) => r.Type === 'AWS::Lambda::Function',
    );
    expect(functions).toHaveLength(7);
    const bundles = functions.map(([id, r]) => {
      const key = (r.Properties.Code as { S3Key: string }).S3Key;
      return { id, file: join(outdir, `asset.${key.replace(/\.zip$/, '')}`, 'index.mjs') };
    });
    // A fresh Node process per the runtime: no tsx, no vitest transform, just the bundle.
    const script = `
      const bundles = ${JSON.stringify(bundles)};
      const report = {};
      for (const { id, file } of bundles) {
        try { report[id] = typeof (await import(file)).handler; } catch (e) { report[id] = 'load failed: ' + e.message; }
      }
      console.log(JSON.stringify(report));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH, AWS_REGION: 'eu-west-1' },
    });
    const report = JSON.parse(stdout) as Record<string, string>;
    expect(Object.values(report), stdout).toEqual(bundles.map(() => 'function'));
  });

  it("bundles the functions' own credential chain, not the SDK's (its SSO and ini links never answer in Lambda)", async () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    for (const r of functions) {
      const key = (r.Properties.Code as { S3Key: string }).S3Key;
      const asset = join(outdir, `asset.${key.replace(/\.zip$/, '')}`);
      // index.mjs and every chunk it may load (code splitting, decision 0114).
      const files = (await readdir(asset)).filter((file) => file.endsWith('.mjs'));
      expect(files).toContain('index.mjs');
      for (const file of files) {
        const code = await readFile(join(asset, file), 'utf8');
        // The SDK chain's debug lines name each link; the replacement names none.
        expect(code, file).not.toContain('defaultProvider::fromSSO');
        expect(code, file).not.toContain('defaultProvider::fromIni');
      }
    }
  });
});
