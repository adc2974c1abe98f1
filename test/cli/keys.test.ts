import { beforeAll, describe, expect, it } from 'vitest';
import { type KeysDeps, keysCreate, keysList, keysRevoke, knownTenants } from '../../cli/keysCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { lookupApiKey } from '../../lambdas/keys/apiKeys.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

let deps: KeysDeps;
let clock = new Date('2026-11-29T12:00:00.000Z');

beforeAll(async () => {
  const { tableName } = await freshTable();
  deps = { documents: documentClient(), tableName, now: () => clock };
});

describe('postdate keys', () => {
  it('creates a key whose secret is shown once and works for the tenant', async () => {
    const out = memoryOutput();
    const created = await keysCreate(deps, { tenant: 'acme' }, out);
    expect(created.secret).toMatch(/^pd_/);
    expect(out.text()).toContain(created.secret);
    expect(out.warnings[0]).toContain('cannot be shown again');
    expect(await lookupApiKey(deps.documents, deps.tableName, created.secret)).toMatchObject({
      keyId: created.keyId,
      tenant: 'acme',
      revokedAt: null,
    });
  });

  it('lists keys without secrets, newest first, and filters by tenant', async () => {
    clock = new Date('2026-11-29T12:01:00.000Z');
    const globex = await keysCreate(deps, { tenant: 'globex' }, memoryOutput());
    const out = memoryOutput({ json: true });
    const report = await keysList(deps, {}, out);
    expect(report.keys.map((key) => key.tenant)).toEqual(['globex', 'acme']);
    expect(JSON.stringify(out.documents)).not.toContain(globex.secret);
    expect((await keysList(deps, { tenant: 'acme' }, memoryOutput())).keys).toHaveLength(1);
    expect(await knownTenants(deps)).toEqual(['acme', 'globex']);
  });

  it('revokes a key by id, so the authorizer lookup sees it revoked', async () => {
    const created = await keysCreate(deps, { tenant: 'initech' }, memoryOutput());
    clock = new Date('2026-11-29T13:00:00.000Z');
    const out = memoryOutput();
    const revoked = await keysRevoke(deps, created.keyId, out);
    expect(revoked.revokedAt).toBe('2026-11-29T13:00:00.000Z');
    expect(out.text()).toContain(`revoked ${created.keyId}`);
    expect((await lookupApiKey(deps.documents, deps.tableName, created.secret))?.revokedAt).toBe(
      '2026-11-29T13:00:00.000Z',
    );
  });

  it('says with --json whether the key was revoked already (was_revoked), as its line does', async () => {
    const created = await keysCreate(deps, { tenant: 'umbrella' }, memoryOutput());
    clock = new Date('2026-11-29T14:00:00.000Z');
    const first = memoryOutput({ json: true });
    await keysRevoke(deps, created.keyId, first);
    clock = new Date('2026-11-29T15:00:00.000Z');
    const again = memoryOutput({ json: true });
    await keysRevoke(deps, created.keyId, again);
    expect(first.documents).toMatchObject([{ revoked_at: '2026-11-29T14:00:00.000Z', was_revoked: false }]);
    // The second run changed nothing: the first revocation's time, and said so.
    expect(again.documents).toMatchObject([{ revoked_at: '2026-11-29T14:00:00.000Z', was_revoked: true }]);
    const words = memoryOutput();
    await keysRevoke(deps, created.keyId, words);
    expect(words.text()).toContain('was already revoked at 2026-11-29T14:00:00.000Z');
  });

  it('creates a test key (--test) for the tenant’s test side, which reconcile and messages list then cover', async () => {
    const out = memoryOutput();
    const created = await keysCreate(deps, { tenant: 'hooli', test: true }, out);
    expect(created).toMatchObject({ tenant: 'hooli', test: true });
    expect(created.secret).toMatch(/^pd_test_/);
    expect(out.text()).toContain('test (never sent to the relay)');
    expect(await lookupApiKey(deps.documents, deps.tableName, created.secret)).toMatchObject({
      tenant: 'hooli',
      test: true,
    });
    const listed = await keysList(deps, { tenant: 'hooli' }, memoryOutput());
    expect(listed.keys.map((key) => key.test)).toEqual([true]);
    expect(await knownTenants(deps)).toContain('hooli.test');
    expect(await knownTenants(deps)).not.toContain('hooli');
  });

  it('fails with one line for a bad tenant (usage) or an unknown key id', async () => {
    await expect(keysCreate(deps, { tenant: 'Not A Tenant' }, memoryOutput())).rejects.toMatchObject({
      name: 'UsageError',
      exitCode: 2,
    });
    await expect(keysRevoke(deps, 'key_0000000000000000', memoryOutput())).rejects.toMatchObject({
      name: 'NotFoundError',
      exitCode: 4,
      detail: 'no API key key_0000000000000000',
    });
  });
});
