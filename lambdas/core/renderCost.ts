/**
 * What one render will cost, known before it runs (DESIGN §5: work that can take unbounded time —
 * rendering a template — is bounded when the template and the message are accepted). Handlebars
 * renders synchronously and cannot be interrupted, and a small template over small data can loop
 * for seconds (three nested `#each` over 1 KB of data rendered for 11 s). So the render is first
 * walked without producing anything: the template's parsed statements evaluated against the data
 * the way Handlebars evaluates them (`#if`, `#unless`, `#with`, `#each`, paths with `../` and `@`),
 * counting steps (every statement evaluated, every loop iteration) and output bytes, and stopping
 * as soon as either passes its bound. The walk's own work is bounded by the same counts.
 *
 * Deterministic: the same version with the same data costs the same at enqueue and at send time, so
 * what was accepted renders within the bound in the sender too. Pure.
 */
import { LIMITS } from './requestLimits.js';

export const RENDER_BOUNDS = {
  /**
   * Statements evaluated and loop iterations, over all parts of one message. An order of 500 lines
   * with 20 fields each is about 11,000; a loop iteration costs Handlebars a few microseconds, so
   * the bound keeps a render within tens of milliseconds.
   */
  maxSteps: 50_000,
  /** The rendered subject, text and html together: the body limit of an inline message. */
  maxOutputBytes: LIMITS.maxBodyBytes,
  /** `#each` inside `#each` at most this deep, checked when a template is stored. */
  maxEachNesting: 3,
} as const;

/** The parts of a parsed Handlebars program that the walk reads (hbs.AST, loosely typed). */
export interface AstNode {
  readonly type: string;
  readonly [key: string]: unknown;
}

export interface MeasuredPart {
  readonly program: AstNode;
  /** `html` output is HTML-escaped; `subject` and `text` are not. */
  readonly escaped: boolean;
}

export type RenderCost =
  | { readonly within: true; readonly steps: number; readonly bytes: number }
  | { readonly within: false; readonly over: 'steps' | 'bytes' };

class OverBudget extends Error {
  constructor(readonly over: 'steps' | 'bytes') {
    super(`render over its ${over} bound`);
  }
}

interface Frame {
  readonly index?: number;
  readonly key?: string | number;
  readonly first?: boolean;
  readonly last?: boolean;
}

interface Scope {
  /** Contexts, innermost first (Handlebars' `depths`): `../` is one step out. */
  readonly contexts: readonly unknown[];
  /** `@` data frames, innermost first. */
  readonly frames: readonly Frame[];
}

/** Walks every part with the data; `within: false` as soon as a bound is passed. Never throws. */
export function measureRender(
  parts: readonly MeasuredPart[],
  data: unknown,
  bounds: { readonly maxSteps: number; readonly maxOutputBytes: number } = RENDER_BOUNDS,
): RenderCost {
  let steps = 0;
  let bytes = 0;
  const step = (): void => {
    steps += 1;
    if (steps > bounds.maxSteps) throw new OverBudget('steps');
  };
  const output = (count: number): void => {
    bytes += count;
    if (bytes > bounds.maxOutputBytes) throw new OverBudget('bytes');
  };

  const program = (node: AstNode, scope: Scope, escaped: boolean): void => {
    for (const statement of (node.body as AstNode[] | undefined) ?? []) {
      step();
      switch (statement.type) {
        case 'ContentStatement':
          output(utf8Bytes(String(statement.value ?? '')));
          break;
        case 'MustacheStatement': {
          const value = resolve(statement.path as AstNode, scope, data);
          output(renderedBytes(value, escaped && statement.escaped !== false));
          break;
        }
        case 'BlockStatement':
          block(statement, scope, escaped);
          break;
        default:
          // Comments output nothing; anything else was refused when the template was stored.
          break;
      }
    }
  };

  const branch = (node: unknown, scope: Scope, escaped: boolean): void => {
    if (node && typeof node === 'object') program(node as AstNode, scope, escaped);
  };

  const block = (node: AstNode, scope: Scope, escaped: boolean): void => {
    const helper = String((node.path as AstNode).original ?? '');
    const [argument] = (node.params as AstNode[] | undefined) ?? [];
    const value = argument ? resolve(argument, scope, data) : undefined;
    switch (helper) {
      case 'if':
        branch(isFalsy(value) ? node.inverse : node.program, scope, escaped);
        return;
      case 'unless':
        branch(isFalsy(value) ? node.program : node.inverse, scope, escaped);
        return;
      case 'with':
        if (isEmpty(value)) branch(node.inverse, scope, escaped);
        else branch(node.program, enter(scope, value, null), escaped);
        return;
      case 'each': {
        const entries = iterationsOf(value);
        if (entries.length === 0) {
          branch(node.inverse, scope, escaped);
          return;
        }
        entries.forEach(([key, item], index) => {
          step();
          const frame = { index, key, first: index === 0, last: index === entries.length - 1 };
          branch(node.program, enter(scope, item, frame), escaped);
        });
        return;
      }
      default:
        return;
    }
  };

  try {
    for (const part of parts) program(part.program, { contexts: [data], frames: [{}] }, part.escaped);
  } catch (error) {
    if (error instanceof OverBudget) return { within: false, over: error.over };
    throw error;
  }
  return { within: true, steps, bytes };
}

