import { describe, expect, it } from 'vitest';
import { emulatorEnv, freshTable } from '../support/awsLocal.js';
import { runBin } from './cliFixtures.js';

/**
 * What every command's `--tenant` takes (cli/commandAction.ts `tenantName`): a name a tenant can
 * have, the API's rule (lambdas/core/testSide.ts `SIDE_TENANT_PATTERN`: `acme`, or its test side
 * `acme.test`). A name no tenant can have (`ACME`, a typo) is bad usage, said before anything is
 * read: a listing, an export or a reconcile of it would find nothing and answer "all clear" (decision 0260).
 */
describe('--tenant on every command that takes it', () => {
  const commands: readonly (readonly string[])[] = [
    ['keys', 'list'],
    ['messages', 'list'],
    ['messages', 'export', '--since', '1d'],
    ['reconcile'],
    ['templates', 'list'],
    ['webhooks', 'list'],
    ['suppressions', 'list'],
  ];

  it('refuses a name no tenant can have as bad usage (exit 2), naming --tenant and the rule', async () => {
    const { tableName } = await freshTable('tenant-option');
    for (const command of commands) {
      const result = await runBin(
        ['--json', '--table', tableName, ...command, '--tenant', 'ACME'],
        emulatorEnv(),
      );
      const said = `${command.join(' ')}: ${result.stderr}`;
      expect(result.code, said).toBe(2);
      expect(result.stderr, said).toMatch(
        /^error: option '--tenant <tenant>' argument 'ACME' is invalid\. a tenant is 1–64 lower-case/,
      );
      expect(JSON.parse(result.stdout), said).toMatchObject({
        error: { type: 'urn:postdate:cli:usage', exit_code: 2 },
      });
    }
  }, 120_000);

  it('takes a tenant and its test side', async () => {
    const { tableName } = await freshTable('tenant-option');
    for (const tenant of ['acme', 'acme.test']) {
      const result = await runBin(
        ['--json', '--table', tableName, 'messages', 'list', '--tenant', tenant],
        emulatorEnv(),
      );
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ tenants: [tenant], items: [] });
    }
  }, 60_000);
});
