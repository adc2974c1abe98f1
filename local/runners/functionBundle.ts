import { createHash, randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FUNCTION_ESBUILD_OPTIONS, PROJECT_ROOT } from '../../lib/constructs/functionEsbuild.js';

/**
 * What a function sandbox loads: one JavaScript file, bundled by esbuild from the function's
 * TypeScript with the options its Lambda bundle is built with (lib/constructs/functionEsbuild.ts),
 * as Lambda loads the deployed bundle. The bundle is the sandbox's worker itself: its entry runs
 * functionWorker.ts's `serveSandbox`, which imports the preloads and then the handler's module (both
 * inside the bundle, so a preload and the handler share one copy of every module: the SDK a fault
 * middleware patches, the hook the mail viewer registers).
 *
 * Loading TypeScript through tsx in each worker cost 0.4–0.8 s of CPU a sandbox (its loader thread,
 * then every module through it); the bundle loads in about 60 ms (decision 0278). A bundle is built
 * once and kept in `node_modules/.cache/postdate-sandboxes/`, named after what it bundles and the
 * content of every file it was built from, so an edit to any of them builds it again, and two
 * processes building one at once each write their own copy and rename it into place.
 */

/** What one sandbox bundle is made of. */
export interface SandboxBundleEntry {
  /** The absolute path of the module that exports the handler. */
  readonly file: string;
  /** Modules (absolute paths) imported before the handler's module, in order. */
  readonly preload: readonly string[];
}

export class SandboxBundleError extends Error {
  override readonly name = 'SandboxBundleError';
}

const CACHE = join(PROJECT_ROOT, 'node_modules', '.cache', 'postdate-sandboxes');
const WORKER = fileURLToPath(new URL('./functionWorker.ts', import.meta.url));
/** A kept bundle no process has built or used for this long is removed at the next build. */
const STALE_MS = 24 * 60 * 60 * 1000;

/**
 * The path of `entry`'s bundle, built now if no kept one was built from the files as they are.
 * Throws {@link SandboxBundleError} with esbuild's first message when it does not build.
 */
export async function sandboxBundle(entry: SandboxBundleEntry): Promise<string> {
  const name = hash(JSON.stringify({ worker: WORKER, ...entry, options: buildOptions('') }));
  const pointer = join(CACHE, `${name}.json`);
  const kept = keptBundle(name, pointer);
  if (kept !== undefined) return kept;
  return build(name, pointer, entry);
}

function hash(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 20);
}

/** The directory of a bundle built from `inputs` as their content is now. */
function bundleDirectory(name: string, inputs: readonly string[]): string | undefined {
  const digest = createHash('sha256');
  for (const input of inputs) {
    const path = join(PROJECT_ROOT, input);
    if (!existsSync(path)) return undefined;
    digest.update(input).update('\0').update(readFileSync(path)).update('\0');
  }
  return join(CACHE, `${name}-${digest.digest('hex').slice(0, 20)}`);
}

/** The kept bundle's file when every input is as it was built from, touched as used. */
function keptBundle(name: string, pointer: string): string | undefined {
  let inputs: string[];
  try {
    inputs = JSON.parse(readFileSync(pointer, 'utf8')) as string[];
  } catch {
    return undefined;
  }
  const directory = bundleDirectory(name, inputs);
  if (directory === undefined) return undefined;
  const file = join(directory, 'index.mjs');
  if (!existsSync(file)) return undefined;
  const now = new Date();
  utimesSync(directory, now, now);
  return file;
}

function buildOptions(outfile: string) {
  return {
    ...FUNCTION_ESBUILD_OPTIONS,
    mainFields: [...FUNCTION_ESBUILD_OPTIONS.mainFields],
    // Readable names in a local stack trace; the maps point it at the TypeScript (the Worker's
    // `--enable-source-maps`).
    minify: false,
    sourcemap: 'linked' as const,
    outfile,
    absWorkingDir: PROJECT_ROOT,
    metafile: true,
    logLevel: 'silent' as const,
  };
}

/** Builds in flight in this process: the last one to end stops esbuild's service (a child process). */
let building = 0;

async function build(name: string, pointer: string, entry: SandboxBundleEntry): Promise<string> {
  const esbuild = await import('esbuild');
  building += 1;
  try {
    return await buildOnce(esbuild.build, name, pointer, entry);
  } finally {
    building -= 1;
    if (building === 0) await esbuild.stop();
  }
}

async function buildOnce(
  esbuild: typeof import('esbuild').build,
  name: string,
  pointer: string,
  entry: SandboxBundleEntry,
): Promise<string> {
  mkdirSync(CACHE, { recursive: true });
  const scratch = join(CACHE, `.${name}-${process.pid}-${randomUUID()}`);
  // Whole seconds: a file system may keep mtimes no finer.
  const startedMs = Math.floor(Date.now() / 1000) * 1000;
  const lines = [
    `import { serveSandbox } from ${JSON.stringify(WORKER)};`,
    'await serveSandbox([',
    ...entry.preload.map((file) => `  () => import(${JSON.stringify(file)}),`),
    `  () => import(${JSON.stringify(entry.file)}),`,
    ']);',
  ];
  let inputs: string[];
  try {
    const result = await esbuild({
      ...buildOptions(join(scratch, 'index.mjs')),
      stdin: {
        contents: lines.join('\n'),
        resolveDir: PROJECT_ROOT,
        sourcefile: 'sandbox.mjs',
        loader: 'js',
      },
    });
    inputs = Object.keys(result.metafile?.inputs ?? {})
      .filter((input) => input !== 'sandbox.mjs')
      .sort();
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    const first = (error as { errors?: { text?: string; location?: { file?: string } | null }[] })
      .errors?.[0];
    const where = first?.location?.file ? ` (${first.location.file})` : '';
    throw new SandboxBundleError(`it failed to build: ${first?.text ?? String(error)}${where}`, {
      cause: error,
    });
  }
  // An input written since the build began may have been read before or after the write: the
  // bundle runs this once but is not kept under the content as it is now.
  if (inputs.some((input) => changedSince(join(PROJECT_ROOT, input), startedMs))) {
    return join(scratch, 'index.mjs');
  }
  const directory = bundleDirectory(name, inputs);
  if (directory === undefined)
    throw new SandboxBundleError('a file it is built from vanished while it was built');
  try {
    renameSync(scratch, directory);
  } catch {
    // Another process kept the same bundle first: theirs is this one.
    rmSync(scratch, { recursive: true, force: true });
  }
  const pointerScratch = `${pointer}.${process.pid}-${randomUUID()}`;
  writeFileSync(pointerScratch, JSON.stringify(inputs));
  renameSync(pointerScratch, pointer);
  removeStale(name, directory);
  return join(directory, 'index.mjs');
}

function changedSince(path: string, ms: number): boolean {
  try {
    return statSync(path).mtimeMs >= ms;
  } catch {
    return true;
  }
}

/**
 * Removes this entry's bundles older than a day (built from files as they were before), and its
 * scratch directories as old (a build killed midway, or one not kept).
 */
function removeStale(name: string, current: string): void {
  const now = Date.now();
  for (const dirent of readdirSync(CACHE)) {
    const path = join(CACHE, dirent);
    if (!(dirent.startsWith(`${name}-`) || dirent.startsWith(`.${name}-`)) || path === current) continue;
    try {
      if (now - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed by another process.
    }
  }
}
