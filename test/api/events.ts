import type { APIGatewayRequestAuthorizerEventV2 } from 'aws-lambda';
import type { ApiEvent } from '../../lambdas/api/createApiHandler.js';

/** Factories for API Gateway HTTP API payload 2.0 events, as the local front end builds them. */

export interface RequestOptions {
  readonly method: string;
  /** Decoded path, e.g. `/v1/messages/01J…`. */
  readonly path: string;
  /** `METHOD /template` when API Gateway matched an explicit route; `$default` otherwise. */
  readonly routeKey?: string;
  readonly pathParameters?: Record<string, string>;
  readonly query?: Record<string, string>;
  readonly headers?: Record<string, string>;
  /** A JS value is sent as JSON; a string as is. */
  readonly body?: unknown;
  readonly base64?: boolean;
  /** The authorizer's tenant; null means no authorizer context at all. */
  readonly tenant?: string | null;
}

export function apiEvent(options: RequestOptions): ApiEvent {
  const tenant = options.tenant === undefined ? 'acme' : options.tenant;
  const headers: Record<string, string> = { ...lowerCaseKeys(options.headers ?? {}) };
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  if (body !== undefined && options.base64) body = Buffer.from(body, 'utf8').toString('base64');
  const event = {
    version: '2.0',
    routeKey: options.routeKey ?? '$default',
    rawPath: options.path,
    rawQueryString: new URLSearchParams(options.query ?? {}).toString(),
    headers,
    queryStringParameters: options.query,
    pathParameters: options.pathParameters,
    body,
    isBase64Encoded: options.base64 ?? false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'test',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      http: {
        method: options.method,
        path: options.path,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'vitest',
      },
      requestId: 'test-request',
      routeKey: options.routeKey ?? '$default',
      stage: '$default',
      time: '29/Nov/2026:18:00:00 +0000',
      timeEpoch: 0,
      ...(tenant === null ? {} : { authorizer: { lambda: { tenant, key_id: 'key_test' } } }),
    },
  };
  return event as ApiEvent;
}

/** A POST /v1/messages with an Idempotency-Key. */
export function enqueueEvent(
  body: unknown,
  options: {
    key?: string | null;
    tenant?: string | null;
    headers?: Record<string, string>;
    base64?: boolean;
  } = {},
): ApiEvent {
  const key = options.key === undefined ? 'key-1' : options.key;
  return apiEvent({
    method: 'POST',
    path: '/v1/messages',
    routeKey: 'POST /v1/messages',
    body,
    tenant: options.tenant,
    base64: options.base64,
    headers: { ...(key === null ? {} : { 'idempotency-key': key }), ...options.headers },
  });
}

export function getEvent(id: string, tenant = 'acme'): ApiEvent {
  return apiEvent({
    method: 'GET',
    path: `/v1/messages/${id}`,
    routeKey: 'GET /v1/messages/{id}',
    pathParameters: { id },
    tenant,
  });
}

export function authorizerEvent(headers: Record<string, string>): APIGatewayRequestAuthorizerEventV2 {
  return {
    version: '2.0',
    type: 'REQUEST',
    routeArn: 'arn:aws:execute-api:us-east-1:000000000000:test/$default/GET/v1/messages',
    identitySource: headers.authorization ? [headers.authorization] : [],
    routeKey: 'GET /v1/messages',
    rawPath: '/v1/messages',
    rawQueryString: '',
    cookies: [],
    headers,
    requestContext: apiEvent({ method: 'GET', path: '/v1/messages', tenant: null }).requestContext,
  } as APIGatewayRequestAuthorizerEventV2;
}

/** A valid enqueue body; override any field. */
export function validBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    to: ['Ada Lovelace <ada@example.com>'],
    from: 'Ops <ops@example.com>',
    subject: 'Campaign approved',
    text: 'Your campaign was approved.',
    html: '<p>Your campaign was approved.</p>',
    headers: { 'X-Campaign': '42' },
    tags: { kind: 'campaign-approved' },
    metadata: { campaign_id: '42' },
    ...overrides,
  };
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}
