import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createAuthorizerHandler } from '../../lambdas/authorizer/createAuthorizerHandler.js';
import {
  API_KEYS_PARTITION,
  ApiKeyError,
  apiKeyHash,
  createApiKey,
  listApiKeys,
  lookupApiKey,
  revokeApiKey,
} from '../../lambdas/keys/apiKeys.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { testClock } from './apiHarness.js';
import { authorizerEvent } from './events.js';

const documents = documentClient();
const now = new Date('2026-11-29T18:00:00.000Z');

describe('API keys', () => {
  let tableName: string;
  beforeAll(async () => {
    ({ tableName } = await freshTable('keys'));
  });

  it('creates a pd_ key, shows the secret once and stores only its SHA-256', async () => {
    const { keyId, secret } = await createApiKey(documents, tableName, { tenant: 'acme', now });
    expect(secret).toMatch(/^pd_[A-Za-z0-9_-]{43}$/);
    expect(keyId).toMatch(/^key_[0-9a-f]{16}$/);
    const { Items = [] } = await documents.send(new ScanCommand({ TableName: tableName }));
    const item = Items.find((candidate) => candidate.key_id === keyId);
    expect(item).toMatchObject({
      pk: `APIKEY#${apiKeyHash(secret)}`,
      sk: 'APIKEY',
      tenant: 'acme',
      created_at: now.toISOString(),
      revoked_at: null,
      tnt_pk: API_KEYS_PARTITION,
      tnt_sk: `${now.toISOString()}#${keyId}`,
    });
    expect(JSON.stringify(Items)).not.toContain(secret);
  });

  it('accepts a fixed secret (POSTDATE_API_KEY) and creating it again is a no-op', async () => {
    const first = await createApiKey(documents, tableName, {
      tenant: 'local',
      secret: 'pd_fixed-local-key',
      now,
    });
    const again = await createApiKey(documents, tableName, {
      tenant: 'local',
      secret: 'pd_fixed-local-key',
      now,
    });
    expect(again).toEqual(first);
    await expect(
      createApiKey(documents, tableName, { tenant: 'other', secret: 'pd_fixed-local-key', now }),
    ).rejects.toMatchObject({ reason: 'secret-in-use' });
  });

  it.each(['', 'Acme', 'a#b', 'apikeys', 'x'.repeat(65)])('refuses the tenant %j', async (tenant) => {
    await expect(createApiKey(documents, tableName, { tenant, now })).rejects.toBeInstanceOf(ApiKeyError);
  });

  it('refuses a fixed secret that is not pd_ and 8+ URL-safe characters', async () => {
    await expect(
      createApiKey(documents, tableName, { tenant: 'acme', secret: 'hunter2', now }),
    ).rejects.toMatchObject({
      reason: 'invalid-secret',
    });
  });

  it('lists keys newest first from the by_tenant index, without secrets', async () => {
    const { tableName: own } = await freshTable('keys');
    const a = await createApiKey(documents, own, { tenant: 'acme', now });
    const b = await createApiKey(documents, own, { tenant: 'globex', now: new Date('2026-11-30T00:00:00Z') });
    const keys = await listApiKeys(documents, own);
    expect(keys).toEqual([
      {
        keyId: b.keyId,
        tenant: 'globex',
        createdAt: '2026-11-30T00:00:00.000Z',
        revokedAt: null,
        test: false,
      },
      { keyId: a.keyId, tenant: 'acme', createdAt: now.toISOString(), revokedAt: null, test: false },
    ]);
  });

  it('revokes by key id, idempotently', async () => {
    const { keyId, secret } = await createApiKey(documents, tableName, { tenant: 'acme', now });
    const revoked = await revokeApiKey(documents, tableName, keyId, new Date('2026-12-01T00:00:00Z'));
    expect(revoked.revokedAt).toBe('2026-12-01T00:00:00.000Z');
    const again = await revokeApiKey(documents, tableName, keyId, new Date('2026-12-02T00:00:00Z'));
    expect(again.revokedAt).toBe('2026-12-01T00:00:00.000Z');
    expect((await lookupApiKey(documents, tableName, secret))?.revokedAt).toBe('2026-12-01T00:00:00.000Z');
    await expect(revokeApiKey(documents, tableName, 'key_missing')).rejects.toMatchObject({
      reason: 'not-found',
    });
  });
});

