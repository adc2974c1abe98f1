import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
// The SDK's own retry numbers (a dependency of every @aws-sdk client), read only to pin ours to them.
import { MAXIMUM_RETRY_DELAY, Retry } from '@smithy/core/retry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AWS_CLIENT_LIMITS, awsClientOptions } from '../../lambdas/adapters/awsClients.js';
import { AWS_SDK_RETRY_BACKOFF } from '../../lambdas/core/awsClientLimits.js';

/**
 * Issue 15 §4: every AWS SDK client the functions build has explicit connection and request
 * timeouts and a bounded number of attempts, defined once in lambdas/adapters/awsClients.ts.
 */

describe('awsClientOptions', () => {
  it('gives every client explicit timeouts and attempts, from one place', () => {
    const options = awsClientOptions();
    expect(options).toEqual({
      maxAttempts: AWS_CLIENT_LIMITS.maxAttempts,
      requestHandler: {
        connectionTimeout: AWS_CLIENT_LIMITS.connectionTimeoutMs,
        requestTimeout: AWS_CLIENT_LIMITS.requestTimeoutMs,
        throwOnRequestTimeout: true,
      },
    });
    expect(AWS_CLIENT_LIMITS.connectionTimeoutMs).toBeGreaterThan(0);
    expect(AWS_CLIENT_LIMITS.requestTimeoutMs).toBeGreaterThan(0);
    expect(AWS_CLIENT_LIMITS.maxAttempts).toBeGreaterThanOrEqual(1);
    // A read that hangs on every attempt ends well inside a minute (no SDK default of "forever").
    const worstCaseMs =
      AWS_CLIENT_LIMITS.maxAttempts *
      (AWS_CLIENT_LIMITS.connectionTimeoutMs + AWS_CLIENT_LIMITS.requestTimeoutMs);
    expect(worstCaseMs).toBeLessThanOrEqual(30_000);
  });

  it('describes the SDK retry backoff the outcome-write reserve counts on (an SDK upgrade that changes it fails here)', () => {
    expect(AWS_SDK_RETRY_BACKOFF.capMs).toBe(MAXIMUM_RETRY_DELAY);
    // The larger of the two bases the standard strategy uses (throttling errors back off longer).
    expect(AWS_SDK_RETRY_BACKOFF.baseMs).toBe(Math.max(Retry.delay(), Retry.throttlingDelay()));
  });

  describe('against an endpoint that accepts and never answers', () => {
    let server: Server;
    let port = 0;
    const sockets: Socket[] = [];
    beforeAll(async () => {
      server = createServer((socket) => {
        sockets.push(socket);
        socket.on('error', () => {});
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it('ends each request at its timeout and stops after maxAttempts', async () => {
      const client = new DynamoDBClient({
        ...awsClientOptions({ requestTimeoutMs: 300, maxAttempts: 2 }),
        endpoint: `http://127.0.0.1:${port}`,
        region: 'us-east-1',
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      });
      const started = Date.now();
      try {
        await expect(client.send(new ListTablesCommand({}))).rejects.toThrow();
      } finally {
        client.destroy();
      }
      expect(Date.now() - started).toBeLessThan(5000);
      expect(sockets.length).toBe(2);
    });
  });
});

describe('every function builds its AWS clients with awsClientOptions', () => {
  const files = [
    'lambdas/api/handler.ts',
    'lambdas/authorizer/handler.ts',
    'lambdas/relay/handler.ts',
    'lambdas/sender/handler.ts',
    'lambdas/sweeper/handler.ts',
    'lambdas/sender/senderDependencies.ts',
  ];
  it.each(files)('%s', (file) => {
    const source = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
    const constructions = [...source.matchAll(/new (\w+Client)\(([^)]*)\)/g)];
    expect(constructions.length, 'builds at least one client').toBeGreaterThan(0);
    // The limits first; what may follow is only where the client points (region, endpoint, keys).
    for (const [call, , args] of constructions) {
      expect(args, call).toMatch(/^(\{ \.\.\.)?awsClientOptions\(/);
    }
  });
});
