/**
 * Rendering a stored template with a message's data (DESIGN §10): strict (a variable the data lacks
 * is an error naming it, never an empty string), `html` escaped and `subject`/`text` not, and the
 * rendered subject held to the header rules of §3 (a CR or LF that came from the data is an error
 * naming the data's field). The enqueue renders once to validate, the sender renders again at send
 * time from the same pinned version, so what was validated is what is sent. Pure.
 *
 * Compiling is separate from rendering: a CompiledTemplate is built once per (tenant, template,
 * version) per warm function (templateCache.ts) and rendered for every message.
 */

import { controlCharacterProblem } from './headerSafety.js';
import { type FieldError, jsonPointer } from './problem.js';
import { type AstNode, type MeasuredPart, measureRender, RENDER_BOUNDS } from './renderCost.js';
import { LIMITS } from './requestLimits.js';
import {
  compileOptions,
  handlebars,
  RUNTIME_OPTIONS,
  type TemplatePart,
  UnprintableValueError,
} from './templateSyntax.js';

/** A template version's sources: a subject, and text or html or both. */
export interface TemplateContent {
  readonly subject: string;
  readonly text: string | null;
  readonly html: string | null;
}

/** What a message's content becomes: the same shape as an inline enqueue's. */
export interface RenderedContent {
  readonly subject: string;
  readonly text: string | null;
  readonly html: string | null;
}

type PartRenderer = (data: unknown) => string;

/** A template version compiled once; render it as often as needed. */
export interface CompiledTemplate {
  readonly content: TemplateContent;
  readonly parts: ReadonlyArray<{ readonly part: TemplatePart; readonly render: PartRenderer }>;
  /** The parsed parts, walked with the data before a render to bound its cost (renderCost.ts). */
  readonly measured: readonly MeasuredPart[];
}

export type RenderResult =
  | { readonly ok: true; readonly value: RenderedContent }
  | { readonly ok: false; readonly errors: readonly FieldError[] };

/** Compiles a stored version (its syntax was checked when it was stored). */
export function compileTemplate(content: TemplateContent): CompiledTemplate {
  const parts: { part: TemplatePart; render: PartRenderer }[] = [];
  const measured: MeasuredPart[] = [];
  for (const part of ['subject', 'text', 'html'] as const) {
    const source = content[part];
    if (source === null) continue;
    // `parse` (not parseWithoutProcessing): the statements as the compiler sees them, `~` applied.
    measured.push({ program: handlebars.parse(source) as unknown as AstNode, escaped: part === 'html' });
    const template = handlebars.compile(source, compileOptions(part));
    // The first call compiles (Handlebars compiles lazily); this one is on the stored source, with
    // no data, and its failure (a missing variable) is expected and ignored.
    try {
      template({}, RUNTIME_OPTIONS);
    } catch {
      // Rendering without data fails on the first variable: compiled, nothing else.
    }
    parts.push({ part, render: (data) => template(data, RUNTIME_OPTIONS) });
  }
  return { content, parts, measured };
}

