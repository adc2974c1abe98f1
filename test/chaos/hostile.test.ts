import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeAnswer, runHostile } from '../../chaos/hostile.js';
import { hostileRequests, schemaRejects } from '../../chaos/hostileRequests.js';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';

const problem = (status: number) => ({
  status,
  headers: { 'content-type': 'application/problem+json' },
  body: JSON.stringify({ type: 'about:blank', title: 'Bad Request', status, detail: 'x' }),
});

describe('judgeAnswer', () => {
  it('accepts a 4xx problem+json, API Gateway answers and a bare 400 of the HTTP parser', () => {
    expect(judgeAnswer(problem(400))).toBeNull();
    expect(judgeAnswer(problem(413))).toBeNull();
    const gateway = { headers: { 'content-type': 'application/json' } };
    expect(judgeAnswer({ ...gateway, status: 401, body: '{"message":"Unauthorized"}' })).toBeNull();
    expect(judgeAnswer({ ...gateway, status: 403, body: '{"message":"Forbidden"}' })).toBeNull();
    expect(judgeAnswer({ status: 400, headers: {}, body: '' })).toBeNull();
  });

  it('refuses a 5xx, a success, a stack trace, a mismatched status and a bare 4xx', () => {
    expect(judgeAnswer(problem(500))).toContain('server error');
    expect(judgeAnswer({ ...problem(400), status: 202 })).toContain('accepted');
    expect(judgeAnswer({ ...problem(400), status: 422 })).toContain('≠');
    expect(
      judgeAnswer({ status: 400, headers: {}, body: '{"message":"x"}\n    at parse (/app/x.js:1:2)' }),
    ).toContain('stack trace');
    expect(
      judgeAnswer({ status: 409, headers: { 'content-type': 'application/json' }, body: '{"message":"x"}' }),
    ).toContain('neither');
    expect(
      judgeAnswer({ status: 404, headers: { 'content-type': 'text/html' }, body: '<h1>no</h1>' }),
    ).toContain('not JSON');
  });
});

describe('hostileRequests', () => {
  it('generates reproducible requests whose generated bodies the schema refuses', () => {
    const first = hostileRequests(200, 7, { ownMessageId: 'X' });
    const second = hostileRequests(200, 7, { ownMessageId: 'X' });
    expect(first).toHaveLength(200);
    expect(first.map((request) => request.attack)).toEqual(second.map((request) => request.attack));
    const attacks = new Set(first.map((request) => request.attack.split(':')[0]));
    for (const family of [
      'crlf',
      'wrong-type',
      'deep-array',
      'oversized',
      'invalid-utf8',
      'auth',
      'other-tenant',
      'date',
    ])
      expect(attacks).toContain(family);
    for (const request of first.filter((r) => /^(crlf|wrong-type|unknown-field)/.test(r.attack)))
      expect(schemaRejects(JSON.parse(request.body?.toString('utf8') ?? 'null'))).toBe(true);
  });
});

describe('the hostile-input run against the local stack (small variant)', () => {
  let stack: LocalStack;

  beforeAll(async () => {
    const config = loadConfig({ POSTDATE_API_KEY: 'pd_hostile-spec-key-0001' }, 'local');
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('answers ~100 hostile requests with 4xx only and writes nothing', async () => {
    const report = await runHostile({
      apiUrl: stack.apiUrl,
      apiKey: stack.apiKey,
      dynamodbEndpoint: stack.dynamodbEndpoint,
      tableName: stack.tableName,
      count: 100,
      seed: 20261129,
    });
    expect(report.requests).toBe(100);
    expect(report.failures).toEqual([]);
    expect(report.serverErrors).toBe(0);
    expect(report.newItems).toEqual([]);
    expect(report.ownMessageUntouched).toBe(true);
  }, 60_000);
});
