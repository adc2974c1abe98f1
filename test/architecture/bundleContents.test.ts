/**
 * What the function bundles carry, from esbuild's own account (its metafile), built with the
 * functions' esbuild options: the weight that never runs in Lambda stays out.
 */
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { POSTDATE_FUNCTIONS } from '../../lambdas/core/postdateFunctions.js';
import { FUNCTION_ESBUILD_OPTIONS, PROJECT_ROOT } from '../../lib/constructs/postdateFunction.js';

async function metafileOf(name: string): Promise<Metafile> {
  const result = await build({
    ...FUNCTION_ESBUILD_OPTIONS,
    mainFields: [...FUNCTION_ESBUILD_OPTIONS.mainFields],
    entryPoints: [`${PROJECT_ROOT}lambdas/${name}/handler.ts`],
    outdir: '/nonexistent',
    write: false,
    absWorkingDir: PROJECT_ROOT,
    metafile: true,
    logLevel: 'error',
  });
  return result.metafile;
}

/** Bundled input files, each with the bytes it adds to the output. */
async function bundledInputs(name: string): Promise<Map<string, number>> {
  const metafile = await metafileOf(name);
  const output = Object.values(metafile.outputs).find((candidate) => candidate.entryPoint);
  return new Map(Object.entries(output?.inputs ?? {}).map(([file, input]) => [file, input.bytesInOutput]));
}

const packageOf = (file: string): string | undefined => file.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1];

describe.each(POSTDATE_FUNCTIONS)('the %s bundle', (name) => {
  it("carries the functions' credential chain, none of the SDK chain's SSO, ini, process, web-identity or metadata links", async () => {
    const inputs = await bundledInputs(name);
    const packages = new Set([...inputs.keys()].flatMap((file) => packageOf(file) ?? []));
    for (const absent of [
      '@aws-sdk/credential-provider-node',
      '@aws-sdk/credential-provider-ini',
      '@aws-sdk/credential-provider-sso',
      '@aws-sdk/credential-provider-process',
      '@aws-sdk/credential-provider-web-identity',
      '@aws-sdk/nested-clients',
    ])
      expect(packages, absent).not.toContain(absent);
    expect([...inputs.keys()]).toContain('lambdas/adapters/lambdaCredentialProvider.ts');
  });

  it("carries zod's English messages only, never its forty other locales", async () => {
    const locales = [...(await bundledInputs(name))].filter(
      ([file, bytes]) => file.includes('node_modules/zod/v4/locales/') && bytes > 0,
    );
    expect(locales.map(([file]) => file.replace(/.*\/locales\//, ''))).toEqual(
      locales.length === 0 ? [] : ['en.js'],
    );
  });
});

describe('the api bundle', () => {
  it('serves the document generated at build time: no OpenAPI generator, the committed docs/openapi.json inlined', async () => {
    const inputs = await bundledInputs('api');
    const packages = new Set([...inputs.keys()].flatMap((file) => packageOf(file) ?? []));
    expect(packages).not.toContain('@asteasolutions/zod-to-openapi');
    expect([...inputs.keys()].filter((file) => file.startsWith('lib/openapi/'))).toEqual([]);
    expect([...inputs.keys()]).toContain('docs/openapi.json');
  });
});
