/**
 * RFC 9457 problem details: the document every error of the HTTP API is, and the one problem core
 * itself builds, "the request is invalid". Pure data, no transport.
 *
 * The validation problem is here, not in lambdas/api/, because it leaves the API too: the parsers of
 * messageSchema.ts hand it to applications and the outbox helper (`parsed.problem`,
 * `OutboxInputError.problem`, docs/api.md). Every other problem kind, and the HTTP answer, belongs
 * to the api (lambdas/api/problem.ts).
 */
import { describeFieldErrors, type FieldError, uniqueByField } from './fieldErrors.js';

export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly errors?: readonly FieldError[];
  /** Extension members (RFC 9457 §3.2), e.g. `current_status` on a 409. */
  readonly [extension: string]: unknown;
}

/** The problem type of an invalid request (docs/api.md, "Errors"). */
export const VALIDATION_PROBLEM = {
  type: 'urn:postdate:problem:validation',
  title: 'The request is invalid',
  status: 400,
} as const;

/** A 400 validation problem naming every offending field (one entry per field, first message wins). */
export function validationProblem(errors: readonly FieldError[], detail?: string): ProblemDetails {
  const unique = uniqueByField(errors);
  return {
    ...VALIDATION_PROBLEM,
    detail: detail ?? describeFieldErrors(unique),
    ...(unique.length > 0 ? { errors: unique } : {}),
  };
}
