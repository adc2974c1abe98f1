import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, APIGatewayRequestAuthorizerEventV2, Context } from 'aws-lambda';
import { type LocalPart, listenAs } from '../localEnv.js';
import {
  fromHttpApiResult,
  gatewayError,
  type HttpAnswer,
  newRequestId,
  type RawHttpRequest,
  toAuthorizerEvent,
  toHttpApiEvent,
} from './apiGatewayEvent.js';
import { lambdaContext } from './lambdaContext.js';
import { HTTP_ROUTES, type HttpRoute, matchRoute } from './routes.js';

/** A Lambda handler as the front end invokes it (a middy `handler`, or a plain function in tests). */
export type LambdaFunction<TEvent> = (event: TEvent, context: Context) => unknown;

/** The state of one part of the local stack, as `GET /health` reports it. */
export type PartState = 'up' | 'down' | 'not built' | 'external';

export interface Readiness {
  readonly ready: boolean;
  readonly parts: Readonly<Record<string, PartState>>;
}

export interface HttpFrontEndOptions {
  readonly port: number;
  readonly host?: string;
  /** The part whose variable a taken port's PortInUseError names (the stack's API); unset, the listen's own error is kept. */
  readonly part?: LocalPart;
  /** The api function; requests answer 503 while it is not built. */
  readonly api: LambdaFunction<APIGatewayProxyEventV2> | undefined;
  /** The Lambda authorizer (payload 2.0, simple responses); guarded routes answer 503 while it is not built. */
  readonly authorizer: LambdaFunction<APIGatewayRequestAuthorizerEventV2> | undefined;
  /** Readiness of the whole stack, checked by `GET /health`; without it `/health` goes straight to the api. */
  readonly readiness?: () => Promise<Readiness>;
  readonly routes?: readonly HttpRoute[];
  /** API Gateway's payload quota: 10 MB. */
  readonly maxBodyBytes?: number;
  /** API Gateway's integration timeout (30 s for HTTP APIs); past it the client gets 503. */
  readonly integrationTimeoutMs?: number;
  /**
   * API Gateway's authorizer cache (`resultsCacheTtl`): how long an authorizer's answer for one
   * identity source (the Authorization header) is reused without invoking it; 0 turns it off.
   * @default AUTHORIZER_CACHE_TTL_MS
   */
  readonly authorizerCacheTtlMs?: number;
  readonly now?: () => Date;
  /** Where one-line notes about failing functions go (never request content). */
  readonly log?: (line: string) => void;
}

