/**
 * The layers of docs/architecture.md, checked over the import graph: every `import … from`,
 * `export … from` and dynamic `import()` in the product folders is read with the TypeScript
 * scanner and tested against the rules of layers.ts (architectureDoc.test.ts holds the page's
 * table to the same rules).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ALLOWED_EDGES, layerOf } from './layers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FOLDERS = ['lambdas', 'lib', 'local', 'cli', 'chaos', 'bench'] as const;

interface ImportEdge {
  readonly from: string;
  readonly specifier: string;
  /** Repository-relative target for a relative specifier, null for a package. */
  readonly to: string | null;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.(ts|mts)$/.test(file) && !file.endsWith('.d.ts'))
    .filter((file) => !file.split(/[\\/]/).includes('node_modules'))
    .map((file) => join(folder, file).split('\\').join('/'));
}

/** Every import, re-export and dynamic import of a file (type-only ones too: they still bind the layers). */
function importsOf(file: string): ImportEdge[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles.map(({ fileName }) => {
    const specifier = fileName.replace(/\?.*$/, '');
    if (!specifier.startsWith('.')) return { from: file, specifier, to: null };
    const target = normalize(join(dirname(file), specifier))
      .split('\\')
      .join('/')
      .replace(/\.(m?)js$/, '.$1ts');
    return { from: file, specifier, to: target };
  });
}

/** The package a bare specifier names: `@aws-sdk/client-sqs`, `zod`, `node:crypto`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

function violationOf(edge: ImportEdge): string | null {
  const from = layerOf(edge.from);
  if (!from) return `${edge.from}: in no layer`;
  if (edge.to === null) {
    const name = packageOf(edge.specifier);
    if (from.packages === 'any' || from.packages.includes(name)) return null;
    return `${edge.from} (${from.name}) imports the package ${edge.specifier}`;
  }
  if (ALLOWED_EDGES.some((allowed) => allowed.from === edge.from && allowed.to === edge.to)) return null;
  const to = layerOf(edge.to);
  if (!to) return `${edge.from} imports ${edge.to}, which is in no layer`;
  if (to.name === from.name || from.may.includes(to.name)) return null;
  return `${edge.from} (${from.name}) imports ${edge.to} (${to.name})`;
}

/**
 * Cycles between layers (`store` ⇄ `outbox` was one), found by a depth-first walk of the graph of
 * the edges that exist — the rules alone would let two layers that may import each other cycle.
 */
function layerCycles(edges: readonly ImportEdge[]): string[][] {
  const graph = new Map<string, Set<string>>();
  for (const edge of edges) {
    if (edge.to === null) continue;
    const a = layerOf(edge.from)?.name;
    const b = layerOf(edge.to)?.name;
    if (a === undefined || b === undefined || a === b) continue;
    graph.set(a, (graph.get(a) ?? new Set()).add(b));
  }
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

const files = FOLDERS.flatMap(sourceFiles);
const edges = files.flatMap(importsOf);

describe('the import graph (docs/architecture.md)', () => {
  it('reads the product folders and finds their imports', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(edges.filter((edge) => edge.to !== null).length).toBeGreaterThan(300);
    // The scanner sees each kind of import the rules must cover.
    const kinds = ts
      .preProcessFile(
        "import a from './a.js'; export { b } from './b.js'; import type { C } from './c.js'; await import('./d.js');",
        true,
        true,
      )
      .importedFiles.map(({ fileName }) => fileName);
    expect(kinds).toEqual(['./a.js', './b.js', './c.js', './d.js']);
  });

  it('places every product file in a layer', () => {
    expect(files.filter((file) => !layerOf(file))).toEqual([]);
  });

  it('resolves every relative import to a file that exists', () => {
    // An allowed edge may name a data file (docs/openapi.json); it must exist too.
    const data = ALLOWED_EDGES.map((allowed) => allowed.to).filter((to) => existsSync(join(ROOT, to)));
    const known = new Set([...files, ...sourceFiles('test'), ...data]);
    const missing = edges.filter((edge) => edge.to !== null && !known.has(edge.to));
    expect(missing.map((edge) => `${edge.from} → ${edge.specifier}`)).toEqual([]);
  });

  it('has no import that runs against the layers', () => {
    const violations = edges.map(violationOf).filter((violation) => violation !== null);
    expect(violations).toEqual([]);
  });

  it('has no cycle between layers', () => {
    expect(layerCycles(edges)).toEqual([]);
  });

  it('keeps each listed exception in use (a stale one is removed)', () => {
    const stale = ALLOWED_EDGES.filter(
      (allowed) => !edges.some((edge) => edge.from === allowed.from && edge.to === allowed.to),
    );
    expect(stale.map((allowed) => `${allowed.from} → ${allowed.to}`)).toEqual([]);
  });

  it('refuses the edges the layers forbid', () => {
    const probe = (from: string, to: string | null, specifier = to ?? '') =>
      violationOf({ from, to, specifier });
    expect(probe('lambdas/core/x.ts', null, '@aws-sdk/client-sqs')).not.toBeNull();
    expect(probe('lambdas/core/x.ts', null, 'nodemailer')).not.toBeNull();
    expect(probe('lambdas/core/x.ts', null, 'node:net')).not.toBeNull();
    expect(probe('lambdas/core/x.ts', 'lambdas/store/tableLayout.ts')).not.toBeNull();
    expect(probe('lambdas/ports/X.ts', 'lambdas/adapters/SqsDispatchQueue.ts')).not.toBeNull();
    expect(probe('lambdas/store/x.ts', 'lambdas/outbox/outboxItems.ts')).not.toBeNull();
    expect(probe('lambdas/relay/x.ts', 'lambdas/sweeper/sweep.ts')).not.toBeNull();
    expect(probe('lib/x.ts', 'lambdas/sender/processCopy.ts')).not.toBeNull();
    expect(probe('chaos/x.ts', 'test/support/awsLocal.ts')).not.toBeNull();
    expect(probe('lambdas/relay/x.ts', 'lambdas/relay/y.ts')).toBeNull();
    expect(probe('lambdas/sender/x.ts', 'lambdas/store/senderTransitions.ts')).toBeNull();
    expect(probe('lib/x.ts', 'lambdas/core/configSpec.ts')).toBeNull();
  });
});
