/**
 * What the function bundles carry, from esbuild's own account (its metafile), built as the functions
 * are (functionBuildOptions: the entry and its chunks): the weight that never runs in Lambda stays out.
 */
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { POSTDATE_FUNCTIONS, type PostdateFunctionName } from '../../lambdas/core/postdateFunctions.js';
import { functionBuildOptions, outputsLoadedAtStart } from '../../lib/constructs/postdateFunction.js';

/**
 * Each function built once for the file: every test reads the same esbuild account of it, and a build
 * of each test anew (some 40 builds for 9 functions) made the file's time.
 */
const metafiles = new Map<PostdateFunctionName, Promise<Metafile>>();

function metafileOf(name: PostdateFunctionName): Promise<Metafile> {
  let metafile = metafiles.get(name);
  if (metafile === undefined) {
    metafile = build({ ...functionBuildOptions(name, '/nonexistent'), write: false, metafile: true }).then(
      (result) => result.metafile,
    );
    metafiles.set(name, metafile);
  }
  return metafile;
}

/** Bundled input files, each with the bytes it adds to the output: the entry and all its chunks. */
async function bundledInputs(name: PostdateFunctionName): Promise<Map<string, number>> {
  const metafile = await metafileOf(name);
  const inputs = new Map<string, number>();
  for (const output of Object.values(metafile.outputs))
    for (const [file, input] of Object.entries(output.inputs))
      inputs.set(file, (inputs.get(file) ?? 0) + input.bytesInOutput);
  return inputs;
}

const packageOf = (file: string): string | undefined => file.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1];

/** Input files of what a cold start loads: the entry and the chunks it imports statically. */
async function inputsLoadedAtStart(name: PostdateFunctionName): Promise<Set<string>> {
  const metafile = await metafileOf(name);
  return new Set(
    outputsLoadedAtStart(metafile).flatMap((output) => Object.keys(metafile.outputs[output]?.inputs ?? {})),
  );
}

/**
 * Heavy code only some invocations run (decision 0114): behind a dynamic `import()`, so code splitting
 * puts it in a chunk that a cold start neither parses nor runs. `in` names the functions that carry it.
 */
const LOADED_ON_FIRST_USE = [
  {
    what: 'the S3 client and its presigner (the first attachment)',
    sources: ['node_modules/@aws-sdk/client-s3/', 'node_modules/@aws-sdk/s3-request-presigner/'],
    in: ['api', 'sender', 'events'],
  },
  {
    what: 'Handlebars (the first template render or syntax check)',
    sources: ['node_modules/handlebars/', 'lambdas/core/renderTemplate.ts', 'lambdas/core/templateSyntax.ts'],
    // The api's check of a stored template's syntax loads it on first use too (decision 0117).
    in: ['api', 'sender'],
  },
  { what: 'the OpenAPI document (GET /openapi.json)', sources: ['docs/openapi.json'], in: ['api'] },
] as const;

describe.each(LOADED_ON_FIRST_USE)('$what', ({ sources, in: functions }) => {
  it.each(functions)('is in the %s bundle, in a chunk its cold start does not load', async (name) => {
    const atStart = [...(await inputsLoadedAtStart(name))];
    const all = [...(await bundledInputs(name)).keys()];
    for (const source of sources) {
      expect(
        all.some((file) => file.startsWith(source)),
        `${source} in the bundle`,
      ).toBe(true);
      expect(atStart.filter((file) => file.startsWith(source))).toEqual([]);
    }
  });
});

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

/**
 * zod (about 90 KB minified) is the api's: it parses requests there and nowhere else. Any other
 * function that loads it at start compiles it on every cold start for nothing (decision 0131): the
 * webhooks function decodes its queue copy by hand, and the rules the others share carry no schema.
 */
describe.each(POSTDATE_FUNCTIONS.filter((name) => name !== 'api'))("the %s bundle's cold start", (name) => {
  it('loads no zod at start', async () => {
    const atStart = [...(await inputsLoadedAtStart(name))];
    expect(atStart.filter((file) => packageOf(file) === 'zod')).toEqual([]);
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

/**
 * `postdate/outbox` runs in the application's own function, on its request path (DESIGN §4: the
 * application writes the records in its own transaction). Handlebars (and the source-map it pulls in,
 * about 240 KB of the 560 KB entry) is needed only to check a template message, so an application
 * bundling the entry with code splitting, as the functions are, loads it with its first template read.
 */
describe('the outbox entry, bundled by an application', () => {
  it('loads Handlebars on the first template read, not at start', async () => {
    const { metafile } = await build({
      entryPoints: ['lambdas/outbox/index.ts'],
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      outdir: '/nonexistent',
      write: false,
      metafile: true,
      external: ['@aws-sdk/*'],
    });
    const atStart = outputsLoadedAtStart(metafile).flatMap((output) =>
      Object.keys(metafile.outputs[output]?.inputs ?? {}),
    );
    const all = Object.values(metafile.outputs).flatMap((output) => Object.keys(output.inputs));
    expect(all.some((file) => packageOf(file) === 'handlebars')).toBe(true);
    expect(atStart.filter((file) => ['handlebars', 'source-map'].includes(packageOf(file) ?? ''))).toEqual(
      [],
    );
  });
});
