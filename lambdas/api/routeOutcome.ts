/**
 * What a route answers: the HTTP response and the safe attributes for the request's log line. Every
 * error is `application/problem+json`; every answer is `cache-control: no-store`.
 */
import type { TransitionResult } from '../ports/ApiStore.js';
import { messageView } from '../store/messageView.js';
import type { ApiResult } from './apiEvent.js';
import { PROBLEM_CONTENT_TYPE, type ProblemDetails, problem } from './problem.js';

export interface Outcome {
  readonly statusCode: number;
  readonly response: ApiResult;
  /** Safe attributes for the request's log line. */
  readonly log: Readonly<Record<string, unknown>>;
}

const COMMON_HEADERS = { 'cache-control': 'no-store' } as const;

export function rawJsonResult(statusCode: number, body: string): Outcome {
  return {
    statusCode,
    response: { statusCode, headers: { ...COMMON_HEADERS, 'content-type': 'application/json' }, body },
    log: {},
  };
}

export function jsonResult(
  statusCode: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
  log: Readonly<Record<string, unknown>> = {},
): Outcome {
  return {
    statusCode,
    response: {
      statusCode,
      headers: { ...COMMON_HEADERS, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    },
    log,
  };
}

export function problemResult(
  details: ProblemDetails,
  headers: Readonly<Record<string, string>> = {},
  log: Readonly<Record<string, unknown>> = {},
): Outcome {
  return {
    statusCode: details.status,
    response: {
      statusCode: details.status,
      headers: { ...COMMON_HEADERS, 'content-type': PROBLEM_CONTENT_TYPE, ...headers },
      body: JSON.stringify(details),
    },
    // Problem types and field names are safe to log; details and messages never echo values either.
    log: { ...log, problem: details.type, fields: details.errors?.map((error) => error.field) },
  };
}

export function notFound(): Outcome {
  return problemResult(
    problem('notFound', 'No message with this id.', { errors: [{ field: 'id', message: 'not found' }] }),
  );
}

export function transitionResult(result: TransitionResult, okStatus: number, verb: string): Outcome {
  switch (result.kind) {
    case 'updated':
      return jsonResult(
        okStatus,
        messageView(result.state, { withHistory: false }),
        {},
        {
          message_id: result.state.id,
          message_status: result.state.status,
        },
      );
    case 'not-found':
      return notFound();
    case 'conflict':
    case 'past-deadline':
      return problemResult(
        problem('conflict', `The message is ${result.current.status}; it cannot be ${verb} now.`, {
          extensions: { current_status: result.current.status },
        }),
        {},
        { message_id: result.current.id, message_status: result.current.status },
      );
  }
}
