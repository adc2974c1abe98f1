import { describe, expect, it } from 'vitest';
import { FUNCTION_ESBUILD_OPTIONS } from '../../lib/constructs/functionEsbuild.js';
import {
  FUNCTION_BUNDLE_FILE,
  functionBuildOptions,
  functionCodeSource,
  MissingFunctionBundleError,
} from '../../lib/constructs/postdateFunction.js';

describe("where a function's code comes from", () => {
  it('from the TypeScript sources (this repository): the handler, bundled by the construct with the local esbuild', () => {
    const source = functionCodeSource(
      'sender',
      'file:///repo/lib/constructs/postdateFunction.ts',
      () => true,
    );
    expect(source).toEqual({ kind: 'source', entry: '/repo/lambdas/sender/handler.ts' });
  });

  it('from the compiled package: the prebuilt bundle beside dist/lib, deployed as it is', () => {
    const seen: string[] = [];
    const source = functionCodeSource(
      'api',
      'file:///app/node_modules/postdate/dist/lib/constructs/postdateFunction.js',
      (path) => {
        seen.push(path);
        return true;
      },
    );
    expect(source).toEqual({ kind: 'prebuilt', directory: '/app/node_modules/postdate/dist/functions/api' });
    expect(seen).toEqual(['/app/node_modules/postdate/dist/functions/api/index.mjs']);
  });

  it('from a compiled package without its bundles: an error naming the build, never another bundling', () => {
    expect(() =>
      functionCodeSource('relay', 'file:///pkg/dist/lib/constructs/postdateFunction.js', () => false),
    ).toThrow(MissingFunctionBundleError);
    expect(() =>
      functionCodeSource('relay', 'file:///pkg/dist/lib/constructs/postdateFunction.js', () => false),
    ).toThrow(/npm run build/);
  });

  it('bundles as the deployed functions run: ESM for node22 with the require banner and a source map', () => {
    expect(FUNCTION_ESBUILD_OPTIONS).toMatchObject({
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      sourcemap: true,
    });
    expect(FUNCTION_ESBUILD_OPTIONS.banner.js).toContain('createRequire');
  });

  it('writes each function as a directory: index.mjs and the chunks loaded on first use (decision 0114)', () => {
    const options = functionBuildOptions('sender', '/out/sender');
    expect(options).toMatchObject({ ...FUNCTION_ESBUILD_OPTIONS, splitting: true, outdir: '/out/sender' });
    expect(options.entryPoints).toEqual([
      { in: expect.stringMatching(/lambdas\/sender\/handler\.ts$/), out: 'index' },
    ]);
    expect(`${options.entryPoints[0]?.out}${options.outExtension['.js']}`).toBe(FUNCTION_BUNDLE_FILE);
  });
});
