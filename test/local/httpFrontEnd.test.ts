import { request as httpRequest } from 'node:http';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyEventV2WithLambdaAuthorizer,
  APIGatewayRequestAuthorizerEventV2,
  Context,
} from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { POSTDATE_DEFAULTS } from '../../lib/postdateProps.js';
import {
  AUTHORIZER_CACHE_TTL_MS,
  type HttpFrontEnd,
  type HttpFrontEndOptions,
  startHttpFrontEnd,
} from '../../local/http/httpFrontEnd.js';
import { matchRoute } from '../../local/http/routes.js';

/** The functions under test are plain functions: the Lambda contract is the thing being checked. */
function recordingApi(result: unknown = { statusCode: 200, body: '{}' }) {
  const events: APIGatewayProxyEventV2WithLambdaAuthorizer<Record<string, unknown>>[] = [];
  const contexts: Context[] = [];
  const api = async (event: APIGatewayProxyEventV2, context: Context) => {
    events.push(event as APIGatewayProxyEventV2WithLambdaAuthorizer<Record<string, unknown>>);
    contexts.push(context);
    return result;
  };
  return { api, events, contexts };
}

function allowingAuthorizer(context: Record<string, unknown> = { tenant: 'acme', keyId: 'k1' }) {
  const events: APIGatewayRequestAuthorizerEventV2[] = [];
  const authorizer = async (event: APIGatewayRequestAuthorizerEventV2) => {
    events.push(event);
    return { isAuthorized: event.identitySource[0] === 'Bearer good', context };
  };
  return { authorizer, events };
}