/** Renders a compiled template with `data` (a JSON object). Never throws. */
export function renderTemplate(
  compiled: CompiledTemplate,
  data: Readonly<Record<string, unknown>>,
): RenderResult {
  // Handlebars cannot be interrupted: the render's cost is known first, and a render over its
  // bounds never starts (DESIGN §5).
  const cost = measureRender(compiled.measured, data);
  if (!cost.within) return { ok: false, errors: [overBoundError(cost.over)] };
  const rendered: Record<TemplatePart, string | null> = { subject: null, text: null, html: null };
  const errors: FieldError[] = [];
  for (const { part, render } of compiled.parts) {
    try {
      rendered[part] = render(data);
    } catch (error) {
      errors.push(renderError(part, compiled.content[part] ?? '', error));
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  const subject = rendered.subject ?? '';
  errors.push(...subjectErrors(compiled, data, subject));
  const { text, html } = rendered;
  if (!text && !html)
    errors.push({
      field: '/data',
      message: 'the template renders an empty body: text and html are both empty',
    });
  const bytes = utf8Length(subject) + utf8Length(text ?? '') + utf8Length(html ?? '');
  if (bytes > LIMITS.maxBodyBytes)
    errors.push({
      field: '/data',
      message: `the rendered message is ${bytes} bytes, more than the ${LIMITS.maxBodyBytes} a message may have`,
    });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: { subject, text, html } };
}

function overBoundError(over: 'steps' | 'bytes'): FieldError {
  return {
    field: '/data',
    message:
      over === 'steps'
        ? `makes the template take more than ${RENDER_BOUNDS.maxSteps} steps to render (statements and loop iterations, the render bound): loop over less data or nest fewer loops`
        : `the rendered message would be more than the ${RENDER_BOUNDS.maxOutputBytes} a message may have (bytes of subject, text and html)`,
  };
}

/**
 * A render that threw: a missing variable (Handlebars' strict error carries its location) or an
 * object or list output (UnprintableValueError, templateSyntax.ts). The variable is read from the
 * template source at the location; no error's message is used, because it can quote a value of the
 * data.
 */
function renderError(part: TemplatePart, source: string, error: unknown): FieldError {
  if (error instanceof UnprintableValueError) {
    // The location is always there: templateSyntax.ts's compiler writes it into every output.
    const { start, end } = error.loc ?? { start: { line: 1, column: 0 }, end: { line: 1, column: 0 } };
    const location = { line: start.line, column: start.column, endLine: end.line, endColumn: end.column };
    return {
      field: '/data',
      message: unprintableMessage(part, sourceAt(source, location), error.kind, location),
    };
  }
  const location = strictLocation(error);
  if (location !== null) {
    const variable = sourceAt(source, location);
    return {
      field: '/data',
      message: `lacks ${variable === '' ? 'a variable' : `\`${variable}\``}, which the ${part} template uses (${place(location)})`,
    };
  }
  // Not expected: a path through a missing parent or a value with no fields ends in the strict error
  // above (templateSyntax.ts, totalLookups).
  return {
    field: '/data',
    message: `the ${part} template does not render with this data`,
  };
}

/** `order` is an object …: what was printed, where, and what to write instead. */
function unprintableMessage(
  part: TemplatePart,
  variable: string,
  kind: 'object' | 'list',
  location: SourceLocation,
): string {
  const instead =
    kind === 'list'
      ? `print its entries with \`{{#each ${variable}}}…{{/each}}\``
      : `name one of its fields, such as \`{{${variable === '.' ? 'this' : variable}.<field>}}\``;
  return (
    `\`${variable}\` is ${kind === 'list' ? 'a list' : 'an object'}, which the ${part} template prints ` +
    `(${place(location)}): \`{{${variable}}}\` prints only strings, numbers and booleans — ${instead}`
  );
}

const place = (location: SourceLocation): string => `line ${location.line}, column ${location.column + 1}`;

interface SourceLocation {
  readonly line: number;
  readonly column: number;
  readonly endLine: number;
  readonly endColumn: number;
}

function strictLocation(error: unknown): SourceLocation | null {
  if (!(error instanceof handlebars.Exception)) return null;
  const { lineNumber, column, endLineNumber, endColumn } = error as unknown as Record<string, unknown>;
  if (typeof lineNumber !== 'number' || typeof column !== 'number') return null;
  return {
    line: lineNumber,
    column,
    endLine: typeof endLineNumber === 'number' ? endLineNumber : lineNumber,
    endColumn: typeof endColumn === 'number' ? endColumn : column,
  };
}

/**
 * The variable between two Handlebars locations (lines from 1, columns from 0): a path's, or an
 * output's without its braces, `&` and `~`. Lines end as Handlebars ends them: CR LF, LF or CR.
 */
function sourceAt(source: string, location: SourceLocation): string {
  const lineStarts = [0, ...Array.from(source.matchAll(/\r\n?|\n/g), (end) => end.index + end[0].length)];
  const offset = (line: number, column: number) => (lineStarts[line - 1] ?? source.length) + column;
  const text = source.slice(
    offset(location.line, location.column),
    offset(location.endLine, location.endColumn),
  );
  return text.replace(/^[{#^/&~\s]+|[}~\s]+$/g, '').slice(0, 100);
}

/** The rendered subject under the header rules of §3; a CR/LF is traced to the data field it came from. */
function subjectErrors(
  compiled: CompiledTemplate,
  data: Readonly<Record<string, unknown>>,
  subject: string,
): FieldError[] {
  if (subject.trim() === '') return [{ field: '/data', message: 'the subject renders empty' }];
  const control = controlCharacterProblem(subject, true);
  if (control !== null) {
    const fields = fieldsReachingSubject(compiled, data);
    const message = `goes into the subject, which ${control}`;
    return fields.length > 0
      ? fields.map((field) => ({ field, message }))
      : [{ field: '/data', message: `the rendered subject ${control}` }];
  }
  if (subject.length > LIMITS.maxSubjectLength)
    return [
      { field: '/data', message: `the subject renders longer than ${LIMITS.maxSubjectLength} characters` },
    ];
  return [];
}

const MAX_TRACE_DEPTH = 16;

/**
 * The data's strings that carry a control character and end up in the subject: each is replaced by
 * a marker, the subject is rendered again, and the markers that come out name the fields. A
 * non-empty string stays a non-empty string, so #if and #unless decide as before.
 */
function fieldsReachingSubject(
  compiled: CompiledTemplate,
  data: Readonly<Record<string, unknown>>,
): string[] {
  const subject = compiled.parts.find((entry) => entry.part === 'subject');
  if (subject === undefined) return [];
  const pointers: string[] = [];
  const marked = markControlStrings(data, [], pointers);
  try {
    const output = subject.render(marked);
    return pointers.filter((_, index) => output.includes(marker(index)));
  } catch {
    return [];
  }
}

function markControlStrings(value: unknown, path: (string | number)[], pointers: string[]): unknown {
  if (typeof value === 'string') {
    if (controlCharacterProblem(value, true) === null) return value;
    pointers.push(jsonPointer(['data', ...path]));
    return marker(pointers.length - 1);
  }
  if (typeof value !== 'object' || value === null || path.length >= MAX_TRACE_DEPTH) return value;
  if (Array.isArray(value))
    return value.map((item, index) => markControlStrings(item, [...path, index], pointers));
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    Object.defineProperty(copy, key, {
      value: markControlStrings(item, [...path, key], pointers),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

const marker = (index: number): string => `\u2063pd${index}\u2063`;

const encoder = new TextEncoder();

function utf8Length(text: string): number {
  return encoder.encode(text).length;
}
