/**
 * What a stored template may say (DESIGN §10): Handlebars, the syntax SendGrid dynamic templates and
 * Mailgun use, narrowed to what can be rendered safely and strictly. A template is checked here when
 * it is stored, so a template that would need a custom helper, a partial or the prototype never gets
 * a version. Pure: the source in, field errors out.
 *
 * Allowed: `{{path}}` (`name`, `order.total`, `this`, `../name`, `@index`, `@key`, `@first`,
 * `@last`, `@root.x`), comments, and the four built-in blocks `#if`, `#unless`, `#each`, `#with`
 * (each with one path argument and an optional `{{else}}`). Refused, each with its reason:
 * partials, decorators and inline partials, any other helper or block (`lookup`, `log`, raw
 * blocks, mustache sections), a block helper output bare (`{{each}}`), helper arguments,
 * sub-expressions, literals as values, block parameters (`as |item|`: Handlebars does not check
 * them strictly, so a missing field would render as an empty string), a path through a prototype
 * name (`constructor`, `__proto__`, …) and, in `html`, unescaped output (`{{{x}}}`, `{{& x}}`).
 */
import Handlebars from 'handlebars';
import type { FieldError } from './problem.js';
import { type AstNode, eachNesting, RENDER_BOUNDS } from './renderCost.js';

/** The parts of a template and of the message it renders. */
export const TEMPLATE_PARTS = ['subject', 'text', 'html'] as const;
export type TemplatePart = (typeof TEMPLATE_PARTS)[number];

/** The only helpers a template may use: Handlebars' built-in blocks. */
export const TEMPLATE_BLOCK_HELPERS = ['if', 'unless', 'each', 'with'] as const;

/** `@` variables the built-in blocks provide. */
const DATA_VARIABLES = new Set(['index', 'key', 'first', 'last', 'root']);

/**
 * Names a path may never go through: everything a plain object inherits, and the way to a
 * prototype. Handlebars ≥ 4.6 already refuses to resolve them (they render as an empty string, which
 * strict rendering must not allow either), so they are refused when the template is stored. Data is
 * JSON, so no value is a function: `name` and `length` stay ordinary fields.
 */
const PROTOTYPE_NAMES: ReadonlySet<string> = new Set([
  ...Object.getOwnPropertyNames(Object.prototype),
  'prototype',
  '__proto__',
  'constructor',
]);

/** One Handlebars environment for Postdate: nothing registered on it but the built-ins. */
export const handlebars = Handlebars.create();
// Handlebars logs a console warning for a refused prototype lookup; the store-time check refuses
// those paths, and the renderer reports every failure itself, so its logger stays quiet.
handlebars.logger.level = 'silent' as unknown as number;

/** What of Handlebars' run time a strict template's paths and outputs go through. */
interface LookupRuntime {
  strict: (parent: unknown, name: string, loc: unknown) => unknown;
  lookupProperty: (parent: unknown, name: string) => unknown;
  lambda: (value: unknown, context: unknown, loc?: OutputLocation) => unknown;
}

/** A place in a template's source as Handlebars gives it (lines from 1, columns from 0). */
export interface OutputLocation {
  readonly start: { readonly line: number; readonly column: number };
  readonly end: { readonly line: number; readonly column: number };
}

/**
 * An output (`{{x}}`, `{{{x}}}`, `{{this}}`) whose value is an object or a list: Handlebars would
 * print `[object Object]` or `a,b`, text nobody wrote, as silent as the empty string strict
 * rendering refuses for a missing variable (DESIGN §10, decision 0227). renderTemplate.ts names the
 * output by the template's source at `loc`; the value itself is never quoted.
 */
export class UnprintableValueError extends Error {
  override readonly name = 'UnprintableValueError';
  constructor(
    readonly kind: 'object' | 'list',
    readonly loc: OutputLocation | undefined,
  ) {
    super(`an output's value is ${kind === 'list' ? 'a list' : 'an object'}`);
  }
}

