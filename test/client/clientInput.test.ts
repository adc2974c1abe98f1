/**
 * What the client refuses of its caller's own input, typed and before anything is sent: an
 * Idempotency-Key the API would refuse (DESIGN §3: 1–255 printable characters) or no header can
 * carry. A real HTTP server records what reaches it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createPostdateClient,
  PostdateClientError,
  type PostdateClientOptions,
  PostdateInputError,
} from '../../lambdas/client/index.js';

const MESSAGE = {
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
const REQUEST = { to: ['ada@example.com'], subject: 'Hi', text: 'Hello.' };

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    }),
  );
});

/** A server that answers every request with `status` (202 and a message, or a bare 503), recording each key. */
async function recordingServer(status: 202 | 503): Promise<{ url: string; keys: (string | undefined)[] }> {
  const keys: (string | undefined)[] = [];
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      keys.push(request.headers['idempotency-key'] as string | undefined);
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(status === 202 ? JSON.stringify(MESSAGE) : '{}');
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, keys };
}

function clientOf(url: string, options: Partial<PostdateClientOptions> = {}) {
  return createPostdateClient({ baseUrl: url, apiKey: 'pd_input-spec', sleep: async () => {}, ...options });
}

describe('the client refuses an Idempotency-Key the API would refuse, typed, before sending', () => {
  const refused = [
    ['empty', ''],
    ['longer than 255 characters', 'k'.repeat(256)],
    ['with a newline (header injection)', 'order-7\r\nX-Injected: 1'],
    ['with a NUL', 'order\u00007'],
    ['with a tab', 'order\t7'],
    ['with a character beyond Latin-1', 'заказ-7'],
    ['with a Latin-1 character that is not ASCII', 'café-7'],
  ] as const;

  for (const [what, key] of refused) {
    it(`a key ${what}`, async () => {
      const { url, keys } = await recordingServer(202);
      const error = await clientOf(url)
        .enqueue(REQUEST, { idempotencyKey: key })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PostdateClientError);
      expect(error).toMatchObject({ name: 'PostdateInputError', field: 'Idempotency-Key' });
      expect((error as Error).message).toContain('1–255 printable ASCII characters');
      expect(keys).toEqual([]);
    });
  }

  it('a key the caller’s newIdempotencyKey makes, naming that option', async () => {
    const { url, keys } = await recordingServer(202);
    const error = await clientOf(url, { newIdempotencyKey: () => 'line\nbreak' })
      .enqueue(REQUEST)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PostdateInputError);
    expect(error).toMatchObject({ field: 'Idempotency-Key' });
    expect((error as Error).message).toContain('newIdempotencyKey');
    expect(keys).toEqual([]);
  });

  it('but sends every key the API takes as it is: 1 character, 255, spaces and symbols inside', async () => {
    const { url, keys } = await recordingServer(202);
    const client = clientOf(url);
    const taken = ['k', 'k'.repeat(255), 'order 7 / shipped ~ "ok"', '!#$%&()*+,-./:;<=>?@[\\]^_`{|}'];
    for (const key of taken) {
      expect((await client.enqueue(REQUEST, { idempotencyKey: key })).idempotencyKey).toBe(key);
    }
    expect(keys).toEqual(taken);
  });
});