/** How deeply `#each` blocks nest in a parsed part (0: no loop). */
export function eachNesting(node: AstNode): number {
  let deepest = 0;
  const visit = (current: unknown, depth: number): void => {
    if (!current || typeof current !== 'object') return;
    const statement = current as AstNode;
    if (statement.type === 'Program') {
      for (const child of (statement.body as AstNode[] | undefined) ?? []) visit(child, depth);
      return;
    }
    if (statement.type !== 'BlockStatement') return;
    const inner = String((statement.path as AstNode).original ?? '') === 'each' ? depth + 1 : depth;
    deepest = Math.max(deepest, inner);
    visit(statement.program, inner);
    visit(statement.inverse, depth);
  };
  visit(node, 0);
  return deepest;
}

/**
 * A new context for a block's program, as Handlebars' wrapProgram does: the depth grows only when
 * the context changes (`!=`, its own comparison), so `../` counts the same steps as in a render.
 */
function enter(scope: Scope, context: unknown, frame: Frame | null): Scope {
  const [current] = scope.contexts;
  // biome-ignore lint/suspicious/noDoubleEquals: Handlebars compares contexts with !=; so must the walk
  const contexts = context != current ? [context, ...scope.contexts] : scope.contexts;
  // `#each` makes a data frame (createFrame: the parent's fields, then its own); `#with` keeps it.
  const frames = frame === null ? scope.frames : [{ ...scope.frames[0], ...frame }, ...scope.frames];
  return { contexts, frames };
}

/** A path's value, or undefined where a strict render would throw (a render that fails costs less). */
function resolve(path: AstNode, scope: Scope, root: unknown): unknown {
  if (path.type !== 'PathExpression') return undefined;
  const parts = (path.parts as string[] | undefined) ?? [];
  const depth = typeof path.depth === 'number' ? path.depth : 0;
  let value: unknown;
  let rest = parts;
  if (path.data === true) {
    const [head, ...tail] = parts;
    if (head === 'root') value = root;
    else value = scope.frames[depth]?.[head as keyof Frame];
    rest = tail;
  } else {
    value = scope.contexts[depth];
  }
  for (const name of rest) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

/** `#if`'s test (no includeZero): falsy, or an empty array. */
const isFalsy = (value: unknown): boolean => !value || (Array.isArray(value) && value.length === 0);

/** Handlebars' isEmpty (`#with`): falsy but not 0, or an empty array. */
const isEmpty = (value: unknown): boolean =>
  (!value && value !== 0) || (Array.isArray(value) && value.length === 0);

/** What `#each` iterates: an array's items (`@key` is the index), an object's own keys; else nothing. */
function iterationsOf(value: unknown): [string | number, unknown][] {
  if (Array.isArray(value)) return value.map((item, index) => [index, item]);
  if (value !== null && typeof value === 'object')
    return Object.keys(value).map((key) => [key, (value as Record<string, unknown>)[key]]);
  return [];
}

const ESCAPED_LENGTH: Readonly<Record<string, number>> = {
  '&': 5,
  '<': 4,
  '>': 4,
  '"': 6,
  "'": 6,
  '`': 6,
  '=': 6,
};

/**
 * The bytes a mustache outputs: nothing for null/undefined, nor for an object or a list, which the
 * render refuses to print (decision 0227); else the value as text, escaped in html.
 */
function renderedBytes(value: unknown, escaped: boolean): number {
  if (value === null || value === undefined || typeof value === 'object') return 0;
  const text = String(value);
  if (!escaped) return utf8Bytes(text);
  let bytes = utf8Bytes(text);
  for (const character of text) {
    const length = ESCAPED_LENGTH[character];
    if (length !== undefined) bytes += length - 1;
  }
  return bytes;
}

/** UTF-8 length without encoding (a lone surrogate counts 3, as TextEncoder's U+FFFD). */
function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        index++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