/**
 * Strict mode reads the names before a path's last one without a check and the last one assuming an
 * object, so a missing or null parent (`{{order.customer.name}}` without `order`) and a field of a
 * text, number or boolean (`{{order.id}}` with `order: 8`) threw a TypeError with no location: the
 * 422 could not name the variable (DESIGN §3), and a block's argument with a missing parent
 * (`{{#if order.coupon}}`) failed instead of being false like any missing argument (decision 0026).
 * Here a missing parent reads as missing and a value that is not an object has no fields, so an
 * output ends in strict's own error, which carries the location renderTemplate.ts names it by.
 * Renders that succeeded before are unchanged: they never reached either case. So does a name the
 * parent only inherits (`ownsField`).
 */
function totalLookups(runtime: LookupRuntime): void {
  const { strict, lookupProperty } = runtime;
  runtime.lookupProperty = (parent, name) => (parent == null ? undefined : lookupProperty(parent, name));
  runtime.strict = (parent, name, loc) => strict(ownsField(parent, name) ? parent : null, name, loc);
}

/**
 * Strict mode asks `name in parent`, which a list's or an object's inherited names pass (`map`,
 * `join`, `keys` of a list), and Handlebars then refuses to read an inherited value: the output was
 * an empty string, the one strict rendering exists to prevent (DESIGN §10, decision 0251). Only a
 * field the data holds as its own is found; anything else is missing, and named.
 */
function ownsField(parent: unknown, name: string): boolean {
  return typeof parent === 'object' && parent !== null && Object.hasOwn(parent, name);
}

/**
 * Every output's value passes through `lambda` (Handlebars calls a function value there; data is
 * JSON, so none is one), after strict found it: an object or a list is refused there, the same way
 * and at the same moments as a missing variable. `null` prints nothing, as Handlebars prints it: it
 * is a value the caller gave (decision 0227). Block arguments and path parents never reach `lambda`.
 * Any other value leaves as text: unescaped (subject, text), Handlebars joins a program's outputs
 * with `+` as they are, so `{{a}}{{b}}` printed 1 and 2 as "3" (its issue 1838; decision 0232).
 */
function printableOutputs(runtime: LookupRuntime): void {
  const { lambda } = runtime;
  runtime.lambda = (value, context, loc) => {
    if (typeof value === 'object' && value !== null)
      throw new UnprintableValueError(Array.isArray(value) ? 'list' : 'object', loc);
    const printed = lambda(value, context);
    return printed == null ? printed : String(printed);
  };
}

const withTotalLookups = new WeakSet<object>();
const runtimeTemplate = handlebars.template.bind(handlebars);
// Each compiled template has one run-time container, which its main program receives first; the
// lookups and `lambda` are replaced there before the first render (the compiled code reads them on
// entry).
handlebars.template = (spec) => {
  const { main } = spec as { main: (runtime: LookupRuntime, ...rest: unknown[]) => string };
  return runtimeTemplate({
    ...spec,
    main(this: unknown, runtime: LookupRuntime, ...rest: unknown[]) {
      if (!withTotalLookups.has(runtime)) {
        withTotalLookups.add(runtime);
        totalLookups(runtime);
        printableOutputs(runtime);
      }
      return main.call(this, runtime, ...rest);
    },
  });
};

/** The part of Handlebars' code generator that writes an output's `lambda` call. */
interface OutputCompiler {
  push(expression: unknown[]): void;
  aliasable(name: string): string;
  popStack(): string;
  contextName(depth: number): string;
  readonly source: { readonly currentLocation: unknown };
}
type OutputCompilerClass = new () => OutputCompiler;

const BaseCompiler = (handlebars as unknown as { JavaScriptCompiler: OutputCompilerClass })
  .JavaScriptCompiler;

/**
 * Handlebars' compiled code calls `lambda(value, context)` for every output and nowhere else; this
 * generator adds the output's location as a third argument, so printableOutputs can name
 * `{{this}}` too, which no strict lookup locates. Nested programs are compiled by `compiler`.
 */