export interface HttpFrontEnd {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

const MAX_BODY_BYTES = 10 * 1024 * 1024;
/** Lambda's synchronous invocation payload quota. */
const MAX_EVENT_BYTES = 6 * 1024 * 1024;
const INTEGRATION_TIMEOUT_MS = 30_000;
const API_FUNCTION_TIMEOUT_MS = 29_000;
const AUTHORIZER_TIMEOUT_MS = 10_000;
/**
 * The deployed stack's authorizer cache TTL, `POSTDATE_DEFAULTS.authorizerCacheTtlSeconds` of
 * lib/postdateProps.ts (not imported here, it would load aws-cdk-lib into the local stack;
 * test/local/httpFrontEnd.test.ts holds them equal).
 */
export const AUTHORIZER_CACHE_TTL_MS = 30_000;
/** Answers kept at most (one per API key in use); the oldest go first. */
const AUTHORIZER_CACHE_ENTRIES = 10_000;

/**
 * The local stand-in for API Gateway (HTTP API): it matches the route, runs the Lambda authorizer
 * for guarded routes (a missing `Authorization` header is 401 without invoking it, a denial 403)
 * or reuses its cached answer for the same header within the TTL, as API Gateway does, invokes the
 * api function with a payload 2.0 event and maps its result back to HTTP. Requests are served
 * concurrently, each awaiting its own invocations.
 */
export async function startHttpFrontEnd(options: HttpFrontEndOptions): Promise<HttpFrontEnd> {
  const host = options.host ?? '127.0.0.1';
  const maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const log = options.log ?? (() => undefined);
  const gateway = createGateway(options, log);

  const server = createServer((request, response) => {
    const requestId = newRequestId();
    const declared = Number(request.headers['content-length'] ?? '0');
    if (declared > maxBodyBytes) {
      response.setHeader('connection', 'close');
      write(response, gatewayError(413, 'Request Entity Too Large', requestId));
      request.resume();
      return;
    }
    readBody(request, maxBodyBytes)
      .then((body) =>
        body === undefined
          ? gatewayError(413, 'Request Entity Too Large', requestId)
          : gateway(rawRequest(request, body), requestId),
      )
      .catch((error: unknown) => {
        // A client that went away, or a bug in the front end itself: never a crash.
        log(`front end: ${error instanceof Error ? error.message : String(error)}`);
        return gatewayError(500, 'Internal Server Error', requestId);
      })
      .then((answer) => write(response, answer));
  });

  const port = await listenAs(options.part, server, options.port, host);
  return {
    url: `http://${host}:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type SimpleResponse = { isAuthorized: boolean; context?: Record<string, unknown> };

/**
 * API Gateway's cache of authorizer answers: keyed by the identity source's value, each kept for
 * the TTL from when it was answered; allowances and denials alike, never a failure (a failure is
 * answered 500 and the next request invokes the authorizer again).
 */
function authorizerCache(ttlMs: number) {
  const answers = new Map<string, { readonly until: number; readonly answer: SimpleResponse }>();
  return {
    get(identity: string, nowMs: number): SimpleResponse | undefined {
      const cached = answers.get(identity);
      if (cached === undefined) return undefined;
      if (cached.until > nowMs) return cached.answer;
      answers.delete(identity);
      return undefined;
    },
    set(identity: string, answer: SimpleResponse, nowMs: number): void {
      if (ttlMs <= 0) return;
      answers.delete(identity);
      answers.set(identity, { until: nowMs + ttlMs, answer });
      const oldest = answers.keys().next().value;
      if (answers.size > AUTHORIZER_CACHE_ENTRIES && oldest !== undefined) answers.delete(oldest);
    },
  };
}

function createGateway(options: HttpFrontEndOptions, log: (line: string) => void) {
  const routes = options.routes ?? HTTP_ROUTES;
  const now = options.now ?? (() => new Date());
  const timeoutMs = options.integrationTimeoutMs ?? INTEGRATION_TIMEOUT_MS;
  const verdicts = authorizerCache(options.authorizerCacheTtlMs ?? AUTHORIZER_CACHE_TTL_MS);

  return async function answer(request: RawHttpRequest, requestId: string): Promise<HttpAnswer> {
    const path = request.url.split('?')[0] ?? '/';
    const match = matchRoute(request.method, path, routes);
    if (!match) return gatewayError(404, 'Not Found', requestId);
    const event = toHttpApiEvent(request, match, { requestId, now: now() });
    if (Buffer.byteLength(JSON.stringify(event)) > MAX_EVENT_BYTES) {
      return gatewayError(413, 'Request Entity Too Large', requestId);
    }

    if (match.route.routeKey === 'GET /health' && options.readiness) {
      const readiness = await options.readiness();
      if (!readiness.ready || !options.api) return healthAnswer(readiness, requestId);
    }

    if (match.route.authorized) {
      const authorization = event.headers.authorization;
      if (authorization === undefined || authorization.trim() === '') {
        return gatewayError(401, 'Unauthorized', requestId);
      }
      if (!options.authorizer) {
        log('authorizer handler not built yet: answering 503');
        return gatewayError(503, 'Service Unavailable', requestId);
      }
      let answer = verdicts.get(authorization, now().getTime());
      if (answer === undefined) {
        const verdict = await invoke(
          options.authorizer,
          toAuthorizerEvent(event, [authorization]),
          lambdaContext('postdate-authorizer', AUTHORIZER_TIMEOUT_MS),
          timeoutMs,
        );
        if (verdict.kind !== 'returned' || !isSimpleResponse(verdict.value)) {
          log(
            `authorizer ${verdict.kind === 'returned' ? 'returned an invalid response' : describe(verdict)}`,
          );
          return gatewayError(500, 'Internal Server Error', requestId);
        }
        answer = verdict.value;
        verdicts.set(authorization, answer, now().getTime());
      }
      if (!answer.isAuthorized) return gatewayError(403, 'Forbidden', requestId);
      Object.assign(event.requestContext, { authorizer: { lambda: answer.context ?? {} } });
    }

    if (!options.api) {
      log('api handler not built yet: answering 503');
      return gatewayError(503, 'Service Unavailable', requestId);
    }
    const outcome = await invoke(
      options.api,
      event,
      lambdaContext('postdate-api', API_FUNCTION_TIMEOUT_MS),
      timeoutMs,
    );
    if (outcome.kind === 'timeout') return gatewayError(503, 'Service Unavailable', requestId);
    if (outcome.kind === 'threw') {
      log(`api handler ${describe(outcome)}`);
      return gatewayError(500, 'Internal Server Error', requestId);
    }
    return fromHttpApiResult(outcome.value, requestId);
  };
}

type Invocation =
  | { readonly kind: 'returned'; readonly value: unknown }
  | { readonly kind: 'threw'; readonly error: unknown }
  | { readonly kind: 'timeout' };

async function invoke<TEvent>(
  fn: LambdaFunction<TEvent>,
  event: TEvent,
  context: Context,
  timeoutMs: number,
): Promise<Invocation> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Invocation>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutMs);
  });
  const run = (async (): Promise<Invocation> => {
    try {
      return { kind: 'returned', value: await fn(event, context) };
    } catch (error) {
      return { kind: 'threw', error };
    }
  })();
  try {
    return await Promise.race([run, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function describe(invocation: Invocation): string {
  if (invocation.kind === 'timeout') return 'timed out';
  if (invocation.kind === 'threw') {
    const error = invocation.error;
    return error instanceof Error ? `threw ${error.name}: ${error.message}` : 'threw a non-error';
  }
  return 'returned';
}

function isSimpleResponse(value: unknown): value is SimpleResponse {
  if (typeof value !== 'object' || value === null) return false;
  const { isAuthorized, context } = value as { isAuthorized?: unknown; context?: unknown };
  return (
    typeof isAuthorized === 'boolean' &&
    (context === undefined || (typeof context === 'object' && context !== null))
  );
}

/** `/health` answered by the front end: 503 problem+json naming what is not up, or 200 when ready. */
function healthAnswer(readiness: Readiness, requestId: string): HttpAnswer {
  const notUp = Object.entries(readiness.parts)
    .filter(([, state]) => state === 'down')
    .map(([part]) => part);
  const body = readiness.ready
    ? { status: 'ok', parts: readiness.parts }
    : {
        type: 'about:blank',
        title: 'Service Unavailable',
        status: 503,
        detail: `the local stack is not ready: ${notUp.join(', ') || 'starting'} not up`,
        parts: readiness.parts,
      };
  return {
    statusCode: readiness.ready ? 200 : 503,
    headers: {
      'content-type': readiness.ready ? 'application/json' : 'application/problem+json',
      'apigw-requestid': requestId,
    },
    cookies: [],
    body: Buffer.from(JSON.stringify(body)),
  };
}

function rawRequest(request: IncomingMessage, body: Buffer): RawHttpRequest {
  return {
    method: request.method ?? 'GET',
    url: request.url ?? '/',
    rawHeaders: request.rawHeaders,
    body,
    sourceIp: (request.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, ''),
    httpVersion: request.httpVersion,
  };
}

/** The whole body, or undefined once it passes the limit (the rest is drained, not kept). */
function readBody(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    request.on('end', () => resolve(size > limit ? undefined : Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function write(response: ServerResponse, answer: HttpAnswer): void {
  if (response.headersSent) return;
  for (const [name, value] of Object.entries(answer.headers)) response.setHeader(name, value);
  if (answer.cookies.length > 0) response.setHeader('set-cookie', [...answer.cookies]);
  response.statusCode = answer.statusCode;
  response.end(answer.body);
}
