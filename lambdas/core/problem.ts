/**
 * RFC 9457 problem details: every error the HTTP API answers is one of these, serialized as
 * `application/problem+json`. Pure data, no transport: the API handler turns a ProblemDetails into a
 * response, the schema parser returns one for invalid input.
 *
 * `errors[].field` names what was wrong (docs/api.md, "Errors"):
 * - a JSON Pointer (RFC 6901) into the request body, e.g. `/to/2`, `/headers/X-Campaign`, `/group/version`;
 * - `body` for the body as a whole (not JSON, too large, not an object);
 * - the request header's name, e.g. `Idempotency-Key`, `Content-Type`;
 * - the query parameter or path parameter's name, e.g. `status`, `limit`, `cursor`, `id`, `key`.
 */

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface FieldError {
  readonly field: string;
  readonly message: string;
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

/**
 * The problem types the API answers with. Each `type` is a URN: stable, unique, and not a URL a
 * client could mistake for documentation hosted somewhere (docs/api.md describes each one).
 */
export const PROBLEM = {
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
  internal: { type: 'urn:postdate:problem:internal', title: 'Internal error', status: 500 },
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
  return problem('validation', detail ?? describeErrors(unique), { errors: unique });
}

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

function describeErrors(errors: readonly FieldError[]): string {
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
