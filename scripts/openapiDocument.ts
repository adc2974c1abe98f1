/**
 * `npm run openapi`: writes the OpenAPI document the API serves at GET /openapi.json
 * (lib/openapi/openApiDocument.ts) to docs/openapi.json, committed so that readers, Swagger UI and
 * generators find it without running anything. test/api/openapiDocument.test.ts fails when the
 * committed file is stale; `npm run openapi:lint` lints it with Redocly.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from '../lib/openapi/openApiDocument.js';

export const OPENAPI_DOCUMENT_FILE = new URL('../docs/openapi.json', import.meta.url);

/** The contents of docs/openapi.json: the served document, formatted as the repository's biome formats JSON. */
export function openApiDocumentSource(document: object = buildOpenApiDocument()): string {
  const biome = createRequire(import.meta.url).resolve('@biomejs/biome/bin/biome');
  const result = spawnSync(
    process.execPath,
    [biome, 'format', `--stdin-file-path=${fileURLToPath(OPENAPI_DOCUMENT_FILE)}`],
    { input: JSON.stringify(document, null, 2), encoding: 'utf8' },
  );
  if (result.status !== 0) throw new Error(`biome format failed: ${result.stderr}`);
  return result.stdout;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(OPENAPI_DOCUMENT_FILE, openApiDocumentSource());
  process.stdout.write(`${fileURLToPath(OPENAPI_DOCUMENT_FILE)}\n`);
}
