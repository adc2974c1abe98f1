/**
 * `postdate messages enqueue --file`: a JSON Lines file sent through the typed client to the api
 * handler on DynamoDB Local (the client's fetch calls the handler in-process), 100 items at a time.
 */
import { describe, expect, it } from 'vitest';
import { messagesEnqueue } from '../../cli/messagesEnqueue.js';
import { memoryOutput } from '../../cli/output.js';
import { createPostdateClient } from '../../lambdas/client/index.js';
import { messageIdFor } from '../../lambdas/core/ids.js';
import { apiHarness } from '../api/apiHarness.js';
import { apiEvent, validBody } from '../api/events.js';

async function clientOnHarness() {
  const api = await apiHarness();
  const requests: string[] = [];
  const client = createPostdateClient({
    baseUrl: 'http://postdate.test',
    apiKey: 'pd_test',
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      requests.push(`${request.method} ${path}`);
      const result = await api.handle(
        apiEvent({
          method: request.method,
          path,
          body: await request.text(),
          headers: { 'content-type': 'application/json' },
        }),
      );
      return new Response(result.body ?? null, {
        status: result.statusCode ?? 200,
        headers: (result.headers ?? {}) as Record<string, string>,
      });
    },
  });
  return { api, client, requests };
}

const lines = (count: number) =>
  Array.from({ length: count }, (_, i) =>
    JSON.stringify({ idempotency_key: `file-${i}`, ...validBody({ delay_seconds: 60 }) }),
  ).join('\n');

describe('postdate messages enqueue --file', () => {
  it('sends 150 lines in two batches, prints one JSON result per line, and a second run replays them all', async () => {
    const { client, requests } = await clientOnHarness();
    const out = memoryOutput({ json: true });

    const report = await messagesEnqueue(client, { text: `${lines(150)}\n` }, out);

    expect(requests).toEqual(['POST /v1/messages/batch', 'POST /v1/messages/batch']);
    expect(report).toEqual({ sent: 150, created: 150, replayed: 0, refused: 0, ok: true });
    const printed = out.lines.map(
      (line) => JSON.parse(line) as { line: number; status: number; message: { id: string } },
    );
    expect(printed).toHaveLength(150);
    printed.forEach((result, i) => {
      expect(result.line).toBe(i + 1);
      expect(result.status).toBe(202);
      expect(result.message.id).toBe(messageIdFor('acme', `file-${i}`));
    });
    expect(out.progressSteps.at(-1)).toEqual({ label: 'enqueued', done: 150, total: 150 });

    const again = await messagesEnqueue(client, { text: lines(150) }, memoryOutput());
    expect(again).toMatchObject({ created: 0, replayed: 150, ok: true });
  });

  it('reports a refused line by its number, and sends nothing when a line is not JSON', async () => {
    const { client, requests } = await clientOnHarness();
    const out = memoryOutput();
    const text = [lines(1), JSON.stringify({ idempotency_key: 'bad', ...validBody({ to: [] }) })].join('\n');
    const report = await messagesEnqueue(client, { text }, out);
    expect(report.ok).toBe(false);
    expect(out.lines[1]).toMatch(/^line 2: 400 \/messages\/1\//);

    await expect(messagesEnqueue(client, { text: `${lines(1)}\n{not json` }, out)).rejects.toThrow(
      'line 2 is not JSON; nothing was sent',
    );
    expect(requests).toHaveLength(1);
  });
});