class LocatedOutputCompiler extends BaseCompiler {
  readonly compiler: OutputCompilerClass = LocatedOutputCompiler;

  resolvePossibleLambda(): void {
    const location = JSON.stringify(this.source.currentLocation);
    this.push([
      this.aliasable('container.lambda'),
      '(',
      this.popStack(),
      ', ',
      this.contextName(0),
      ', ',
      location,
      ')',
    ]);
  }
}
(handlebars as unknown as { JavaScriptCompiler: OutputCompilerClass }).JavaScriptCompiler =
  LocatedOutputCompiler;

/** Compile options for one part: strict, built-in helpers only, `html` escaped and nothing else. */
export function compileOptions(part: TemplatePart): CompileOptions {
  return {
    strict: true,
    knownHelpersOnly: true,
    knownHelpers: {
      if: true,
      unless: true,
      each: true,
      with: true,
      log: false,
      lookup: false,
      helperMissing: false,
      blockHelperMissing: false,
    },
    noEscape: part !== 'html',
  };
}

/** The runtime options of every render: no prototype access (the Handlebars ≥ 4.6 defaults, stated). */
export const RUNTIME_OPTIONS = {
  allowProtoPropertiesByDefault: false,
  allowProtoMethodsByDefault: false,
  allowCallsToHelperMissing: false,
} as const;

type CompileOptions = NonNullable<Parameters<typeof Handlebars.compile>[1]>;

interface Located {
  readonly loc?: { readonly start: { readonly line: number; readonly column: number } } | null;
}

interface Node extends Located {
  readonly type: string;
  readonly [key: string]: unknown;
}

/** The errors of one part's source (field `/subject`, `/text` or `/html`); none when it may be stored. */
export function templateSyntaxErrors(part: TemplatePart, source: string): FieldError[] {
  const field = `/${part}`;
  let program: Node;
  try {
    program = handlebars.parseWithoutProcessing(source) as unknown as Node;
  } catch (error) {
    return [{ field, message: `is not valid Handlebars: ${parseErrorSummary(error)}` }];
  }
  const problems: string[] = [];
  walk(program, part, problems);
  // Each level of loops multiplies a render's work by the data's length: the depth is bounded here,
  // the work itself when a message is accepted (renderCost.ts).
  const nesting = eachNesting(program as unknown as AstNode);
  if (nesting > RENDER_BOUNDS.maxEachNesting)
    problems.push(
      `nests #each ${nesting} deep: at most ${RENDER_BOUNDS.maxEachNesting} loops may nest inside each other`,
    );
  if (problems.length === 0) {
    try {
      // Compiling finds what the walk does not model (mismatched blocks after processing, say).
      handlebars.precompile(source, compileOptions(part));
    } catch (error) {
      problems.push(`is not valid Handlebars: ${parseErrorSummary(error)}`);
    }
  }
  return [...new Set(problems)].slice(0, 5).map((message) => ({ field, message }));
}

function walk(node: Node, part: TemplatePart, problems: string[]): void {
  const at = where(node);
  switch (node.type) {
    case 'Program':
      if (Array.isArray(node.blockParams) && node.blockParams.length > 0)
        problems.push(`uses block parameters (as |…|)${at}: use this or the field's name inside the block`);
      for (const child of node.body as Node[]) walk(child, part, problems);
      return;
    case 'ContentStatement':
    case 'CommentStatement':
      return;
    case 'MustacheStatement':
      mustache(node, part, problems, at);
      return;
    case 'BlockStatement':
      block(node, part, problems, at);
      return;
    case 'PartialStatement':
    case 'PartialBlockStatement':
      problems.push(`uses a partial${at}: templates have no partials`);
      return;
    case 'DecoratorBlock':
    case 'Decorator':
      problems.push(`uses a decorator or an inline partial${at}: templates have neither`);
      return;
    default:
      problems.push(`uses ${node.type}${at}, which templates do not support`);
  }
}

