/**
 * One route of the HTTP API, in and out: what the api handler receives (API Gateway HTTP API payload
 * 2.0 behind the Lambda authorizer; the tenant comes only from the authorizer's context), what a
 * route is (a factory over the dependencies it needs, answering one matched request), and what it
 * answers (the HTTP response and the safe attributes for the request's log line). Every error is
 * `application/problem+json` (core/problem.ts); every answer is `cache-control: no-store`. The
 * router (createApiHandler.ts) resolves the route, checks the tenant, logs the answer and turns a
 * thrown error into a problem.
 */

import { isThrottlingError, isTransientError } from '@smithy/core/retry';
import type {
  APIGatewayProxyEventV2WithLambdaAuthorizer,
  APIGatewayProxyStructuredResultV2,
} from 'aws-lambda';
import type { AuthorizerContext } from '../core/authorizerContext.js';
import type { Config } from '../core/config.js';
import { isTransient } from '../core/postdateError.js';
import { PROBLEM_CONTENT_TYPE, type ProblemDetails, problem } from '../core/problem.js';
import { bodySizeProblem, bodyTooLarge, idempotencyKeyOf, LIMITS } from '../core/requestLimits.js';
import type { TemplateRenderer } from '../core/templateRenderer.js';
import { SIDE_TENANT_PATTERN } from '../core/testSide.js';
import type { ApiStore, TransitionResult } from '../ports/ApiStore.js';
import type { AttachmentStore } from '../ports/AttachmentStore.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { TemplateStore } from '../ports/TemplateStore.js';
import { messageView } from '../store/messageView.js';
import type { WebhookRouteDependencies } from './routes/webhooks.js';

export type { AuthorizerContext } from '../core/authorizerContext.js';

/** The request, with what the Lambda authorizer put in `requestContext.authorizer.lambda`. */
export type ApiEvent = APIGatewayProxyEventV2WithLambdaAuthorizer<AuthorizerContext>;
export type ApiResult = APIGatewayProxyStructuredResultV2;

/** The tenant id from the authorizer's context (a test key's is a test side), or null when absent or malformed. */
export function tenantOf(event: ApiEvent): string | null {
  const context: Partial<AuthorizerContext> | undefined = event.requestContext?.authorizer?.lambda;
  const tenant = context?.tenant;
  return typeof tenant === 'string' && SIDE_TENANT_PATTERN.test(tenant) ? tenant : null;
}

/** The settings the routes read. */
export type ApiConfig = Pick<
  Config,
  'allowedFrom' | 'defaultFrom' | 'maxAttempts' | 'maxHorizonDays' | 'retentionDays'
> &
  Partial<Pick<Config, 'inlineAttachmentMaxKb' | 'maxMessageMb'>>;

export interface RouteDependencies {
  readonly store: ApiStore;
  /** Stored templates (DESIGN §10), and their renderer with its compiled-version cache. */
  readonly templates: TemplateStore;
  readonly renderer: TemplateRenderer;
  readonly config: ApiConfig;
  readonly now: () => Date;
  readonly random: () => number;
  /** Waits between enqueue attempts after a contended transaction. */
  readonly sleep: (milliseconds: number) => Promise<void>;
  readonly webhooks?: WebhookRouteDependencies | undefined;
  /** The send queue, for the api's own copy of an immediate message (api/routes/enqueue.ts). */
  readonly immediateCopies?: DispatchQueue | undefined;
  /** The attachments' bucket (DESIGN §13); without it an enqueue with attachments is refused. */
  readonly attachments?: AttachmentStore | undefined;
}

