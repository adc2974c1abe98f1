import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OPENAPI_DOCUMENT_FILE, openApiDocumentSource } from '../../scripts/openapiDocument.js';

describe('docs/openapi.json', () => {
  it('is the document the API serves (`npm run openapi` writes it)', () => {
    expect(
      readFileSync(OPENAPI_DOCUMENT_FILE, 'utf8'),
      'docs/openapi.json is stale: run `npm run openapi`',
    ).toBe(openApiDocumentSource());
  });

  it('passes `redocly lint` (the recommended rules) without an error or a warning', () => {
    const cli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');
    const lint = spawnSync(
      process.execPath,
      [cli, 'lint', fileURLToPath(OPENAPI_DOCUMENT_FILE), '--format=json'],
      {
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        timeout: 60_000,
      },
    );
    const report = JSON.parse(lint.stdout) as {
      totals: { errors: number; warnings: number };
      problems: unknown[];
    };
    expect(report.problems).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    expect(lint.status).toBe(0);
  }, 60_000);
});
