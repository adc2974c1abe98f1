import { readdirSync, readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import ts from 'typescript';
import { POSTDATE_FUNCTIONS, type PostdateFunctionName } from '../../lambdas/core/postdateFunctions.js';
import { functionBuildOptions } from '../../lib/constructs/postdateFunction.js';

/**
 * The hole a hand-picked scenario leaves: an AWS request no scenario makes is never simulated, and
 * its grant never checked (an enqueue below its group's head, a key reused with a larger body, were
 * found that way). This finds every place the functions' code builds an AWS request — each
 * `new …Command(` and each item of a DynamoDB transaction (`Put`, `Update`, `Delete`,
 * `ConditionCheck`), which IAM authorizes one by one — with the IAM actions each needs; which
 * of them each function's code can reach (its bundle, read from its entry: a site one function runs
 * proves nothing of another's path to it); and, from V8's block coverage of the scenarios, which
 * of them ran.
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
  /** `file function what`: stable across edits that move lines. */
  readonly key: string;
  /** What IAM authorizes for the request built here: `dynamodb:PutItem`, `s3:GetObject`… */
  readonly actions: readonly string[];
}

interface Found {
  readonly what: string;
  readonly at: number;
  readonly line: number;
  readonly within: string;
  readonly actions: readonly string[];
}

/**
 * The IAM actions each kind of site needs. A transaction is authorized item by item (its items are
 * sites of their own); CreateSchedule names its target's role, so passes it; S3 answers a missing key
 * 404, which the attachment store reads (`isNotFound`), only to a caller that may list the bucket.
 * A site the table does not know fails the proof: a new kind of request needs its actions here.
 */
const ACTIONS_OF: Readonly<Record<string, readonly string[]>> = {
  GetCommand: ['dynamodb:GetItem'],
  PutCommand: ['dynamodb:PutItem'],
  UpdateCommand: ['dynamodb:UpdateItem'],
  DeleteCommand: ['dynamodb:DeleteItem'],
  QueryCommand: ['dynamodb:Query'],
  BatchGetCommand: ['dynamodb:BatchGetItem'],
  TransactWriteCommand: [],
  'Put item': ['dynamodb:PutItem'],
  'Update item': ['dynamodb:UpdateItem'],
  'Delete item': ['dynamodb:DeleteItem'],
  'ConditionCheck item': ['dynamodb:ConditionCheckItem'],
  SendMessageBatchCommand: ['sqs:SendMessage'],
  ReceiveMessageCommand: ['sqs:ReceiveMessage'],
  DeleteMessageBatchCommand: ['sqs:DeleteMessage'],
  ChangeMessageVisibilityCommand: ['sqs:ChangeMessageVisibility'],
  ChangeMessageVisibilityBatchCommand: ['sqs:ChangeMessageVisibility'],
  GetQueueAttributesCommand: ['sqs:GetQueueAttributes'],
  CreateScheduleCommand: ['scheduler:CreateSchedule', 'iam:PassRole'],
  DeleteScheduleCommand: ['scheduler:DeleteSchedule'],
  PutEventsCommand: ['events:PutEvents'],
  GetSecretValueCommand: ['secretsmanager:GetSecretValue'],
  PutObjectCommand: ['s3:PutObject'],
  GetObjectCommand: ['s3:GetObject', 's3:ListBucket'],
  HeadObjectCommand: ['s3:GetObject', 's3:ListBucket'],
  CopyObjectCommand: ['s3:PutObject', 's3:GetObject', 's3:ListBucket'],
  PutObjectTaggingCommand: ['s3:PutObjectTagging', 's3:ListBucket'],
};

/** A write that may set the object's tags (`Tagging`) is authorized as s3:PutObjectTagging as well. */
function actionsAt(node: ts.Node, what: string): readonly string[] {
  const actions = ACTIONS_OF[what] ?? [`unknown: ${what}`];
  let tags = false;
  const visit = (inner: ts.Node): void => {
    if (ts.isPropertyAssignment(inner) && inner.name.getText() === 'Tagging') tags = true;
    ts.forEachChild(inner, visit);
  };
  if (ts.isNewExpression(node)) for (const argument of node.arguments ?? []) visit(argument);
  return tags ? [...actions, 's3:PutObjectTagging'] : actions;
}

/** What AWS request `node` builds (`PutCommand`, `Put item`), if it builds one. */
function siteAt(node: ts.Node): string | undefined {
  if (ts.isNewExpression(node)) {
    const callee = node.expression;
    const name = ts.isIdentifier(callee)
      ? callee.text
      : ts.isPropertyAccessExpression(callee)
        ? callee.name.text
        : '';
    return /^[A-Z]\w*Command$/.test(name) ? name : undefined;
  }
  if (
    ts.isPropertyAssignment(node) &&
    (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name)) &&
    TRANSACTION_ITEMS.has(node.name.text) &&
    ts.isObjectLiteralExpression(node.initializer)
  )
    return `${node.name.text} item`;
  return undefined;
}