/** A request with repeated header lines (fetch would merge them before sending). */
function postWithRepeatedHeaders(url: string, headers: Record<string, string | string[]>, body: string) {
  return new Promise<number>((resolve, reject) => {
    const outgoing = httpRequest(url, { method: 'POST' }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    for (const [name, value] of Object.entries(headers)) outgoing.setHeader(name, value);
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

const running: HttpFrontEnd[] = [];
afterEach(async () => {
  while (running.length > 0) await running.pop()?.stop();
});

async function frontEnd(options: Partial<HttpFrontEndOptions>): Promise<HttpFrontEnd> {
  const started = await startHttpFrontEnd({
    port: 0,
    api: undefined,
    authorizer: undefined,
    ...options,
  });
  running.push(started);
  return started;
}

describe('the HTTP front end turns a request into an API Gateway HTTP API payload 2.0 event', () => {
  it('fills route, raw path and query, combined headers, cookies, parameters and request context', async () => {
    const { api, events, contexts } = recordingApi();
    const { authorizer } = allowingAuthorizer();
    const http = await frontEnd({ api, authorizer });
    const status = await postWithRepeatedHeaders(
      `${http.url}/v1/messages?status=sent&tag=a&tag=b%20c`,
      {
        Authorization: 'Bearer good',
        'X-Trace': ['a', 'b'],
        Cookie: ['one=1; two=2', 'three=3'],
        'Content-Type': 'application/json',
        'Idempotency-Key': 'order-42',
        'User-Agent': 'spec/1.0',
      },
      JSON.stringify({ subject: 'hé' }),
    );
    expect(status).toBe(200);

    const [event] = events;
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'POST /v1/messages',
      rawPath: '/v1/messages',
      rawQueryString: 'status=sent&tag=a&tag=b%20c',
      cookies: ['one=1', 'two=2', 'three=3'],
      queryStringParameters: { status: 'sent', tag: 'a,b c' },
      body: '{"subject":"hé"}',
      isBase64Encoded: false,
      requestContext: {
        accountId: '000000000000',
        apiId: 'local',
        routeKey: 'POST /v1/messages',
        stage: '$default',
        http: {
          method: 'POST',
          path: '/v1/messages',
          protocol: 'HTTP/1.1',
          sourceIp: '127.0.0.1',
          userAgent: 'spec/1.0',
        },
        authorizer: { lambda: { tenant: 'acme', keyId: 'k1' } },
      },
    });
    expect(event?.headers).toMatchObject({
      'x-trace': 'a,b',
      'idempotency-key': 'order-42',
      authorization: 'Bearer good',
    });
    expect(event?.headers).not.toHaveProperty('cookie');
    expect(event?.pathParameters).toBeUndefined();
    expect(event?.requestContext.time).toMatch(/^\d\d\/\w{3}\/\d{4}:\d\d:\d\d:\d\d \+0000$/);
    expect(event?.requestContext.requestId).toMatch(/^[A-Za-z0-9+/]{15}=$/);
    expect(contexts[0]?.getRemainingTimeInMillis()).toBeGreaterThan(0);
  });

  it('passes decoded path parameters for parameterised routes', async () => {
    const { api, events } = recordingApi();
    const { authorizer } = allowingAuthorizer();
    const http = await frontEnd({ api, authorizer });
    const auth = { authorization: 'Bearer good' };
    await fetch(`${http.url}/v1/messages/01JDEXAMPLE/retry`, { method: 'POST', headers: auth });
    await fetch(`${http.url}/v1/groups/campaign%3A42%3Astatus`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"version":3}',
    });
    expect(events.map((event) => [event.routeKey, event.pathParameters])).toEqual([
      ['POST /v1/messages/{id}/retry', { id: '01JDEXAMPLE' }],
      ['PUT /v1/groups/{key}', { key: 'campaign:42:status' }],
    ]);
    expect(events[1]?.rawPath).toBe('/v1/groups/campaign:42:status');
  });

  it('base64-encodes a body that is not UTF-8 text', async () => {
    const { api, events } = recordingApi();
    const { authorizer } = allowingAuthorizer();
    const http = await frontEnd({ api, authorizer });
    const bytes = Buffer.from([0xff, 0x00, 0xfe, 0x41]);
    await fetch(`${http.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer good', 'content-type': 'application/octet-stream' },
      body: bytes,
    });
    expect(events[0]).toMatchObject({ isBase64Encoded: true, body: bytes.toString('base64') });
  });

  it('prefers a literal path segment over a parameter when both routes match', () => {
    const routes = [
      { routeKey: 'GET /v1/messages/{id}', authorized: true },
      { routeKey: 'GET /v1/messages/export', authorized: true },
    ];
    expect(matchRoute('GET', '/v1/messages/export', routes)?.route.routeKey).toBe('GET /v1/messages/export');
    expect(matchRoute('GET', '/v1/messages/01J', routes)?.pathParameters).toEqual({ id: '01J' });
    expect(matchRoute('GET', '/v1/messages/', routes)).toBeUndefined();
  });
});

describe('the Lambda authorizer, as API Gateway runs it', () => {
  it('answers 401 without invoking anything when the Authorization header is missing', async () => {
    const { api, events } = recordingApi();
    const { authorizer, events: checks } = allowingAuthorizer();
    const http = await frontEnd({ api, authorizer });
    const response = await fetch(`${http.url}/v1/messages`);
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ message: 'Unauthorized' });
    expect(checks).toEqual([]);
    expect(events).toEqual([]);
  });

  it('answers 403 when the authorizer denies, and the api function never runs', async () => {
    const { api, events } = recordingApi();
    const { authorizer, events: checks } = allowingAuthorizer();
    const http = await frontEnd({ api, authorizer });
    const response = await fetch(`${http.url}/v1/messages/01J`, {
      headers: { authorization: 'Bearer bad' },
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ message: 'Forbidden' });
    expect(events).toEqual([]);
    expect(checks[0]).toMatchObject({
      version: '2.0',
      type: 'REQUEST',
      identitySource: ['Bearer bad'],
      routeKey: 'GET /v1/messages/{id}',
      routeArn: 'arn:aws:execute-api:us-east-1:000000000000:local/$default/GET/v1/messages/{id}',
      pathParameters: { id: '01J' },
    });
  });

  it('answers 500 when the authorizer throws or returns something that is not a simple response', async () => {
    const { api } = recordingApi();
    const lines: string[] = [];
    const throwing = await frontEnd({
      api,
      authorizer: async () => {
        throw new Error('boom');
      },
      log: (line) => lines.push(line),
    });
    const malformed = await frontEnd({ api, authorizer: async () => ({ allowed: true }) });
    for (const http of [throwing, malformed]) {
      const response = await fetch(`${http.url}/v1/messages`, {
        headers: { authorization: 'Bearer good' },
      });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ message: 'Internal Server Error' });
    }
    expect(lines).toEqual(['authorizer threw Error: boom']);
  });
});

describe('API Gateway’s authorizer cache (resultsCacheTtl, keyed by the identity source)', () => {
  /** A clock the test moves: the cache's TTL is read from the front end's `now`. */
  function movableClock(start = Date.parse('2026-12-02T10:00:00Z')) {
    let at = start;
    return { now: () => new Date(at), advance: (ms: number) => (at += ms) };
  }
  const get = (http: HttpFrontEnd, authorization: string) =>
    fetch(`${http.url}/v1/messages/01J`, { headers: { authorization } }).then(async (response) => ({
      status: response.status,
      body: await response.text(),
    }));

  it('answers a key seen within the TTL from the cache, with the cached context, without invoking the authorizer', async () => {
    const clock = movableClock();
    const { api, events } = recordingApi();
    const { authorizer, events: checks } = allowingAuthorizer({ tenant: 'acme', key_id: 'k1' });
    const http = await frontEnd({ api, authorizer, now: clock.now, authorizerCacheTtlMs: 30_000 });
    for (let request = 0; request < 5; request += 1) {
      expect((await get(http, 'Bearer good')).status).toBe(200);
      clock.advance(5_000);
    }
    expect(checks).toHaveLength(1);
    expect(events.map((event) => event.requestContext.authorizer.lambda)).toEqual(
      Array.from({ length: 5 }, () => ({ tenant: 'acme', key_id: 'k1' })),
    );
  });

  it('invokes the authorizer again once the TTL has passed', async () => {
    const clock = movableClock();
    const { api } = recordingApi();
    const { authorizer, events: checks } = allowingAuthorizer();
    const http = await frontEnd({ api, authorizer, now: clock.now, authorizerCacheTtlMs: 30_000 });
    await get(http, 'Bearer good');
    clock.advance(29_999);
    await get(http, 'Bearer good');
    expect(checks).toHaveLength(1);
    clock.advance(1);
    await get(http, 'Bearer good');
    expect(checks).toHaveLength(2);
  });

  it('keys the cache by the Authorization header: another key is its own invocation, and a denial is cached too', async () => {
    const clock = movableClock();
    const { api, events } = recordingApi();
    const { authorizer, events: checks } = allowingAuthorizer();
    const http = await frontEnd({ api, authorizer, now: clock.now, authorizerCacheTtlMs: 30_000 });
    const statuses = [];
    for (const key of ['Bearer good', 'Bearer bad', 'Bearer good', 'Bearer bad']) {
      statuses.push((await get(http, key)).status);
    }
    expect(statuses).toEqual([200, 403, 200, 403]);
    expect(checks.map((check) => check.identitySource)).toEqual([['Bearer good'], ['Bearer bad']]);
    expect(events).toHaveLength(2);
  });

  it('caches nothing when the authorizer fails, and nothing at all with a TTL of 0', async () => {
    let calls = 0;
    const failing = await frontEnd({
      api: recordingApi().api,
      authorizer: async () => {
        calls += 1;
        throw new Error('boom');
      },
      authorizerCacheTtlMs: 30_000,
    });
    expect((await get(failing, 'Bearer good')).status).toBe(500);
    expect((await get(failing, 'Bearer good')).status).toBe(500);
    expect(calls).toBe(2);

    const { authorizer, events: checks } = allowingAuthorizer();
    const uncached = await frontEnd({ api: recordingApi().api, authorizer, authorizerCacheTtlMs: 0 });
    await get(uncached, 'Bearer good');
    await get(uncached, 'Bearer good');
    expect(checks).toHaveLength(2);
  });

  it('uses the deployed default TTL (lib/postdateProps.ts) unless told otherwise', () => {
    expect(AUTHORIZER_CACHE_TTL_MS).toBe(POSTDATE_DEFAULTS.authorizerCacheTtlSeconds * 1000);
  });
});

describe('the function result, mapped back to HTTP', () => {
  it('sends status, headers, one Set-Cookie per cookie and a base64 body decoded', async () => {
    const { api } = recordingApi({
      statusCode: 202,
      headers: { 'Content-Type': 'image/png', 'Idempotent-Replayed': true },
      cookies: ['a=1; Path=/', 'b=2'],
      body: Buffer.from([1, 2, 3]).toString('base64'),
      isBase64Encoded: true,
    });
    const http = await frontEnd({ api, authorizer: allowingAuthorizer().authorizer });
    const response = await fetch(`${http.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer good' },
    });
    expect(response.status).toBe(202);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    expect(response.headers.getSetCookie()).toEqual(['a=1; Path=/', 'b=2']);
    expect(Buffer.from(await response.arrayBuffer())).toEqual(Buffer.from([1, 2, 3]));
  });

  it('treats a result without statusCode as a 200 JSON body', async () => {
    const { api } = recordingApi({ hello: 'world' });
    const http = await frontEnd({ api, authorizer: allowingAuthorizer().authorizer });
    const response = await fetch(`${http.url}/openapi.json`, {
      headers: { authorization: 'Bearer good' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({ hello: 'world' });
  });

  it('answers 500 when the function throws or returns an invalid status code', async () => {
    const lines: string[] = [];
    const throwing = await frontEnd({
      api: async () => {
        throw new TypeError('nope');
      },
      authorizer: allowingAuthorizer().authorizer,
      log: (line) => lines.push(line),
    });
    const invalid = await frontEnd({
      api: recordingApi({ statusCode: 99 }).api,
      authorizer: allowingAuthorizer().authorizer,
    });
    for (const http of [throwing, invalid]) {
      const response = await fetch(`${http.url}/v1/messages`, {
        headers: { authorization: 'Bearer good' },
      });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ message: 'Internal Server Error' });
    }
    expect(lines).toEqual(['api handler threw TypeError: nope']);
  });

  it('answers 503 when the function outlives the integration timeout', async () => {
    const http = await frontEnd({
      api: () => new Promise(() => undefined),
      authorizer: allowingAuthorizer().authorizer,
      integrationTimeoutMs: 50,
    });
    const response = await fetch(`${http.url}/v1/messages`, {
      headers: { authorization: 'Bearer good' },
    });
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ message: 'Service Unavailable' });
  });
});

