import { readdirSync, readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The hole a hand-picked scenario leaves: an AWS request no scenario makes is never simulated, and
 * its grant never checked (an enqueue below its group's head, a key reused with a larger body, were
 * found that way). This finds every place the functions' code builds an AWS request — each
 * `new …Command(` and each item of a DynamoDB transaction (`Put`, `Update`, `Delete`,
 * `ConditionCheck`), which IAM authorizes one by one — and tells, from V8's block coverage of the
 * scenarios, which of them ran.
 *
 * A transaction item is an object, not a call, so no stack trace of a recorded request names where
 * it was built; block coverage does. The executed code is Vite's transform of the source: the same
 * sites are found in it the same way, in the same order, and a file where they differ fails loudly.
 */

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CODE = join(REPO, 'lambdas');
const TRANSACTION_ITEMS = new Set(['Put', 'Update', 'Delete', 'ConditionCheck']);

export interface CallSite {
  /** `lambdas/store/groupHead.ts`. */
  readonly file: string;
  readonly line: number;
  /** `PutCommand`, or a transaction item `ConditionCheck item`. */
  readonly what: string;
  /** `file function what`: how the allow-list names it, stable across edits that move lines. */
  readonly key: string;
}

interface Found {
  readonly what: string;
  readonly at: number;
  readonly line: number;
  readonly within: string;
}

/** The sites of one file's code (TypeScript source or the JavaScript Vite made of it), in order. */
function sitesIn(text: string, fileName: string): Found[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: Found[] = [];
  const visit = (node: ts.Node): void => {
    let what: string | undefined;
    if (ts.isNewExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee)
        ? callee.text
        : ts.isPropertyAccessExpression(callee)
          ? callee.name.text
          : '';
      if (/^[A-Z]\w*Command$/.test(name)) what = name;
    } else if (
      ts.isPropertyAssignment(node) &&
      (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name)) &&
      TRANSACTION_ITEMS.has(node.name.text) &&
      ts.isObjectLiteralExpression(node.initializer)
    ) {
      what = `${node.name.text} item`;
    }
    if (what !== undefined) {
      const at = node.getStart(source);
      found.push({
        what,
        at,
        line: source.getLineAndCharacterOfPosition(at).line + 1,
        within: enclosingName(node),
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function enclosingName(node: ts.Node): string {
  for (let at: ts.Node | undefined = node.parent; at !== undefined; at = at.parent) {
    if (
      (ts.isFunctionDeclaration(at) || ts.isMethodDeclaration(at) || ts.isClassDeclaration(at)) &&
      at.name !== undefined
    )
      return at.name.getText();
    if (ts.isVariableDeclaration(at) && ts.isIdentifier(at.name)) return at.name.text;
    if (ts.isPropertyAssignment(at) && ts.isIdentifier(at.name) && !TRANSACTION_ITEMS.has(at.name.text))
      return at.name.text;
  }
  return '(module)';
}

function codeFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return codeFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every AWS request site of lambdas/**. */
export function awsCallSites(): CallSite[] {
  return codeFiles(CODE).flatMap((path) => {
    const file = relative(REPO, path);
    return sitesIn(readFileSync(path, 'utf8'), path).map((site) => ({
      file,
      line: site.line,
      what: site.what,
      key: `${file} ${site.within} ${site.what}`,
    }));
  });
}

interface CoverageRange {
  readonly startOffset: number;
  readonly endOffset: number;
  readonly count: number;
}

/**
 * Block coverage of this process from now on. Its session is never closed: closing it would turn
 * V8's coverage back to best effort for vitest's own `--coverage` too. Taking it resets V8's
 * counters, so under `--coverage` the report counts this file's scenarios no more.
 */
export async function startCallSiteCoverage(): Promise<{
  reached(sites: readonly CallSite[]): Promise<Set<CallSite>>;
}> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
  return {
    async reached(sites) {
      const { result } = await session.post('Profiler.takePreciseCoverage');
      await session.post('Debugger.enable');
      const reached = new Set<CallSite>();
      for (const script of result) {
        if (!script.url.startsWith('file://')) continue;
        const file = relative(REPO, fileURLToPath(script.url));
        const expected = sites.filter((site) => site.file === file);
        if (expected.length === 0) continue;
        const { scriptSource } = await session.post('Debugger.getScriptSource', {
          scriptId: script.scriptId,
        });
        const executed = sitesIn(scriptSource, `${file}.js`);
        const names = (list: readonly { what: string }[]) => list.map((site) => site.what).join(', ');
        if (names(executed) !== names(expected))
          throw new Error(
            `${file}: its executed code builds ${names(executed)}, its source ${names(expected)}`,
          );
        const ranges = script.functions.flatMap((fn) => fn.ranges as CoverageRange[]);
        expected.forEach((site, index) => {
          if (countAt(ranges, executed[index]?.at ?? -1) > 0) reached.add(site);
        });
      }
      return reached;
    },
  };
}

/** V8's count of the innermost block holding `offset` (a block not run counts 0). */
function countAt(ranges: readonly CoverageRange[], offset: number): number {
  let innermost: CoverageRange | undefined;
  for (const range of ranges) {
    if (range.startOffset > offset || range.endOffset <= offset) continue;
    if (
      innermost === undefined ||
      range.endOffset - range.startOffset < innermost.endOffset - innermost.startOffset
    )
      innermost = range;
  }
  return innermost?.count ?? 0;
}
