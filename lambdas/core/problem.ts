/**
 * RFC 9457 problem details (`application/problem+json`): the document every error of the HTTP API
 * is, and the field errors that validation reports. Pure data, no transport: the api answers with
 * these (api/route.ts), and the parsers of messageSchema.ts hand the same validation problem to
 * applications and the outbox helper (`parsed.problem`, `OutboxInputError.problem`, docs/api.md).
 *
 * Each problem `type` is a URN: stable, unique, and not a URL a client could mistake for
 * documentation hosted somewhere (docs/api.md describes each one).
 *
 * A field error's `field` names what was wrong (docs/api.md, "Errors"):
 * - a JSON Pointer (RFC 6901) into the request body, e.g. `/to/2`, `/headers/X-Campaign`, `/group/version`;
 * - `body` for the body as a whole (not JSON, too large, not an object);
 * - the request header's name, e.g. `Idempotency-Key`, `Content-Type`;
 * - the query parameter or path parameter's name, e.g. `status`, `limit`, `cursor`, `id`, `key`.
 *
 * A `message` never echoes the value it judged (values may be addresses).
 */
import type { ZodError } from 'zod';

export interface FieldError {
  readonly field: string;
  readonly message: string;
}

/** A validation's answer: the canonical value, or every field that is wrong. */
export type Validated<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly errors: readonly FieldError[] };

/** Keeps the first error of each field, in order. */
export function uniqueByField(errors: readonly FieldError[]): FieldError[] {
  const seen = new Set<string>();
  const unique: FieldError[] = [];
  for (const error of errors) {
    if (seen.has(error.field)) continue;
    seen.add(error.field);
    unique.push(error);
  }
  return unique;
}

/** One sentence naming the fields (at most five, then a count), e.g. `2 fields are invalid: /to/0, /subject.` */
export function describeFieldErrors(errors: readonly FieldError[]): string {
  if (errors.length === 0) return 'The request is invalid.';
  const fields = errors.map((error) => error.field);
  const shown = fields.slice(0, 5).join(', ');
  const more = fields.length > 5 ? ` and ${fields.length - 5} more` : '';
  return `${errors.length === 1 ? 'One field is' : `${errors.length} fields are`} invalid: ${shown}${more}.`;
}

/** Escapes one JSON Pointer reference token (RFC 6901 §3: `~` → `~0`, `/` → `~1`). */
export function pointerToken(token: string | number): string {
  return String(token).replaceAll('~', '~0').replaceAll('/', '~1');
}

/** Builds a JSON Pointer from path segments: `['to', 2]` → `/to/2`; `[]` → `body`. */
export function jsonPointer(path: readonly (string | number)[]): string {
  if (path.length === 0) return 'body';
  return path.map((segment) => `/${pointerToken(segment)}`).join('');
}

/** Runs a validation that must never throw; a hostile value (a getter, a proxy) that does is a bad body. */
export function guarded<T>(validate: () => Validated<T>): Validated<T> {
  try {
    return validate();
  } catch {
    // Defensive: zod does not throw on data, but a hostile value could.
    return { ok: false, errors: [{ field: 'body', message: 'could not be read' }] };
  }
}

// zod issues as field errors: the field as a JSON Pointer, a message that never echoes the value.

/**
 * Pass to every `safeParse`: issues then carry the value they judged, so a missing field is told by
 * `input === undefined` rather than by zod's message text (which changed between major versions).
 * The values never leave zodErrors.
 */
export const PARSE_CONTEXT = { reportInput: true } as const;

/** One FieldError per zod issue, the field as a JSON Pointer; values are never echoed. */
export function zodErrors(error: ZodError): FieldError[] {
  const errors: FieldError[] = [];
  for (const issue of error.issues) {
    const path = issue.path.filter((segment): segment is string | number => typeof segment !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        errors.push({ field: jsonPointer([...path, key]), message: 'is not a known field' });
      continue;
    }
    errors.push({ field: jsonPointer(path), message: issueMessage(issue) });
  }
  return errors;
}

function issueMessage(issue: ZodError['issues'][number]): string {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return 'is required';
    if (issue.expected === 'object' && issue.path.length === 0) return 'must be a JSON object';
    if (issue.expected === 'int') return 'must be a whole number';
    return `must be ${issue.expected === 'array' || issue.expected === 'object' ? 'an' : 'a'} ${issue.expected}`;
  }
  if (issue.code === 'invalid_value')
    return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  return issue.message;
}

// What a schema cannot see: values that JSON allows but that would vanish or break on the way to
// DynamoDB. Each is a field error, never a silent change.

/**
 * `{"headers": {"__proto__": "x"}}` parses to an own `__proto__` key that a record copy silently
 * drops; a dropped header must be an error, not a surprise.
 */
export function prototypeKeyErrors(body: unknown): FieldError[] {
  if (typeof body !== 'object' || body === null) return [];
  const errors: FieldError[] = [];
  for (const field of ['headers', 'tags', 'metadata'] as const) {
    const map = (body as Record<string, unknown>)[field];
    if (typeof map === 'object' && map !== null && Object.hasOwn(map, '__proto__')) {
      errors.push({ field: jsonPointer([field, '__proto__']), message: 'is not an allowed name' });
    }
  }
  return errors;
}

