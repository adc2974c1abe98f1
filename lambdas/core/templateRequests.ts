/**
 * The template requests of DESIGN §3 and §10 as zod schemas (they also generate the OpenAPI
 * document) and their validations: a template's name, a new version `{subject, text?, html?,
 * description?}` (its syntax checked by templateSyntax.ts, loaded on first use), a preview
 * `{data, version?}`, and the enqueue's `template {name, version?}` + `data`. Pure; nothing here
 * throws on any input.
 */
import * as z from 'zod';
import { controlCharacterProblem } from './headerSafety.js';
import {
  type FieldError,
  guarded,
  illFormedStringErrors,
  jsonPointer,
  PARSE_CONTEXT,
  type Validated,
  zodErrors,
} from './problem.js';

export const TEMPLATE_LIMITS = {
  maxNameLength: 100,
  /** A subject's source: longer than the rendered limit (998), for its blocks and variables. */
  maxSubjectSourceLength: 2000,
  maxDescriptionLength: 500,
  /** A message's `data`, as UTF-8 JSON (DESIGN §3). */
  maxDataBytes: 64 * 1024,
  /** How deep `data` may nest (its fingerprint and its render walk it). */
  maxDataDepth: 32,
  /** Templates a page of `GET /v1/templates` holds at most. */
  maxListLimit: 100,
} as const;

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** A template's name: 1–100 of letters, digits, `.`, `_` and `-`, starting with a letter or digit (a URL path segment). */
export const TemplateNameSchema = z
  .string()
  .superRefine((value, ctx) => {
    if (value.length > TEMPLATE_LIMITS.maxNameLength || !NAME_PATTERN.test(value))
      ctx.addIssue({
        code: 'custom',
        message: `must be 1–${TEMPLATE_LIMITS.maxNameLength} of letters, digits, '.', '_' and '-', starting with a letter or digit`,
      });
  })
  .meta({ example: 'campaign-approved' });

const TemplateVersionNumber = z
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(Number.MAX_SAFE_INTEGER, 'must be a safe integer');

/**
 * `data`: a JSON object of at most 64 KiB, nested at most 32 deep, whose every number is finite. The
 * records keep it as JSON and the sender renders what JSON gives back (DESIGN §10: what was validated
 * is what is sent), so a number JSON cannot carry — `1e400`, Infinity once parsed; NaN from the outbox
 * helper's caller — would render otherwise at send (JSON writes `null`): it is refused, by its path
 * (decision 0156). Those limits are judged on the object the records keep (`templateDataErrors`), not
 * on this schema's copy, which drops an own `__proto__` key.
 */
export const TemplateDataSchema = z.record(z.string(), z.unknown()).meta({
  description: `The template's variables: a JSON object of at most ${TEMPLATE_LIMITS.maxDataBytes / 1024} KiB; every number finite (JSON has no Infinity).`,
  example: { campaign: { name: 'Winter sale', id: 42 }, first_name: 'Ada' },
});

/** The enqueue's template reference. */
export const TemplateRefSchema = z
  .strictObject({
    name: TemplateNameSchema,
    version: TemplateVersionNumber.nullish().meta({
      description: 'A version to pin; without it, the latest at enqueue time (then pinned).',
    }),
  })
  .meta({ id: 'TemplateRef', description: 'A stored template (DESIGN §10).' });

const PartSource = z.string().min(1, 'must not be empty');

export const TemplatePutBodySchema = z
  .strictObject({
    subject: PartSource.max(
      TEMPLATE_LIMITS.maxSubjectSourceLength,
      `must be at most ${TEMPLATE_LIMITS.maxSubjectSourceLength} characters`,
    ).meta({ description: 'Handlebars; rendered without HTML escaping, on one line.' }),
    text: PartSource.nullish().meta({ description: 'Handlebars; rendered without HTML escaping.' }),
    html: PartSource.nullish().meta({ description: 'Handlebars; every `{{variable}}` is HTML-escaped.' }),
    description: z
      .string()
      .max(
        TEMPLATE_LIMITS.maxDescriptionLength,
        `must be at most ${TEMPLATE_LIMITS.maxDescriptionLength} characters`,
      )
      .nullish(),
  })
  .superRefine((body, ctx) => {
    if (!body.text && !body.html)
      ctx.addIssue({ code: 'custom', message: 'text or html is required', path: ['text'] });
  })
  .meta({
    id: 'TemplateRequest',
    description:
      'A new immutable version of a template. Handlebars: `{{name}}`, `{{#if}}`, `{{#unless}}`, `{{#each}}`, `{{#with}}`; no partials, no other helpers, no prototype access.',
  });

export const TemplateRenderBodySchema = z
  .strictObject({
    data: TemplateDataSchema,
    version: TemplateVersionNumber.nullish().meta({ description: 'Default: the latest version.' }),
  })
  .meta({ id: 'TemplateRenderRequest', description: 'Render a template with this data; nothing is sent.' });

/** The template of an enqueued message with the version it was pinned to (on its records). */
export interface PinnedTemplate {
  readonly name: string;
  readonly version: number;
}

/** A validated new version. */
export interface TemplatePut {
  readonly subject: string;
  readonly text: string | null;
  readonly html: string | null;
  readonly description: string | null;
}

/** A validated preview request. */
export interface TemplateRender {
  readonly data: Readonly<Record<string, unknown>>;
  readonly version: number | null;
}

/** Validates a template name from a URL path. */
export function validateTemplateName(name: string): Validated<string> {
  return guarded(() => {
    const parsed = TemplateNameSchema.safeParse(name, PARSE_CONTEXT);
    if (parsed.success) return { ok: true, value: parsed.data };
    return { ok: false, errors: zodErrors(parsed.error).map((error) => ({ ...error, field: 'name' })) };
  });
}

