import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { defaultProvider } from '../../lambdas/adapters/lambdaCredentialProvider.js';
import { FUNCTION_ESBUILD_OPTIONS, PROJECT_ROOT } from '../../lib/constructs/functionEsbuild.js';
import { freshTable } from '../support/awsLocal.js';

const run = promisify(execFile);

/** Bundles an entry file, or source resolved from the project, exactly as a function is bundled. */
async function bundleLikeAFunction(
  entry: { file: string } | { source: string },
  outfile: string,
): Promise<Metafile> {
  const result = await build({
    ...FUNCTION_ESBUILD_OPTIONS,
    mainFields: [...FUNCTION_ESBUILD_OPTIONS.mainFields],
    ...('file' in entry
      ? { entryPoints: [entry.file] }
      : { stdin: { contents: entry.source, resolveDir: PROJECT_ROOT, loader: 'ts' as const } }),
    outfile,
    absWorkingDir: PROJECT_ROOT,
    metafile: true,
    logLevel: 'error',
  });
  return result.metafile;
}

const bundledPackages = (metafile: Metafile): Set<string> =>
  new Set(
    Object.keys(metafile.inputs).flatMap((input) => {
      const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
      return match?.[1] ? [match[1]] : [];
    }),
  );

describe('the credential chain of the function bundles', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('answers with the role credentials Lambda puts in the environment', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDLAMBDAROLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'role-secret');
    vi.stubEnv('AWS_SESSION_TOKEN', 'role-session');
    const identity = await defaultProvider()();
    expect(identity).toMatchObject({
      accessKeyId: 'AKIDLAMBDAROLE',
      secretAccessKey: 'role-secret',
      sessionToken: 'role-session',
    });
  });

  it('says which credentials are missing when the environment holds none', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', '');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', '');
    await expect(defaultProvider()()).rejects.toThrow(/environment/i);
  });

  describe('where a runtime serves the credentials over HTTP', () => {
    let server: Server;
    let requests = 0;
    beforeAll(async () => {
      server = createServer((_request, response) => {
        requests += 1;
        response.setHeader('content-type', 'application/json');
        response.end(
          JSON.stringify({
            AccessKeyId: 'AKIDSERVED',
            SecretAccessKey: 'served-secret',
            Token: 'served-token',
            Expiration: new Date(Date.now() + 3_600_000).toISOString(),
          }),
        );
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    it('reads them there once, and again only when they near their expiry', async () => {
      const { port } = server.address() as AddressInfo;
      vi.stubEnv('AWS_CONTAINER_CREDENTIALS_FULL_URI', `http://127.0.0.1:${port}/credentials`);
      vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDNOTTHESE');
      vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'not-these');
      const provider = defaultProvider();
      const first = await provider();
      const second = await provider();
      expect(first).toMatchObject({ accessKeyId: 'AKIDSERVED', sessionToken: 'served-token' });
      expect(second.accessKeyId).toBe('AKIDSERVED');
      expect(requests).toBe(1);
    });
  });

  describe('in a bundle built with the functions’ esbuild options', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'postdate-credentials-'));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('signs real requests with the credentials of the environment', async () => {
      const { tableName } = await freshTable('credentials');
      const source = [
        "import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';",
        'const client = new DynamoDBClient({ endpoint: process.env.ENDPOINT });',
        'const answer = await client.send(new DescribeTableCommand({ TableName: process.env.TABLE }));',
        'process.stdout.write(String(answer.Table?.TableName));',
      ].join('\n');
      const outfile = join(dir, 'describe/index.mjs');
      const metafile = await bundleLikeAFunction({ source }, outfile);
      expect(bundledPackages(metafile)).not.toContain('@aws-sdk/credential-provider-node');
      // The child has no home, no AWS config and no metadata service: its only credentials are the
      // environment's, and DynamoDB Local answers only a signed request.
      const { stdout } = await run(process.execPath, [outfile], {
        env: {
          PATH: process.env.PATH,
          AWS_REGION: 'us-east-1',
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
          AWS_EC2_METADATA_DISABLED: 'true',
          ENDPOINT: inject('dynamodbEndpoint'),
          TABLE: tableName,
        },
      });
      expect(stdout).toBe(tableName);
    });
  });
});