describe('what API Gateway answers by itself', () => {
  it('answers 404 for an unknown path or a method the path does not have', async () => {
    const { api, events } = recordingApi();
    const http = await frontEnd({ api, authorizer: allowingAuthorizer().authorizer });
    for (const [method, path] of [
      ['GET', '/v2/messages'],
      ['PATCH', '/v1/messages'],
    ] as const) {
      const response = await fetch(`${http.url}${path}`, {
        method,
        headers: { authorization: 'Bearer good' },
      });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ message: 'Not Found' });
    }
    expect(events).toEqual([]);
  });

  it('answers 413 for a body over the payload limit, declared or streamed', async () => {
    const { api, events } = recordingApi();
    const http = await frontEnd({
      api,
      authorizer: allowingAuthorizer().authorizer,
      maxBodyBytes: 1024,
    });
    const declared = await fetch(`${http.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer good' },
      body: 'x'.repeat(2048),
    });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ message: 'Request Entity Too Large' });
    const streamed = await fetch(`${http.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer good' },
      body: new Blob(['y'.repeat(2048)]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(events).toEqual([]);
  });

  it('answers 503 while the api or authorizer function is not built', async () => {
    const lines: string[] = [];
    const noAuthorizer = await frontEnd({ api: recordingApi().api, log: (l) => lines.push(l) });
    const noApi = await frontEnd({ authorizer: allowingAuthorizer().authorizer });
    for (const http of [noAuthorizer, noApi]) {
      const response = await fetch(`${http.url}/v1/messages`, {
        headers: { authorization: 'Bearer good' },
      });
      expect(response.status).toBe(503);
    }
    expect(lines).toEqual(['authorizer handler not built yet: answering 503']);
  });
});

describe('GET /health in the local stack (readiness)', () => {
  it('answers 503 naming the parts that are down, without auth and without calling the api', async () => {
    const { api, events } = recordingApi();
    const http = await frontEnd({
      api,
      readiness: async () => ({ ready: false, parts: { dynamodb: 'up', sqs: 'down', smtp: 'up' } }),
    });
    const response = await fetch(`${http.url}/health`);
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(await response.json()).toMatchObject({
      status: 503,
      detail: 'the local stack is not ready: sqs not up',
      parts: { sqs: 'down' },
    });
    expect(events).toEqual([]);
  });

  it('hands a ready stack’s health check to the api function, skipping the authorizer', async () => {
    const { api, events } = recordingApi({ statusCode: 200, body: '{"status":"ok"}' });
    const { authorizer, events: checks } = allowingAuthorizer();
    const http = await frontEnd({
      api,
      authorizer,
      readiness: async () => ({ ready: true, parts: { dynamodb: 'up' } }),
    });
    const response = await fetch(`${http.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
    expect(events.map((event) => event.routeKey)).toEqual(['GET /health']);
    expect(checks).toEqual([]);
  });

  it('answers a ready stack’s health check itself while the api function is not built', async () => {
    const http = await frontEnd({
      readiness: async () => ({ ready: true, parts: { dynamodb: 'up', api: 'not built' } }),
    });
    const response = await fetch(`${http.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: 'ok',
      parts: { dynamodb: 'up', api: 'not built' },
    });
  });
});
