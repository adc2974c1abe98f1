/**
 * docs/architecture.md's layer table, held to the rules the import test enforces (layers.ts): every
 * layer in one row, with the files, the layers it may import and the packages the rules say, and the
 * functions' row naming exactly POSTDATE_FUNCTIONS. A rule changed in one place and not the other
 * fails here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { POSTDATE_FUNCTIONS } from '../../lambdas/core/postdateFunctions.js';
import { ALLOWED_EDGES, LAYERS, type LayerName, layerOf } from './layers.js';

const PAGE = readFileSync(new URL('../../docs/architecture.md', import.meta.url), 'utf8');

/** The phrase of a "May import" cell that stands for every function layer. */
const EVERY_FUNCTION = 'every function';

interface TableRow {
  readonly layers: readonly string[];
  /** Paths; `<name>` in a function row's path stands for the function. */
  readonly files: readonly string[];
  readonly may: readonly string[];
  readonly packages: readonly string[] | 'any';
}

const ticked = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '');

/** The rows of the table whose header is `| Layer | Files | May import | Packages |`. */
function layerTable(page: string): TableRow[] {
  const lines = page.split('\n');
  const header = lines.findIndex((line) =>
    /^\|\s*Layer\s*\|\s*Files\s*\|\s*May import\s*\|\s*Packages\s*\|/.test(line),
  );
  if (header < 0) return [];
  const rows: TableRow[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const [layer = '', files = '', may = '', packages = ''] = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    const names = ticked(layer);
    rows.push({
      layers: names,
      files: ticked(files),
      may: [...ticked(may), ...(may.includes(EVERY_FUNCTION) ? POSTDATE_FUNCTIONS : [])],
      packages: packages === 'any' ? 'any' : packages === 'none' ? [] : ticked(packages),
    });
  }
  return rows;
}

const rows = layerTable(PAGE);
/** The layers the page can be asked about: `test` is only a target (what may import it), never read. */
const documented = LAYERS.filter((layer) => layer.name !== 'test');
const sorted = (values: readonly string[]): string[] => [...values].sort();

describe('docs/architecture.md', () => {
  it('has a layer table naming each layer of the import rules exactly once', () => {
    expect(rows.length).toBeGreaterThan(0);
    const named = rows.flatMap((row) => row.layers);
    expect(sorted(named)).toEqual(sorted(documented.map((layer) => layer.name)));
  });

  it('names exactly the functions of POSTDATE_FUNCTIONS in its functions row', () => {
    const functionRows = rows.filter((row) =>
      row.layers.some((name) => POSTDATE_FUNCTIONS.includes(name as never)),
    );
    expect(functionRows.map((row) => sorted(row.layers))).toEqual([sorted(POSTDATE_FUNCTIONS)]);
  });

  it.each(documented.map((layer) => [layer.name, layer] as const))(
    'says what the rules say of %s: its files, the layers it may import, its packages',
    (name, layer) => {
      const row = rows.find((candidate) => candidate.layers.includes(name));
      expect(row, `no row for ${name}`).toBeDefined();
      if (!row) return;
      expect(row.files.length).toBeGreaterThan(0);
      const files = row.files.map((path) => path.replace('<name>', name));
      expect(files.filter((path) => layerOf(path)?.name !== name)).toEqual([]);
      expect(sorted(row.may)).toEqual(sorted(layer.may as readonly LayerName[]));
      expect(row.packages === 'any' ? 'any' : sorted(row.packages)).toEqual(
        layer.packages === 'any' ? 'any' : sorted(layer.packages),
      );
    },
  );

  it('lists exactly the allowed exceptions of the rules', () => {
    const listed = [...PAGE.matchAll(/^- `([^`]+)` → `([^`]+)`/gm)].map(([, from, to]) => `${from} → ${to}`);
    expect(sorted(listed)).toEqual(sorted(ALLOWED_EDGES.map((edge) => `${edge.from} → ${edge.to}`)));
  });
});
