import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { sandboxBundle } from '../../local/runners/functionBundle.js';
import { FunctionSandboxes, type InvocationOutcome } from '../../local/runners/functionSandbox.js';

/**
 * local/EMULATORS.md, "Lambda: function sandboxes": each sandbox loads one bundle built from the
 * handler's TypeScript, its preloads inside it, kept until a file it is built from changes; a stack
 * trace points at the TypeScript. Each fixture is a file of its own in a fresh directory, so that
 * no earlier run's kept bundle answers for it.
 */
const dir = mkdtempSync(join(tmpdir(), 'function-bundle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const opened: FunctionSandboxes[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((sandboxes) => sandboxes.close()));
});

function sandboxesOf(file: string, preload: readonly string[] = []): FunctionSandboxes {
  const sandboxes = new FunctionSandboxes({
    name: 'fixture',
    file,
    environment: {},
    timeoutMs: 10_000,
    preload,
  });
  opened.push(sandboxes);
  return sandboxes;
}

function returned(outcome: InvocationOutcome<unknown>): unknown {
  if (outcome.kind !== 'returned')
    throw new Error(`the invocation ${outcome.kind}: ${JSON.stringify(outcome)}`);
  return outcome.value;
}

describe('a function sandbox loads a bundle of the TypeScript as it is now', () => {
  it('answers with the code as edited: a second stack after an edit builds the bundle again', async () => {
    const file = join(dir, 'edited.ts');
    writeFileSync(file, "export const handler = async (): Promise<string> => 'before';\n");
    expect(returned(await sandboxesOf(file).invoke(0, {}))).toBe('before');

    writeFileSync(file, "export const handler = async (): Promise<string> => 'after the edit';\n");
    expect(returned(await sandboxesOf(file).invoke(0, {}))).toBe('after the edit');
  });

  it('builds again when only a module the handler imports changed', async () => {
    const imported = join(dir, 'greeting.ts');
    const file = join(dir, 'importing.ts');
    writeFileSync(imported, "export const greeting: string = 'hello';\n");
    writeFileSync(
      file,
      "import { greeting } from './greeting.js';\nexport const handler = async () => greeting;\n",
    );
    expect(returned(await sandboxesOf(file).invoke(0, {}))).toBe('hello');

    writeFileSync(imported, "export const greeting: string = 'hello again';\n");
    expect(returned(await sandboxesOf(file).invoke(0, {}))).toBe('hello again');
  });

  it('runs the preloads first, sharing their modules with the handler (one copy of each in the sandbox)', async () => {
    const registry = join(dir, 'registry.ts');
    const preload = join(dir, 'preload.ts');
    const file = join(dir, 'reader.ts');
    writeFileSync(registry, 'export const seen: string[] = [];\n');
    writeFileSync(preload, "import { seen } from './registry.js';\nseen.push('preload');\n");
    writeFileSync(
      file,
      "import { seen } from './registry.js';\nseen.push('handler module');\nexport const handler = async () => [...seen];\n",
    );
    expect(returned(await sandboxesOf(file, [preload]).invoke(0, {}))).toEqual(['preload', 'handler module']);
  });

  it('a handler that does not compile is a load that failed, naming the reason and the file', async () => {
    const file = join(dir, 'broken.ts');
    writeFileSync(file, 'export const handler = async () => {\n');
    const load = await sandboxesOf(file).load();
    expect(load.loaded).toBe(false);
    expect(load.loaded === false && load.note).toMatch(/^it failed to build: .+\(.*broken\.ts\)$/);
  });

  it("an error's stack points at the handler's TypeScript, not at the bundle", async () => {
    const file = join(dir, 'throwing.ts');
    writeFileSync(
      file,
      [
        'function refuse(): never {',
        "  throw new Error('refused');",
        '}',
        'export const handler = async () => refuse();',
        '',
      ].join('\n'),
    );
    const outcome = await sandboxesOf(file).invoke(0, {});
    expect(outcome.kind).toBe('threw');
    expect(outcome.kind === 'threw' && outcome.error.stack).toMatch(/throwing\.ts:2:\d+/);
  });

  it('keeps no bundle a file changed under while it was built, and reuses one built from files at rest', async () => {
    const file = join(dir, 'moving.ts');
    writeFileSync(file, "export const handler = async () => 'moving';\n");
    const at = (offsetSeconds: number) => new Date(Date.now() + offsetSeconds * 1000);
    // Written after the build began (its mtime is later): what the build read is unknown.
    utimesSync(file, at(120), at(120));
    const unsettled = await sandboxBundle({ file, preload: [] });
    expect(basename(dirname(unsettled))).toMatch(/^\./);
    expect(await sandboxBundle({ file, preload: [] })).not.toBe(unsettled);

    utimesSync(file, at(-120), at(-120));
    const kept = await sandboxBundle({ file, preload: [] });
    expect(basename(dirname(kept))).not.toMatch(/^\./);
    expect(await sandboxBundle({ file, preload: [] })).toBe(kept);
  });
});