function foundAt(node: ts.Node, what: string, source: ts.SourceFile): Found {
  const at = node.getStart(source);
  return {
    what,
    at,
    line: source.getLineAndCharacterOfPosition(at).line + 1,
    within: enclosingName(node),
    actions: actionsAt(node, what),
  };
}

/** The sites of one file's code (TypeScript source or the JavaScript Vite made of it), in order. */
function sitesIn(text: string, fileName: string): Found[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: Found[] = [];
  const visit = (node: ts.Node): void => {
    const what = siteAt(node);
    if (what !== undefined) found.push(foundAt(node, what, source));
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
      actions: site.actions,
    }));
  });
}

/**
 * The sites each function's code can reach. From the top level of every file esbuild bundles into
 * the function (the construct's own build options, {@link functionBuildOptions}: what it deploys,
 * after tree shaking), through every function, method and class the reached code names, as
 * TypeScript resolves each name. A call through a port (an interface's member) reaches the member of
 * that name in each bundled class or object literal that is that port. So a file bundled for one
 * caller reaches a function only through what that function's code names: the events function
 * bundles the webhook store for its deliveries' puts, not the api's endpoint writes. It counts a
 * branch never taken (over, not under), and the proof checks that every request a scenario recorded
 * is among the actions found here.
 */
export async function callSitesByFunction(
  all: readonly CallSite[] = awsCallSites(),
): Promise<Map<PostdateFunctionName, CallSite[]>> {
  const sites = new Map(all.map((site) => [`${site.file}@${site.line} ${site.what}`, site]));
  const { config } = ts.readConfigFile(join(REPO, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, REPO);
  const program = ts.createProgram(
    POSTDATE_FUNCTIONS.map((name) => join(CODE, name, 'handler.ts')),
    options,
  );
  const checker = program.getTypeChecker();
  const isUnit = unitRule(checker);
  const byFunction = new Map<PostdateFunctionName, CallSite[]>();
  for (const name of POSTDATE_FUNCTIONS) {
    const bundled = await bundledCode(name);
    const files = [...bundled].flatMap((file) => program.getSourceFile(join(REPO, file)) ?? []);
    const targetsOf = nameResolver(checker, files, isUnit);
    const reached = new Set<ts.Node>();
    const found = new Set<CallSite>();
    const reach = (unit: ts.Node): void => {
      const source = unit.getSourceFile();
      if (reached.has(unit) || !bundled.has(relative(REPO, source.fileName))) return;
      reached.add(unit);
      const visit = (node: ts.Node): void => {
        // A class's `extends` is a name that runs (its base's constructor), though written as a type.
        if (ts.isHeritageClause(node) && node.token === ts.SyntaxKind.ExtendsKeyword)
          for (const base of node.types) visit(base.expression);
        if ((node !== unit && isUnit(node)) || runsNothing(node)) return;
        const what = siteAt(node);
        if (what !== undefined) {
          const { line } = foundAt(node, what, source);
          const site = sites.get(`${relative(REPO, source.fileName)}@${line} ${what}`);
          if (site === undefined) throw new Error(`${source.fileName}:${line} ${what}: not among the sites`);
          found.add(site);
        }
        if (ts.isIdentifier(node)) for (const target of targetsOf(node)) reach(target);
        ts.forEachChild(node, visit);
      };
      visit(unit);
      // A class reached (named, built, extended) runs its constructor.
      if (ts.isClassDeclaration(unit))
        for (const member of unit.members) if (ts.isConstructorDeclaration(member)) reach(member);
    };
    for (const file of files) reach(file);
    byFunction.set(name, [...found]);
  }
  return byFunction;
}

/** The lambdas/ files that give a function's bundle code (esbuild's metafile), entry and chunks. */
async function bundledCode(name: PostdateFunctionName): Promise<Set<string>> {
  const { metafile } = await build({
    ...functionBuildOptions(name, '/nonexistent'),
    write: false,
    metafile: true,
  });
  return new Set(
    Object.values(metafile.outputs).flatMap((output) =>
      Object.entries(output.inputs)
        .filter(([file, input]) => file.startsWith('lambdas/') && input.bytesInOutput > 0)
        .map(([file]) => file),
    ),
  );
}

/**
 * Code that runs only when something names it: a function, a class member or constructor, a class
 * (its constructor and field initializers), a variable holding a function, and a function in an
 * object literal that is one of our ports (a store's `put`). Everything else runs with the code
 * around it: a callback with the call it is passed to, an object literal handed to a library.
 */
function unitRule(checker: ts.TypeChecker): (node: ts.Node) => boolean {
  return (node) => {
    if (ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node) || ts.isConstructorDeclaration(node))
      return true;
    if (ts.isVariableDeclaration(node)) return node.initializer !== undefined && isFunction(node.initializer);
    const member =
      ts.isMethodDeclaration(node) ||
      ts.isGetAccessor(node) ||
      ts.isSetAccessor(node) ||
      (ts.isPropertyAssignment(node) && isFunction(node.initializer));
    if (!member) return false;
    if (ts.isClassLike(node.parent)) return true;
    return ts.isObjectLiteralExpression(node.parent) && portOf(node.parent, checker) !== undefined;
  };
}

