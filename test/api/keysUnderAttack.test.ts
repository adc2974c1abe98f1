/**
 * API keys as a customer's security reviewer attacks them (DESIGN §3, §6, §14; decision 0249), over
 * real HTTP: the local API Gateway (local/http/httpFrontEnd.ts) in front of the real authorizer and
 * api entries (lambdas/authorizer/handler.ts, lambdas/api/handler.ts, with their Powertools loggers)
 * on DynamoDB Local and the SQS emulator, and the real `postdate keys` bin as a child process.
 * Covers lambdas/authorizer/createAuthorizerHandler.ts, lambdas/keys/apiKeys.ts,
 * lambdas/adapters/lambdaEntry.ts and the router's tenant check in lambdas/api/createApiHandler.ts.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayRequestAuthorizerEventV2, Context } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { apiEntry } from '../../lambdas/api/handler.js';
import { createAuthorizerHandler } from '../../lambdas/authorizer/createAuthorizerHandler.js';
import { authorizerEntry } from '../../lambdas/authorizer/handler.js';
import { API_ROUTES } from '../../lambdas/core/apiRoutes.js';
import { createApiKey, lookupApiKey, revokeApiKey } from '../../lambdas/keys/apiKeys.js';
import { type HttpFrontEnd, startHttpFrontEnd } from '../../local/http/httpFrontEnd.js';
import { lambdaContext } from '../../local/http/lambdaContext.js';
import { runBin } from '../cli/cliFixtures.js';
import { documentClient, emulatorEnv, freshQueues, freshTable } from '../support/awsLocal.js';
import { testClock } from './apiHarness.js';
import { validBody } from './events.js';

const documents = documentClient();
const running: HttpFrontEnd[] = [];
afterAll(async () => {
  await Promise.all(running.map((frontEnd) => frontEnd.stop()));
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

/** The functions' environment, as the local stack gives it: DynamoDB Local and the SQS emulator. */
async function functionEnvironment(tableName: string): Promise<Record<string, string>> {
  const { urls } = await freshQueues();
  return {
    ...emulatorEnv(),
    POSTDATE_LOCAL: 'true',
    POSTDATE_TABLE_NAME: tableName,
    POSTDATE_SEND_QUEUE_URL: urls.send,
    POSTDATE_WEBHOOK_QUEUE_URL: urls.relayFailures,
    POSTDATE_ALLOWED_FROM: '*@example.com',
    // As verbose as the functions can be made to log.
    POWERTOOLS_LOG_LEVEL: 'DEBUG',
  };
}

