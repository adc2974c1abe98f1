import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLIENT_TYPES_FILE, clientTypesSource } from '../../scripts/clientTypes.js';

describe("the client's types", () => {
  it('are exactly what openapi-typescript generates from the OpenAPI document (`npm run client:types`)', async () => {
    const committed = readFileSync(CLIENT_TYPES_FILE, 'utf8');
    expect(committed, 'lambdas/client/openapiTypes.ts is stale: run `npm run client:types`').toBe(
      await clientTypesSource(),
    );
  }, 60_000);
});