describe('the Lambda authorizer', () => {
  let tableName: string;
  beforeAll(async () => {
    ({ tableName } = await freshTable('auth'));
  });

  function authorizer(options: { cacheTtlMs?: number } = {}) {
    const clock = testClock();
    let lookups = 0;
    const logs: string[] = [];
    const handler = createAuthorizerHandler({
      lookup: (secret) => {
        lookups += 1;
        return lookupApiKey(documents, tableName, secret);
      },
      now: clock.now,
      logger: {
        info: (message, attributes) => logs.push(JSON.stringify({ message, ...attributes })),
        warn: (message, attributes) => logs.push(JSON.stringify({ message, ...attributes })),
        error: (message, attributes) => logs.push(JSON.stringify({ message, ...attributes })),
      },
      ...options,
    });
    return { handler, clock, logs, lookups: () => lookups };
  }

  it('authorizes a valid key with the tenant and key id in the context (simple response)', async () => {
    const { keyId, secret } = await createApiKey(documents, tableName, { tenant: 'acme', now });
    const { handler } = authorizer();
    expect(await handler(authorizerEvent({ authorization: `Bearer ${secret}` }))).toEqual({
      isAuthorized: true,
      context: { tenant: 'acme', key_id: keyId },
    });
  });

  it.each([
    ['no Authorization header', {}],
    ['a Basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['a bearer token without the pd_ prefix', { authorization: 'Bearer abcdefghijkl' }],
    ['an unknown key', { authorization: 'Bearer pd_unknownunknownunknown' }],
    ['two tokens', { authorization: 'Bearer pd_aaaaaaaaaa pd_bbbbbbbbbb' }],
  ])('denies %s', async (_name, headers) => {
    const { handler } = authorizer();
    expect((await handler(authorizerEvent(headers))).isAuthorized).toBe(false);
  });

  it('denies a revoked key at its next call: an allowance is never cached here, only by API Gateway (decision 0249)', async () => {
    const { keyId, secret } = await createApiKey(documents, tableName, { tenant: 'acme', now });
    const { handler, clock, lookups } = authorizer();
    const event = authorizerEvent({ authorization: `Bearer ${secret}` });
    expect((await handler(event)).isAuthorized).toBe(true);
    expect((await handler(event)).isAuthorized).toBe(true);
    expect(lookups()).toBe(2);
    await revokeApiKey(documents, tableName, keyId);
    clock.advance(1);
    expect((await handler(event)).isAuthorized).toBe(false);
    // The denial is final (a revocation is never undone), so it is cached like an unknown key's.
    clock.advance(10_000);
    expect((await handler(event)).isAuthorized).toBe(false);
    expect(lookups()).toBe(3);
  });

  it('caches misses too, so a flood of bad keys does not become a flood of reads', async () => {
    const { handler, lookups } = authorizer();
    for (let i = 0; i < 5; i++)
      await handler(authorizerEvent({ authorization: 'Bearer pd_nobody-nobody-nobody' }));
    expect(lookups()).toBe(1);
  });

  it('accepts the scheme in any case and never logs the key', async () => {
    const { secret } = await createApiKey(documents, tableName, { tenant: 'acme', now });
    const { handler, logs } = authorizer();
    expect((await handler(authorizerEvent({ Authorization: `bearer ${secret}` }))).isAuthorized).toBe(true);
    await handler(authorizerEvent({ authorization: `Bearer ${secret}x` }));
    expect(logs.join('\n')).not.toContain(secret);
  });
});
