/**
 * A real HTTP server for the typed client's tests: it gives scripted answers in order and records
 * what reached it (method, path, Idempotency-Key, Authorization, body). Servers started here close
 * after each test.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

export interface Seen {
  readonly method: string;
  readonly url: string;
  readonly idempotencyKey: string | undefined;
  readonly authorization: string | undefined;
  readonly body: string;
}

export type Answer = (response: ServerResponse, request: IncomingMessage) => void;

/** A tiny HTTP server that gives the answers in order (the last one again if asked more often). */
export async function scriptedServer(
  answers: readonly Answer[],
): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      seen.push({
        method: request.method ?? '',
        url: request.url ?? '',
        idempotencyKey: request.headers['idempotency-key'] as string | undefined,
        authorization: request.headers.authorization,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const answer = answers[Math.min(seen.length, answers.length) - 1];
      answer?.(response, request);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, server };
}

export const problemAnswer =
  (status: number, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}): Answer =>
  (response) => {
    response.writeHead(status, { 'content-type': 'application/problem+json', ...headers });
    response.end(
      JSON.stringify({ type: `urn:test:${status}`, title: 'Nope', status, detail: 'Nope.', ...extra }),
    );
  };

export const MESSAGE = {
  id: 'm-1',
  status: 'scheduled',
  send_at: '2026-12-01T12:00:00.000Z',
  not_after: null,
  created_at: '2026-12-01T12:00:00.000Z',
  updated_at: '2026-12-01T12:00:00.000Z',
  attempts: 0,
  last_error: null,
  recipients: { accepted: 0, pending: 1, rejected: 0, suppressed: 0 },
  group: null,
  tags: {},
  metadata: {},
  rev: 1,
};
export const accepted: Answer = (response) => {
  response.writeHead(202, { 'content-type': 'application/json' });
  response.end(JSON.stringify(MESSAGE));
};

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    }),
  );
});