/** Everything the process writes to stdout and stderr while `run` runs (the Powertools loggers' lines). */
async function captureOutput<T>(run: () => Promise<T>): Promise<{ result: T; written: string }> {
  const chunks: string[] = [];
  const capture = (chunk: unknown) => {
    chunks.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  try {
    return { result: await run(), written: chunks.join('') };
  } finally {
    vi.restoreAllMocks();
  }
}

/** The real entries behind the local API Gateway; `apiRuns` counts the api function's invocations. */
async function stackFor(env: Record<string, string>, frontEnd: { authorizerCacheTtlMs?: number } = {}) {
  const authorize = authorizerEntry(env);
  const api = apiEntry(env);
  const lines: string[] = [];
  let apiRuns = 0;
  const http = await startHttpFrontEnd({
    port: 0,
    api: (event: APIGatewayProxyEventV2, context: Context) => {
      apiRuns += 1;
      return api(event as Parameters<typeof api>[0], context);
    },
    authorizer: (event: APIGatewayRequestAuthorizerEventV2, context: Context) => authorize(event, context),
    log: (line) => lines.push(line),
    ...frontEnd,
  });
  running.push(http);
  return { http, lines, apiRuns: () => apiRuns, authorize };
}

async function send(
  http: HttpFrontEnd,
  method: string,
  path: string,
  options: { authorization?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const response = await fetch(`${http.url}${path}`, {
    method,
    headers: {
      ...(options.authorization === undefined ? {} : { authorization: options.authorization }),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  return { status: response.status, type: response.headers.get('content-type'), text };
}

/** A route's path with every parameter filled in. */
function concretePath(template: string): string {
  return template.replace(/\{(\w+)\}/g, (_whole, name: string) => `some-${name}`);
}

describe('every route but GET /health and GET /openapi.json asks a key', () => {
  it('answers each route without a key 401 before any function runs, and the two public ones 200', async () => {
    const { tableName } = await freshTable('keys-routes');
    const env = await functionEnvironment(tableName);
    const { result: answers } = await captureOutput(async () => {
      const { http, apiRuns } = await stackFor(env);
      const seen: string[] = [];
      for (const route of API_ROUTES) {
        const before = apiRuns();
        const answer = await send(http, route.method, concretePath(route.path));
        seen.push(`${route.method} ${route.path} ${answer.status} ${apiRuns() - before}`);
      }
      return seen;
    });
    expect(answers).toEqual(
      API_ROUTES.map((route) => `${route.method} ${route.path} ${route.authorized ? '401 0' : '200 1'}`),
    );
    // The list is the route table itself: the two public routes and nothing else.
    expect(API_ROUTES.filter((route) => !route.authorized).map((route) => route.path)).toEqual([
      '/health',
      '/openapi.json',
    ]);
  });
});

describe('a malformed Authorization header', () => {
  it('is 401 or 403 as API Gateway answers it, never a 500, the api never runs, and no log line holds the key', async () => {
    const { tableName } = await freshTable('keys-headers');
    const env = await functionEnvironment(tableName);
    const { secret } = await createApiKey(documents, tableName, { tenant: 'acme', now: new Date() });
    const cases: [string, string | undefined, number][] = [
      ['no header', undefined, 401],
      ['an empty header', '', 401],
      ['Bearer alone', 'Bearer', 403],
      ['Bearer and a space', 'Bearer ', 403],
      ['the key without a scheme', secret, 403],
      ['another scheme', `Basic ${Buffer.from(`${secret}:`).toString('base64')}`, 403],
      ['Token scheme', `Token ${secret}`, 403],
      ['Bearer with a tab', `Bearer\t${secret}`, 403],
      ['two keys', `Bearer ${secret} ${secret}`, 403],
      ['two headers joined', `Bearer ${secret},Bearer ${secret}`, 403],
      ['the key with a character more', `Bearer ${secret}x`, 403],
      ['the key cut short', `Bearer ${secret.slice(0, -1)}`, 403],
      ['a very long header', `Bearer pd_${'a'.repeat(8_000)}`, 403],
      ['a non-ASCII character after the key', `Bearer ${secret}\u00e9`, 403],
      // What RFC 6750 §2.1 and RFC 9110 §11.1 allow: the scheme in any case, 1*SP before the token.
      ['lower-case bearer', `bearer ${secret}`, 200],
      ['upper-case BEARER', `BEARER ${secret}`, 200],
      ['two spaces', `Bearer  ${secret}`, 200],
    ];
    const { result, written } = await captureOutput(async () => {
      const { http, apiRuns, lines } = await stackFor(env, { authorizerCacheTtlMs: 0 });
      const seen: string[] = [];
      for (const [name, authorization, expected] of cases) {
        const before = apiRuns();
        const answer = await send(
          http,
          'GET',
          '/v1/messages',
          authorization === undefined ? {} : { authorization },
        );
        seen.push(`${name}: ${answer.status} api ${apiRuns() - before}`);
        if (expected !== 200) expect(answer.text, name).not.toContain(secret.slice(3, 12));
      }
      return { seen, lines };
    });
    expect(result.seen).toEqual(
      cases.map(([name, , expected]) => `${name}: ${expected} api ${expected === 200 ? 1 : 0}`),
    );
    // The functions did log (the authorizer's denials, the api's request lines), and never the key.
    expect(written).toContain('"denied"');
    expect(written).toContain('"request"');
    const logged = `${written}\n${result.lines.join('\n')}`;
    expect(logged).not.toContain(secret);
    expect(logged).not.toContain(secret.slice(3, 12));
  });

  it('with a newline, a CR or a NUL in it (past any HTTP parser) is denied by the authorizer, never thrown', async () => {
    const { tableName } = await freshTable('keys-newline');
    const env = await functionEnvironment(tableName);
    const { secret } = await createApiKey(documents, tableName, { tenant: 'acme', now: new Date() });
    const authorize = authorizerEntry(env);
    const { result, written } = await captureOutput(async () => {
      const answers: boolean[] = [];
      for (const authorization of [
        `Bearer ${secret}\n`,
        `Bearer ${secret}\r\nX-Tenant: globex`,
        `Bearer \n${secret}`,
        `Bearer ${secret}\u0000`,
        `Bearer ${secret.slice(0, 10)}\n${secret.slice(10)}`,
      ]) {
        const event = {
          version: '2.0',
          type: 'REQUEST',
          routeArn: 'arn:aws:execute-api:us-east-1:000000000000:local/$default/GET/v1/messages',
          identitySource: [authorization],
          routeKey: 'GET /v1/messages',
          rawPath: '/v1/messages',
          rawQueryString: '',
          headers: { authorization },
          requestContext: {},
        } as unknown as APIGatewayRequestAuthorizerEventV2;
        answers.push((await authorize(event, lambdaContext('postdate-authorizer', 5_000))).isAuthorized);
      }
      return answers;
    });
    expect(result).toEqual([false, false, false, false, false]);
    expect(written).toContain('"denied"');
    expect(written).not.toContain(secret.slice(3, 12));
  });

  it('is never logged even with POWERTOOLS_LOGGER_LOG_EVENT=true set on the functions (an operator debugging)', async () => {
    const { tableName } = await freshTable('keys-log-event');
    const env = await functionEnvironment(tableName);
    const { secret } = await createApiKey(documents, tableName, { tenant: 'acme', now: new Date() });
    // Powertools reads it from the process environment, whatever the function's own says.
    vi.stubEnv('POWERTOOLS_LOGGER_LOG_EVENT', 'true');
    const { result, written } = await captureOutput(async () => {
      const { http } = await stackFor(env, { authorizerCacheTtlMs: 0 });
      return [
        (await send(http, 'GET', '/v1/messages', { authorization: `Bearer ${secret}` })).status,
        (await send(http, 'GET', '/v1/messages', { authorization: `Bearer ${secret}x` })).status,
      ];
    });
    expect(result).toEqual([200, 403]);
    expect(written).toContain('"request"');
    expect(written).not.toContain(secret.slice(3, 12));
  });
});

describe('a revoked key', () => {
  /**
   * The authorizer as its entry wires it (createAuthorizerHandler's defaults over lookupApiKey),
   * behind the local API Gateway with the deployed cache TTL, on one clock the test moves.
   */
  async function revocationStack(tableName: string, authorizerCacheTtlMs?: number) {
    const clock = testClock();
    const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
    const authorizer = createAuthorizerHandler({
      lookup: (secret) => lookupApiKey(documents, tableName, secret),
      now: clock.now,
      logger: silent,
    });
    const http = await startHttpFrontEnd({
      port: 0,
      api: async () => ({ statusCode: 200, body: '{}' }),
      authorizer,
      now: clock.now,
      ...(authorizerCacheTtlMs === undefined ? {} : { authorizerCacheTtlMs }),
    });
    running.push(http);
    const status = async (authorization: string) =>
      (await send(http, 'GET', '/v1/messages', { authorization })).status;
    return { clock, status };
  }

  it('stops working within the gateway cache TTL (30 s), whichever way the header spells it', async () => {
    const { tableName } = await freshTable('keys-revoke');
    const { keyId, secret } = await createApiKey(documents, tableName, { tenant: 'acme', now: new Date() });
    const { clock, status } = await revocationStack(tableName);
    const spellings = [`Bearer ${secret}`, `bearer ${secret}`, `Bearer  ${secret}`, `BEARER ${secret}`];
    expect(await status(spellings[0] ?? '')).toBe(200);
    await revokeApiKey(documents, tableName, keyId);
    // Whoever holds the key presents it again, in another spelling, just before the cached answer ends.
    clock.advance(29_000);
    const within = await status(spellings[1] ?? '');
    expect([200, 403]).toContain(within);
    // Past 30 s from the revocation no spelling works any more: a cached allowance may last 30 s, no more.
    clock.advance(1_001);
    const answers: string[] = [];
    for (const spelling of spellings) answers.push(`${spelling.split(' ')[0]}: ${await status(spelling)}`);
    expect(answers).toEqual(spellings.map((spelling) => `${spelling.split(' ')[0]}: 403`));
  });

  it('stops working at once when the gateway cache is off (authorizerCacheTtl 0)', async () => {
    const { tableName } = await freshTable('keys-revoke-now');
    const { keyId, secret } = await createApiKey(documents, tableName, { tenant: 'acme', now: new Date() });
    const { clock, status } = await revocationStack(tableName, 0);
    expect(await status(`Bearer ${secret}`)).toBe(200);
    await revokeApiKey(documents, tableName, keyId);
    clock.advance(1);
    expect(await status(`Bearer ${secret}`)).toBe(403);
  });
});

describe("one tenant's key", () => {
  it("never reaches another tenant's messages, templates, webhooks or suppressions (404, never 403), and changes nothing", async () => {
    const { tableName } = await freshTable('keys-tenants');
    const env = await functionEnvironment(tableName);
    const acme = `Bearer ${(await createApiKey(documents, tableName, { tenant: 'acme', now: new Date() })).secret}`;
    const globex = `Bearer ${(await createApiKey(documents, tableName, { tenant: 'globex', now: new Date() })).secret}`;
    const { http } = await stackFor(env);
    const json = async (answer: Promise<{ status: number; text: string }>) => {
      const { status, text } = await answer;
      return { status, body: JSON.parse(text) as Record<string, unknown> };
    };
    const message = await json(
      send(http, 'POST', '/v1/messages', {
        authorization: acme,
        headers: { 'idempotency-key': 'tenant-wall-1' },
        body: validBody({ send_at: new Date(Date.now() + 86_400_000).toISOString() }),
      }),
    );
    expect(message.status).toBe(202);
    const id = String(message.body.id);
    expect(
      (
        await send(http, 'PUT', '/v1/templates/welcome', {
          authorization: acme,
          body: { subject: 'Hi', text: 'Hi' },
        })
      ).status,
    ).toBe(201);
    const hook = await json(
      send(http, 'POST', '/v1/webhooks', { authorization: acme, body: { url: 'http://127.0.0.1:9/hook' } }),
    );
    expect(hook.status).toBe(201);
    const hookId = String(hook.body.id);
    const address = encodeURIComponent('blocked@example.com');
    expect(
      (await send(http, 'PUT', `/v1/suppressions/${address}`, { authorization: acme, body: {} })).status,
    ).toBe(200);
    const before = await documents.send(new ScanCommand({ TableName: tableName }));

    const attempts: [string, string, unknown?][] = [
      ['GET', `/v1/messages/${id}`],
      ['PATCH', `/v1/messages/${id}`, { send_at: new Date(Date.now() + 2 * 86_400_000).toISOString() }],
      ['DELETE', `/v1/messages/${id}`],
      ['POST', `/v1/messages/${id}/retry`],
      ['GET', '/v1/templates/welcome'],
      ['GET', '/v1/templates/welcome/versions/1'],
      ['POST', '/v1/templates/welcome/render', { data: {} }],
      ['DELETE', '/v1/templates/welcome'],
      ['GET', `/v1/webhooks/${hookId}`],
      ['POST', `/v1/webhooks/${hookId}/test`],
      ['POST', `/v1/webhooks/${hookId}/rotate-secret`],
      ['GET', `/v1/webhooks/${hookId}/deliveries`],
      ['DELETE', `/v1/webhooks/${hookId}`],
      ['DELETE', `/v1/suppressions/${address}`],
    ];
    const statuses: string[] = [];
    for (const [method, path, body] of attempts) {
      const answer = await send(http, method, path, { authorization: globex, ...(body ? { body } : {}) });
      statuses.push(`${method} ${path} ${answer.status}`);
    }
    expect(statuses).toEqual(attempts.map(([method, path]) => `${method} ${path} 404`));
    for (const path of ['/v1/messages', '/v1/templates', '/v1/webhooks', '/v1/suppressions']) {
      const listed = await json(send(http, 'GET', path, { authorization: globex }));
      expect({ path, status: listed.status, items: listed.body.items }).toEqual({
        path,
        status: 200,
        items: [],
      });
    }
    // Nothing of acme's changed, and acme still sees it all.
    const after = await documents.send(new ScanCommand({ TableName: tableName }));
    expect(after.Items).toEqual(before.Items);
    expect((await send(http, 'GET', `/v1/messages/${id}`, { authorization: acme })).status).toBe(200);
    expect((await send(http, 'GET', `/v1/webhooks/${hookId}`, { authorization: acme })).status).toBe(200);
  });
});

describe('postdate keys, through the bin as an operator runs it', () => {
  it('shows the secret once, stores only its hash, lists no secret, and revokes an unknown key with exit 4', async () => {
    const { tableName } = await freshTable('keys-bin');
    const postdate = (args: string[]) => runBin(['--table', tableName, ...args], emulatorEnv());
    const created = await postdate(['--json', 'keys', 'create', '--tenant', 'acme']);
    expect(created.code).toBe(0);
    const { key_id: keyId, secret } = JSON.parse(created.stdout) as { key_id: string; secret: string };
    expect(secret).toMatch(/^pd_[A-Za-z0-9_-]{43}$/);
    const { Items = [] } = await documents.send(new ScanCommand({ TableName: tableName }));
    expect(JSON.stringify(Items)).not.toContain(secret);
    expect(JSON.stringify(Items)).not.toContain(secret.slice(3, 12));

    for (const args of [
      ['keys', 'list'],
      ['--json', 'keys', 'list'],
    ]) {
      const listed = await postdate(args);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain(keyId);
      expect(`${listed.stdout}${listed.stderr}`).not.toContain(secret.slice(3, 12));
    }

    const unknown = await postdate(['keys', 'revoke', 'key_0000000000000000']);
    expect({ code: unknown.code, stderr: unknown.stderr.trim() }).toMatchObject({
      code: 4,
      stderr: expect.stringContaining('no API key key_0000000000000000'),
    });
    const revoked = await postdate(['keys', 'revoke', keyId]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`revoked ${keyId}`);
    // How long it may still work, as the stack is built (decision 0249).
    expect(revoked.stderr).toContain('authorizer cache TTL (30 s by default)');
    // Again: exit 0 (a script may retry), saying it was already revoked, and when.
    const repeated = await postdate(['keys', 'revoke', keyId]);
    expect(repeated.code).toBe(0);
    expect(repeated.stdout).toContain(`${keyId} (tenant acme) was already revoked at `);
    const again = await postdate(['--json', 'keys', 'revoke', keyId]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ key_id: keyId, revoked_at: expect.any(String) });
  }, 60_000);
});