/** A UTF-16 surrogate without its pair: valid in JSON (`"\\ud800"`), not Unicode, refused by DynamoDB. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MAX_WALK_DEPTH = 8;

/** Every string (value or name) in the body that is not well-formed Unicode, by its JSON Pointer. */
export function illFormedStringErrors(body: unknown, path: (string | number)[] = []): FieldError[] {
  if (typeof body === 'string') {
    return LONE_SURROGATE.test(body)
      ? [{ field: jsonPointer(path), message: 'must be well-formed Unicode' }]
      : [];
  }
  if (typeof body !== 'object' || body === null || path.length >= MAX_WALK_DEPTH) return [];
  const entries: [string | number, unknown][] = Array.isArray(body)
    ? body.map((item, index): [number, unknown] => [index, item])
    : Object.entries(body);
  return entries.flatMap(([name, value]) =>
    typeof name === 'string' && LONE_SURROGATE.test(name)
      ? [{ field: jsonPointer(path), message: 'has a field name that is not well-formed Unicode' }]
      : illFormedStringErrors(value, [...path, name]),
  );
}

export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly errors?: readonly FieldError[];
  /** Extension members (RFC 9457 §3.2), e.g. `current_status` on a 409. */
  readonly [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export const PROBLEM = {
  /** An invalid request (docs/api.md, "Errors"). */
  validation: { type: 'urn:postdate:problem:validation', title: 'The request is invalid', status: 400 },
  invalidJson: {
    type: 'urn:postdate:problem:invalid-json',
    title: 'The body is not valid JSON',
    status: 400,
  },
  missingIdempotencyKey: {
    type: 'urn:postdate:problem:idempotency-key-missing',
    title: 'An Idempotency-Key header is required',
    status: 400,
  },
  invalidIdempotencyKey: {
    type: 'urn:postdate:problem:idempotency-key-invalid',
    title: 'The Idempotency-Key header is invalid',
    status: 400,
  },
  unauthorized: { type: 'urn:postdate:problem:unauthorized', title: 'Not authenticated', status: 401 },
  notFound: { type: 'urn:postdate:problem:not-found', title: 'Not found', status: 404 },
  methodNotAllowed: {
    type: 'urn:postdate:problem:method-not-allowed',
    title: 'Method not allowed',
    status: 405,
  },
  conflict: {
    type: 'urn:postdate:problem:status-conflict',
    title: 'The message is not in a status that allows this',
    status: 409,
  },
  /** A retry of a message whose attachments' bytes have expired (decision 0130). */
  attachmentsGone: {
    type: 'urn:postdate:problem:attachments-gone',
    title: "The message's attachments are no longer stored",
    status: 409,
  },
  payloadTooLarge: {
    type: 'urn:postdate:problem:payload-too-large',
    title: 'The body is too large',
    status: 413,
  },
  unsupportedMediaType: {
    type: 'urn:postdate:problem:unsupported-media-type',
    title: 'The body must be application/json',
    status: 415,
  },
  idempotencyKeyReused: {
    type: 'urn:postdate:problem:idempotency-key-reused',
    title: 'This Idempotency-Key was already used with a different body',
    status: 422,
  },
  template: {
    type: 'urn:postdate:problem:template',
    title: 'The template cannot be used with this request',
    status: 422,
  },
  internal: { type: 'urn:postdate:problem:internal', title: 'Internal error', status: 500 },
  /**
   * A message a newer writer made (an outbox helper newer than this stack, decision 0166): this stack
   * cannot read it by its own rules, nor send it, until it is upgraded.
   */
  newerWriter: {
    type: 'urn:postdate:problem:newer-writer',
    title: 'A newer writer made this message: upgrade the stack',
    status: 501,
  },
  unavailable: {
    type: 'urn:postdate:problem:unavailable',
    title: 'Temporarily unavailable, retry with the same Idempotency-Key',
    status: 503,
  },
} as const satisfies Record<string, { type: string; title: string; status: number }>;

export type ProblemKind = keyof typeof PROBLEM;

/** Builds a problem of a known kind. `extensions` never override the standard members. */
export function problem(
  kind: ProblemKind,
  detail: string,
  options: { errors?: readonly FieldError[]; extensions?: Readonly<Record<string, unknown>> } = {},
): ProblemDetails {
  const { type, title, status } = PROBLEM[kind];
  return {
    ...options.extensions,
    type,
    title,
    status,
    detail,
    ...(options.errors && options.errors.length > 0 ? { errors: options.errors } : {}),
  };
}

/** A 400 validation problem naming every offending field (one entry per field, first message wins). */
export function validationProblem(errors: readonly FieldError[], detail?: string): ProblemDetails {
  const unique = uniqueByField(errors);
  return {
    ...PROBLEM.validation,
    detail: detail ?? describeFieldErrors(unique),
    ...(unique.length > 0 ? { errors: unique } : {}),
  };
}