export interface RouteRequest {
  /** The authorizer's tenant ('' on a public route). */
  readonly tenant: string;
  /** The path parameters of the matched route, decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly event: ApiEvent;
}

export type RouteHandler = (request: RouteRequest) => Promise<Outcome>;

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

/**
 * What a request (or a batch item) answers when its store calls threw: 503 `unavailable` when the
 * same request may well succeed in a moment, else a 500 that says nothing more. A retry is
 * worthwhile when Postdate's own store says so (too many lost races on one key) or when AWS does,
 * once the SDK's own retries are spent: throttling (a hot partition's
 * ProvisionedThroughputExceeded, ThrottlingException), a timeout, a 5xx, a dropped connection —
 * @smithy/core's classification, the one the SDK retries by. An enqueue retried with the same key
 * is safe whether or not the failed write landed (a replay answers it).
 */
export function failureProblem(error: unknown, retry: 'request' | 'batch'): ProblemDetails {
  const again = retry === 'batch' ? 'retry the batch shortly' : 'retry shortly';
  if (isTransient(error)) return problem('unavailable', `Too much contention on this key; ${again}.`);
  if (awsSaysTryAgain(error))
    return problem('unavailable', `The table is busy or briefly unreachable; ${again}.`);
  return problem(
    'internal',
    retry === 'batch'
      ? 'Something went wrong on our side; retry the batch.'
      : 'Something went wrong on our side.',
  );
}

function awsSaysTryAgain(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const sdkError = error as Parameters<typeof isThrottlingError>[0];
  return isThrottlingError(sdkError) || isTransientError(sdkError);
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

// Reading the request: headers, the JSON body, the Idempotency-Key.

/** Header lookup that ignores case (payload 2.0 lower-cases names; a test or proxy may not). */
export function headerValue(
  headers: Readonly<Record<string, string | undefined>> | undefined,
  name: string,
): string | undefined {
  if (!headers) return undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

export type BodyRead =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly problem: ProblemDetails };

/**
 * Reads a JSON request body: `application/json` (a `charset` other than UTF-8 is refused), at most
 * `maxBytes` (256 KiB unless a route says otherwise) after base64 decoding, valid UTF-8, valid JSON.
 * Each failure is a problem naming the field.
 */
export function readJsonBody(
  event: {
    readonly headers?: Readonly<Record<string, string | undefined>> | undefined;
    readonly body?: string | undefined;
    readonly isBase64Encoded?: boolean | undefined;
  },
  options: {
    /** The most bytes the body may have (the batch enqueue's is larger). @default 256 KiB */
    readonly maxBytes?: number;
    /**
     * Bytes of inline attachments' base64 `content` allowed beyond `maxBytes` (the enqueue, DESIGN
     * §13): the rest of the body, as JSON, is still held to `maxBytes`.
     */
    readonly attachmentAllowance?: number;
  } = {},
): BodyRead {
  const maxBytes = options.maxBytes ?? LIMITS.maxBodyBytes;
  const allowance = options.attachmentAllowance ?? 0;
  const contentType = headerValue(event.headers, 'content-type');
  const mediaProblem = checkContentType(contentType);
  if (mediaProblem) return { ok: false, problem: mediaProblem };
  const raw = event.body ?? '';
  // An enqueue body (given an allowance, even 0) is judged by its JSON (bodySizeProblem, then its
  // inline files' decoded total), not by its bytes on the wire, as a batch item is (DESIGN §3a): a
  // client's escapes (`\u00e9`: six bytes for two) multiply the JSON's bytes by six at most, the
  // base64's (`\/`) by two, so this ceiling only keeps what is far over from being parsed.
  const ceiling = options.attachmentAllowance === undefined ? maxBytes : maxBytes * 6 + allowance * 2;
  // Base64 is 4/3 of the bytes: a body far over the limit is refused before decoding it.
  if (raw.length > ceiling * 2) return { ok: false, problem: bodyTooLarge(maxBytes) };
  const bytes = event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
  if (bytes.length > ceiling) return { ok: false, problem: bodyTooLarge(maxBytes) };
  if (bytes.length === 0) {
    return {
      ok: false,
      problem: problem('invalidJson', 'The body is empty; send a JSON object.', {
        errors: [{ field: 'body', message: 'is required' }],
      }),
    };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return {
      ok: false,
      problem: problem('invalidJson', 'The body is not valid UTF-8.', {
        errors: [{ field: 'body', message: 'must be UTF-8 encoded JSON' }],
      }),
    };
  }
  try {
    const value: unknown = JSON.parse(text);
    const oversized = bodySizeProblem(value, maxBytes);
    if (oversized) return { ok: false, problem: oversized };
    return { ok: true, value };
  } catch {
    return {
      ok: false,
      problem: problem('invalidJson', 'The body could not be parsed as JSON.', {
        errors: [{ field: 'body', message: 'must be valid JSON' }],
      }),
    };
  }
}

function checkContentType(contentType: string | undefined): ProblemDetails | null {
  const fail = (detail: string) =>
    problem('unsupportedMediaType', detail, {
      errors: [{ field: 'Content-Type', message: 'must be application/json' }],
    });
  if (contentType === undefined || contentType.trim() === '')
    return fail('The Content-Type header is missing.');
  const [type = '', ...parameters] = contentType.split(';').map((part) => part.trim().toLowerCase());
  if (type !== 'application/json') return fail('The body must be application/json.');
  for (const parameter of parameters) {
    const [name, value = ''] = parameter.split('=').map((part) => part.trim());
    if (name === 'charset' && value.replaceAll('"', '') !== 'utf-8' && value.replaceAll('"', '') !== 'utf8') {
      return fail('Only the UTF-8 charset is accepted.');
    }
  }
  return null;
}

export type KeyRead =
  | { readonly ok: true; readonly key: string }
  | { readonly ok: false; readonly problem: ProblemDetails };

/** Reads the `Idempotency-Key` header: its key by core/requestLimits.ts `idempotencyKeyOf`, or the 400. */
export function readIdempotencyKey(raw: string | undefined): KeyRead {
  const field = 'Idempotency-Key';
  if (raw === undefined || raw === '') {
    return {
      ok: false,
      problem: problem('missingIdempotencyKey', 'POST /v1/messages needs an Idempotency-Key header.', {
        errors: [{ field, message: 'is required' }],
      }),
    };
  }
  const key = idempotencyKeyOf(raw);
  if (key === null) {
    return {
      ok: false,
      problem: problem(
        'invalidIdempotencyKey',
        'The Idempotency-Key must be 1–255 printable ASCII characters.',
        {
          errors: [{ field, message: 'must be 1–255 printable ASCII characters' }],
        },
      ),
    };
  }
  return { ok: true, key };
}
