/**
 * `postdate messages enqueue --file`: a JSON Lines file sent through the typed client to the api
 * handler on DynamoDB Local (the client's fetch calls the handler in-process), 100 items at a time.
 */
import { describe, expect, it } from 'vitest';
import { CliError, errorDocumentOf } from '../../cli/cliErrors.js';
import { messagesEnqueue } from '../../cli/messagesEnqueue.js';
import { type MemoryOutput, memoryOutput } from '../../cli/output.js';
import { createPostdateClient } from '../../lambdas/client/index.js';
import { messageIdFor } from '../../lambdas/core/ids.js';
import type { ApiStore } from '../../lambdas/ports/ApiStore.js';
import { apiHarness } from '../api/apiHarness.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

import { apiEvent, validBody } from '../api/events.js';

/**
 * `beforeRequest(n)` runs before the n-th request (1-based) reaches the api: a test changes the
 * API's state there (archives a template) or makes the request go unanswered (throws).
 */
async function clientOnHarness(
  beforeRequest?: (n: number, api: Harness) => Promise<void>,
  harness: Parameters<typeof apiHarness>[0] = {},
) {
  const api = await apiHarness(harness);
  const requests: string[] = [];
  const client = createPostdateClient({
    baseUrl: 'https://postdate.test',
    apiKey: 'pd_test',
    retry: { maxAttempts: 1 },
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      requests.push(`${request.method} ${path}`);
      await beforeRequest?.(requests.length, api);
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

/** 150 lines; line 120 (the file's item 119, the second batch's item 19) is replaced by `line120`. */
const fileWithLine120 = (line120: Record<string, unknown>) =>
  lines(150)
    .split('\n')
    .map((line, i) => (i === 119 ? JSON.stringify({ idempotency_key: 'file-119', ...line120 }) : line))
    .join('\n');

/** What a script reads: the result lines, then the error document the CLI prints when it stops. */
async function stream(run: Promise<unknown>, out: MemoryOutput) {
  const error = await run.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(CliError);
  const results = out.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { results, error: errorDocumentOf(error as CliError).error };
}

describe('postdate messages enqueue --file', () => {
  it('sends 150 lines in two batches, prints one JSON result per line, and a second run replays them all', async () => {
    const { client, requests } = await clientOnHarness();
    const out = memoryOutput({ json: true });

    const report = await messagesEnqueue(client, { text: `${lines(150)}\n` }, out);

    expect(requests).toEqual(['POST /v1/messages/batch', 'POST /v1/messages/batch']);
    expect(report).toEqual({ sent: 150, created: 150, replayed: 0, refused: 0, unknown: 0, ok: true });
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
  }, 60_000);

  it('reports a refused line by its number, and sends nothing when a line is not JSON', async () => {
    const { client, requests } = await clientOnHarness();
    const out = memoryOutput();
    const text = [lines(1), JSON.stringify({ idempotency_key: 'bad', ...validBody({ to: [] }) })].join('\n');
    const report = await messagesEnqueue(client, { text }, out);
    expect(report.ok).toBe(false);
    expect(out.lines[1]).toMatch(/^line 2: 400 \/messages\/1\//);
    // The summary counts lines, never mail "sent": nothing is sent at enqueue, and one was refused.
    expect(out.warnings).toEqual(['2 lines: 1 new, 0 replayed, 1 refused']);

    await expect(messagesEnqueue(client, { text: `${lines(1)}\n{not json` }, out)).rejects.toThrow(
      'line 2 is not JSON; nothing was sent',
    );
    expect(requests).toHaveLength(1);
  });
  it('counts a line answered 500 as unknown, not refused: it may be stored, so the run says to run the file again, and that replays it (DESIGN §3a)', async () => {
    const lost = `MSG#${messageIdFor('acme', 'file-1')}`;
    let losing = true;
    // The write of line 2 lands, then its answer is lost: the item's 500 inside the batch's 200.
    const wrapStore = (store: ApiStore) =>
      Object.assign(Object.create(store) as ApiStore, {
        putNew: async (record: Parameters<ApiStore['putNew']>[0]) => {
          const result = await store.putNew(record);
          if (losing && record.sk === 'STATE' && record.pk === lost) throw new Error('injected: answer lost');
          return result;
        },
      });
    const { client } = await clientOnHarness(undefined, { wrapStore });
    const out = memoryOutput();

    const report = await messagesEnqueue(client, { text: lines(3) }, out);

    expect(out.lines[1]).toMatch(/^line 2: 500 /);
    expect(report).toMatchObject({ sent: 3, created: 2, refused: 0, unknown: 1, ok: false });
    expect(out.warnings.join('\n')).toMatch(/1 unknown.*run the file again/s);
    losing = false;
    const again = await messagesEnqueue(client, { text: lines(3) }, memoryOutput());
    expect(again).toMatchObject({ created: 0, replayed: 3, refused: 0, unknown: 0, ok: true });
  });

  it('counts index and /messages/N in the file, not in the batch of 100: line 120 is item 119', async () => {
    const { client } = await clientOnHarness();
    const out = memoryOutput({ json: true });
    const report = await messagesEnqueue(client, { text: fileWithLine120(validBody({ to: [] })) }, out);
    expect(report).toMatchObject({ created: 149, refused: 1, ok: false });
    const refused = JSON.parse(out.lines[119] ?? '{}');
    expect(refused).toMatchObject({ line: 120, index: 119, status: 400 });
    expect(refused.problem.errors).toEqual([{ field: '/messages/119/to', message: expect.any(String) }]);
    expect(JSON.parse(out.lines[149] ?? '{}')).toMatchObject({ line: 150, index: 149, status: 202 });
  });

  it('strict over several batches: one bad line anywhere, nothing is enqueued, and the error names it', async () => {
    const { client, requests } = await clientOnHarness();
    const out = memoryOutput({ json: true });
    const text = fileWithLine120(validBody({ to: [] }));
    const { results, error } = await stream(messagesEnqueue(client, { text, mode: 'strict' }, out), out);
    expect(results).toEqual([]);
    expect(error).toMatchObject({
      type: 'urn:postdate:problem:validation',
      status: 400,
      errors: [{ field: '/messages/119/to', line: 120, message: expect.any(String) }],
      exit_code: 1,
      unanswered_from_line: 1,
      maybe_stored_through_line: null,
    });
    expect(error.detail).toMatch(/nothing was enqueued/i);
    // Nothing was stored: the same file, permissive, creates every valid line anew.
    const again = await messagesEnqueue(client, { text }, memoryOutput());
    expect(again).toMatchObject({ created: 149, replayed: 0, refused: 1 });
    expect(requests.length).toBeGreaterThanOrEqual(2);
  });

  it('strict over several batches writes in the batches it judged: a file every check passed is never refused whole at its write for its size', async () => {
    const { client } = await clientOnHarness();
    // 100 short lines, 98 of ~20 KB, 2 of 100 KB: batches of 99 fit the 2 MiB batch body
    // (LIMITS.maxBatchBodyBytes) whether judged or written; the file's second hundred would not.
    const text = Array.from({ length: 200 }, (_, i) => {
      const size = i < 100 ? 0 : i < 198 ? 20_000 : 100_000;
      const body = validBody({ delay_seconds: 60, ...(size > 0 ? { text: 'x'.repeat(size) } : {}) });
      return JSON.stringify({ idempotency_key: `sized-${i}`, ...body });
    }).join('\n');
    const report = await messagesEnqueue(client, { text, mode: 'strict' }, memoryOutput({ json: true }));
    expect(report).toEqual({ sent: 200, created: 200, replayed: 0, refused: 0, unknown: 0, ok: true });
  }, 60_000);

  it('strict, a batch refused after the ones before it were enqueued: their lines are answered, the error says from which line nothing was stored', async () => {
    // Line 120 uses a template that is archived after the check and after batch 1 was written.
    const { client, api } = await clientOnHarness(async (n, harness) => {
      if (n === 4) {
        await harness.call(apiEvent({ method: 'DELETE', path: '/v1/templates/note' }));
      }
    });
    await api.call(
      apiEvent({ method: 'PUT', path: '/v1/templates/note', body: { subject: 'N', text: 'n' } }),
    );
    const { subject: _s, text: _t, html: _h, ...envelope } = validBody({ delay_seconds: 60 });
    const text = fileWithLine120({ ...envelope, template: { name: 'note' }, data: {} });
    const out = memoryOutput({ json: true });
    const { results, error } = await stream(messagesEnqueue(client, { text, mode: 'strict' }, out), out);
    // Written in the batches judged: 99 lines each.
    expect(results).toHaveLength(99);
    expect(results.map((result) => [result.line, result.status])).toEqual(
      Array.from({ length: 99 }, (_, i) => [i + 1, 202]),
    );
    expect(error).toMatchObject({
      status: 400,
      errors: [expect.objectContaining({ line: 120, field: expect.stringMatching(/^\/messages\/119\//) })],
      unanswered_from_line: 100,
      maybe_stored_through_line: null,
    });
  });

  it("a batch refused whole (413) is the API's problem, passed through, after the lines answered before it", async () => {
    const { client } = await clientOnHarness();
    const big = 'x'.repeat(45 * 1024);
    const text = Array.from({ length: 150 }, (_, i) =>
      JSON.stringify({
        idempotency_key: `big-${i}`,
        ...validBody({ delay_seconds: 60, text: i < 100 ? 'x' : big }),
      }),
    ).join('\n');
    const out = memoryOutput({ json: true });
    const { results, error } = await stream(messagesEnqueue(client, { text }, out), out);
    expect(results).toHaveLength(100);
    expect(error).toMatchObject({
      type: 'urn:postdate:problem:payload-too-large',
      status: 413,
      exit_code: 1,
      unanswered_from_line: 101,
      maybe_stored_through_line: null,
    });
  });

  it('a batch that gets no answer may be stored: the error says which lines, and exit 3', async () => {
    const { client } = await clientOnHarness(async (n) => {
      if (n === 2)
        throw new TypeError('fetch failed', {
          cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }),
        });
    });
    const out = memoryOutput({ json: true });
    const { results, error } = await stream(messagesEnqueue(client, { text: lines(150) }, out), out);
    expect(results).toHaveLength(100);
    expect(error).toMatchObject({
      type: 'urn:postdate:cli:unreachable',
      exit_code: 3,
      unanswered_from_line: 101,
      maybe_stored_through_line: 150,
    });
  });
});