const isFunction = (node: ts.Node): boolean => ts.isArrowFunction(node) || ts.isFunctionExpression(node);

const ports = new WeakMap<ts.ObjectLiteralExpression, ts.Declaration | null>();

/** The declaration of our own type an object literal is written as (a port), if it is one. */
function portOf(literal: ts.ObjectLiteralExpression, checker: ts.TypeChecker): ts.Declaration | undefined {
  let port = ports.get(literal);
  if (port === undefined) {
    const type = checker.getContextualType(literal);
    port =
      (type?.aliasSymbol ?? type?.getSymbol())?.declarations?.find(
        (declaration) => !relative(CODE, declaration.getSourceFile().fileName).startsWith('..'),
      ) ?? null;
    ports.set(literal, port);
  }
  return port ?? undefined;
}

/** Names that run nothing: imports and exports, types. */
function runsNothing(node: ts.Node): boolean {
  return (
    ts.isImportDeclaration(node) ||
    ts.isExportDeclaration(node) ||
    ts.isInterfaceDeclaration(node) ||
    ts.isTypeAliasDeclaration(node) ||
    ts.isTypeNode(node)
  );
}

const membersOf = (
  holder: ts.ClassDeclaration | ts.ObjectLiteralExpression,
): readonly (ts.ClassElement | ts.ObjectLiteralElementLike)[] =>
  ts.isClassDeclaration(holder) ? holder.members : holder.properties;

/**
 * What a name in reached code makes reachable: the function, method, class or function variable it
 * names; a port's member reaches the member of that name in each bundled class whose instances are
 * that port and each object literal written as it (when none is, in each that has one).
 */
function nameResolver(
  checker: ts.TypeChecker,
  files: readonly ts.SourceFile[],
  isUnit: (node: ts.Node) => boolean,
) {
  // Each member name, with the classes and object literals that have a member of that name.
  const holders = new Map<string, (ts.ClassDeclaration | ts.ObjectLiteralExpression)[]>();
  const collect = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node) || ts.isObjectLiteralExpression(node))
      for (const member of membersOf(node)) {
        const name = member.name?.getText();
        if (name !== undefined) holders.set(name, [...(holders.get(name) ?? []), node]);
      }
    ts.forEachChild(node, collect);
  };
  for (const file of files) collect(file);
  const implementations = new Map<ts.Node, ts.Node[]>();
  const implementationsOf = (signature: ts.MethodSignature | ts.PropertySignature): ts.Node[] => {
    const known = implementations.get(signature);
    if (known !== undefined) return known;
    const name = signature.name.getText();
    const port = checker.getTypeAtLocation(signature.parent);
    const candidates = [...new Set(holders.get(name) ?? [])];
    const isPort = (holder: ts.ClassDeclaration | ts.ObjectLiteralExpression) =>
      ts.isClassDeclaration(holder)
        ? checker.isTypeAssignableTo(checker.getTypeAtLocation(holder), port)
        : portOf(holder, checker) === signature.parent;
    const ports = candidates.filter(isPort);
    const found = (ports.length > 0 ? ports : candidates).flatMap((holder) =>
      membersOf(holder)
        .filter((member) => member.name?.getText() === name)
        .flatMap((member): ts.Node[] =>
          isUnit(member) ? [member] : ts.isClassDeclaration(holder) ? [holder] : [],
        ),
    );
    implementations.set(signature, found);
    return found;
  };
  const targetsOf = (symbol: ts.Symbol | undefined): ts.Node[] => {
    if (symbol === undefined) return [];
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    return (target.declarations ?? []).flatMap((declaration) => {
      if (isUnit(declaration)) return [declaration];
      if (ts.isMethodSignature(declaration) || ts.isPropertySignature(declaration))
        return implementationsOf(declaration);
      // A name taken apart from an object or a module (`const { S3AttachmentStore } = await import(…)`).
      if (ts.isBindingElement(declaration) && ts.isObjectBindingPattern(declaration.parent)) {
        const property = (declaration.propertyName ?? declaration.name).getText();
        return targetsOf(checker.getTypeAtLocation(declaration.parent).getProperty(property));
      }
      return [];
    });
  };
  return (identifier: ts.Identifier): ts.Node[] =>
    targetsOf(
      ts.isShorthandPropertyAssignment(identifier.parent)
        ? checker.getShorthandAssignmentValueSymbol(identifier.parent)
        : checker.getSymbolAtLocation(identifier),
    );
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