/** Validates a version number from a URL path (`1`, `2`, …). */
export function validateTemplateVersion(version: string): Validated<number> {
  const number = /^[1-9]\d{0,15}$/.test(version) ? Number(version) : Number.NaN;
  return Number.isSafeInteger(number)
    ? { ok: true, value: number }
    : { ok: false, errors: [{ field: 'version', message: 'must be a whole number of at least 1' }] };
}

/**
 * templateSyntax.ts and Handlebars, imported on the first check of a stored template (decision
 * 0117), as core/templateRenderer.ts imports them on the first render: code splitting keeps
 * Handlebars out of what the api's cold start loads. Node imports a module once.
 */
const syntaxModule = () => import('./templateSyntax.js');

/**
 * Validates `PUT /v1/templates/{name}`: the structure, then every part's Handlebars. Async only
 * because the syntax check loads Handlebars on its first use; the answer is the same as ever.
 */
export async function validateTemplatePut(body: unknown): Promise<Validated<TemplatePut>> {
  const structure = guarded((): Validated<TemplatePut> => {
    const parsed = TemplatePutBodySchema.safeParse(body, PARSE_CONTEXT);
    const hidden = illFormedStringErrors(body);
    if (!parsed.success || hidden.length > 0)
      return { ok: false, errors: parsed.success ? hidden : [...zodErrors(parsed.error), ...hidden] };
    return {
      ok: true,
      value: {
        subject: parsed.data.subject,
        text: parsed.data.text || null,
        html: parsed.data.html || null,
        description: parsed.data.description ?? null,
      },
    };
  });
  if (!structure.ok) return structure;
  const value = structure.value;
  const { templateSyntaxErrors } = await syntaxModule();
  return guarded(() => {
    const errors: FieldError[] = [];
    const subjectControl = controlCharacterProblem(value.subject, true);
    if (subjectControl) errors.push({ field: '/subject', message: subjectControl });
    for (const part of ['subject', 'text', 'html'] as const) {
      const source = value[part];
      if (source !== null) errors.push(...templateSyntaxErrors(part, source));
    }
    return errors.length > 0 ? { ok: false, errors } : { ok: true, value };
  });
}

/** Validates `POST /v1/templates/{name}/render`. `data` is the body's own object, not a copy. */
export function validateTemplateRender(body: unknown): Validated<TemplateRender> {
  return guarded(() => {
    const parsed = TemplateRenderBodySchema.safeParse(body, PARSE_CONTEXT);
    const hidden = [...illFormedStringErrors(body), ...templateDataErrors(body)];
    if (!parsed.success || hidden.length > 0)
      return { ok: false, errors: parsed.success ? hidden : [...zodErrors(parsed.error), ...hidden] };
    return {
      ok: true,
      value: { data: rawData(body), version: parsed.data.version ?? null },
    };
  });
}

/**
 * The `data` member of a body that passed its schema, as JSON.parse made it: a schema's copy would
 * turn an own `__proto__` key into a prototype.
 */
export function rawData(body: unknown): Readonly<Record<string, unknown>> {
  const data = (body as { data?: unknown } | null)?.data;
  return typeof data === 'object' && data !== null && !Array.isArray(data)
    ? (data as Record<string, unknown>)
    : {};
}

/**
 * The limits of `data` (TemplateDataSchema) on the body's own object, as `rawData` gives it to the
 * records: JSON.parse makes `{"__proto__": …}` an own key, which a schema's copy drops, so a limit
 * judged on the copy would let any amount of data in under that name. None when `data` is absent or
 * not an object (the schema says so).
 */
export function templateDataErrors(body: unknown): FieldError[] {
  const data = typeof body === 'object' && body !== null ? (body as { data?: unknown }).data : undefined;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return [];
  const problem = dataProblem(data);
  return problem === null
    ? []
    : [{ field: jsonPointer(['data', ...problem.path]), message: problem.message }];
}

/** What is wrong with `data`, and where inside it (empty: the whole of it). */
function dataProblem(data: unknown): { readonly message: string; readonly path: (string | number)[] } | null {
  if (depthOf(data, 0) > TEMPLATE_LIMITS.maxDataDepth)
    return { message: `must nest at most ${TEMPLATE_LIMITS.maxDataDepth} levels deep`, path: [] };
  const bytes = new TextEncoder().encode(JSON.stringify(data)).length;
  if (bytes > TEMPLATE_LIMITS.maxDataBytes)
    return {
      message: `must be at most ${TEMPLATE_LIMITS.maxDataBytes} bytes of JSON (it is ${bytes})`,
      path: [],
    };
  const path = nonFinitePath(data);
  if (path)
    return {
      message: 'must be a finite number: JSON has no Infinity or NaN (a number beyond ±1.8e308 is Infinity)',
      path,
    };
  return null;
}

/** The path of the first number in `value` that is not finite, if any (the depth was bounded first). */
function nonFinitePath(value: unknown): (string | number)[] | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : [];
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const inner = nonFinitePath(item);
    if (inner) return [Array.isArray(value) ? Number(key) : key, ...inner];
  }
  return undefined;
}

function depthOf(value: unknown, depth: number): number {
  if (typeof value !== 'object' || value === null) return depth;
  if (depth > TEMPLATE_LIMITS.maxDataDepth) return depth;
  let deepest = depth + 1;
  for (const item of Object.values(value)) deepest = Math.max(deepest, depthOf(item, depth + 1));
  return deepest;
}