function mustache(node: Node, part: TemplatePart, problems: string[], at: string): void {
  const path = node.path as Node;
  if (path.type !== 'PathExpression') {
    problems.push(`outputs a literal or an expression${at}: only a variable may be output`);
    return;
  }
  if (hasArguments(node)) {
    problems.push(
      `calls ${quoted(path)} with arguments${at}: templates have no helpers but #if, #unless, #each and #with`,
    );
    return;
  }
  // `{{each}}` or `{{[if]}}` is no variable: Handlebars calls the helper, which fails without its
  // argument, so the template could never render (decision 0232).
  const [name = ''] = (path.parts as string[] | undefined) ?? [];
  if (simpleId(path) && (TEMPLATE_BLOCK_HELPERS as readonly string[]).includes(name)) {
    problems.push(
      `outputs ${quoted(path)}, which Handlebars calls as its #${name} helper${at}: write {{this.${name}}} to print a field so named`,
    );
    return;
  }
  if (part === 'html' && node.escaped === false) {
    problems.push(
      `outputs ${quoted(path)} unescaped ({{{…}}} or {{&…}})${at}: html output is always escaped`,
    );
  }
  pathProblems(path, problems, at);
}

function block(node: Node, part: TemplatePart, problems: string[], at: string): void {
  const path = node.path as Node;
  const name = path.type === 'PathExpression' ? String(path.original) : '';
  if (!(TEMPLATE_BLOCK_HELPERS as readonly string[]).includes(name)) {
    problems.push(
      `uses the block ${name === '' ? 'of a literal' : `#${name}`}${at}: only #if, #unless, #each and #with are allowed`,
    );
    return;
  }
  const params = (node.params as Node[] | undefined) ?? [];
  const hash = node.hash as { pairs?: unknown[] } | undefined;
  const [argument] = params;
  if (params.length !== 1 || (hash?.pairs?.length ?? 0) > 0 || argument === undefined) {
    problems.push(`#${name} takes exactly one variable${at}`);
  } else if (argument.type !== 'PathExpression') {
    problems.push(`#${name} takes a variable, not a literal or an expression${at}`);
  } else {
    pathProblems(argument, problems, at);
  }
  if (node.program) walk(node.program as Node, part, problems);
  if (node.inverse) walk(node.inverse as Node, part, problems);
}

function pathProblems(path: Node, problems: string[], at: string): void {
  const parts = (path.parts as string[] | undefined) ?? [];
  if (path.data === true) {
    const [head] = parts;
    if (head === undefined || !DATA_VARIABLES.has(head)) {
      problems.push(
        `uses the unknown variable @${head ?? ''}${at}: @index, @key, @first, @last and @root exist`,
      );
      return;
    }
  }
  const denied = parts.find((segment) => PROTOTYPE_NAMES.has(segment));
  if (denied !== undefined) {
    problems.push(`reads ${quoted(path)}${at}, which goes through the prototype name "${denied}"`);
  }
}

/** Handlebars' own test of a one-name path, the kind it resolves as a helper first. */
const simpleId = (path: Node): boolean =>
  (handlebars.AST.helpers as unknown as { simpleId(path: Node): boolean }).simpleId(path);

function hasArguments(node: Node): boolean {
  const params = node.params as unknown[] | undefined;
  const hash = node.hash as { pairs?: unknown[] } | undefined;
  return (params?.length ?? 0) > 0 || (hash?.pairs?.length ?? 0) > 0;
}

function quoted(path: Node): string {
  return `{{${String(path.original)}}}`;
}

function where(node: Located): string {
  const start = node.loc?.start;
  return start ? ` (line ${start.line}, column ${start.column + 1})` : '';
}

/** A parse error's first line and what was expected, without Handlebars' source excerpt. */
function parseErrorSummary(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const lines = text.split('\n').map((line) => line.trim());
  const first = (lines[0] ?? 'unreadable').replace(/:$/, '');
  const expecting = lines.find((line) => line.startsWith('Expecting'));
  const summary = expecting ? `${first}: ${expecting}` : first;
  return summary.length > 240 ? `${summary.slice(0, 239)}…` : summary;
}
