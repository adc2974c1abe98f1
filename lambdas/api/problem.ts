/**
 * The problems the HTTP API answers with (RFC 9457, `application/problem+json`). Each `type` is a
 * URN: stable, unique, and not a URL a client could mistake for documentation hosted somewhere
 * (docs/api.md describes each one). Core reports field errors; this is where they, and every other
 * failure, get a type, a title and an HTTP status.
 */
import type { FieldError } from '../core/fieldErrors.js';
import { type ProblemDetails, VALIDATION_PROBLEM } from '../core/problem.js';

export { type ProblemDetails, validationProblem } from '../core/problem.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export const PROBLEM = {
  validation: VALIDATION_PROBLEM,
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
  template: {
    type: 'urn:postdate:problem:template',
    title: 'The template cannot be used with this request',
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
