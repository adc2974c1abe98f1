/**
 * POST /v1/messages/batch (DESIGN §3a) on DynamoDB Local: each item is atomic on its own, exactly as
 * a single enqueue with its key; permissive by default, strict on request; results in request order;
 * a batch replayed after being cut mid-request enqueues nothing twice.
 */
import { describe, expect, it } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import type { ApiEvent } from '../../lambdas/api/createApiHandler.js';
import { messageIdFor } from '../../lambdas/core/ids.js';
import type { ApiStore } from '../../lambdas/ports/ApiStore.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent, validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

interface BatchResult {
  index: number;
  status: number;
  replayed?: boolean;
  message?: { id: string; send_at: string; group: unknown; status: string };
  problem?: { type: string; status: number; detail?: string; errors?: { field: string; message: string }[] };
}

function batchEvent(body: unknown): ApiEvent {
  return apiEvent({ method: 'POST', path: '/v1/messages/batch', routeKey: 'POST /v1/messages/batch', body });
}

async function sendBatch(api: Harness, body: unknown) {
  const response = await api.call(batchEvent(body));
  return { ...response, results: (response.json.results ?? []) as BatchResult[] };
}

const item = (key: string, overrides: Record<string, unknown> = {}) => ({
  idempotency_key: key,
  ...validBody(overrides),
});

/** State and body records of the given ids in the table. */
async function recordsOf(api: Harness, ids: readonly string[]) {
  const wanted = new Set(ids.map((id) => `MSG#${id}`));
  return (await api.scanAll()).filter((record) => wanted.has(String(record.pk)));
}

describe('POST /v1/messages/batch', () => {
  it('enqueues every valid item in permissive mode and reports the others, each as a single enqueue would', async () => {
    const api = await apiHarness();
    expect((await api.call(enqueueEvent(validBody(), { key: 'pre-same' }))).status).toBe(202);
    expect((await api.call(enqueueEvent(validBody(), { key: 'pre-other' }))).status).toBe(202);

    const response = await sendBatch(api, {
      messages: [
        item('new-at', { send_at: '2026-12-01T09:00:00Z' }),
        item('invalid', { to: [] }),
        item('pre-same'),
        item('pre-other', { subject: 'Another subject' }),
        item('new-delay', { delay_seconds: 600 }),
        item('new-group', { group: { key: 'campaign:42', version: 3 } }),
        { ...validBody() },
      ],
    });

    expect(response.status).toBe(200);
    expect(response.results.map((result) => [result.index, result.status])).toEqual([
      [0, 202],
      [1, 400],
      [2, 200],
      [3, 422],
      [4, 202],
      [5, 202],
      [6, 400],
    ]);
    const [at, invalid, replay, reused, delayed, grouped, keyless] = response.results;
    expect(at?.message?.id).toBe(messageIdFor('acme', 'new-at'));
    expect(at?.replayed).toBe(false);
    expect(at?.message?.send_at).toBe('2026-12-01T09:00:00.000Z');
    expect(invalid?.problem?.type).toBe('urn:postdate:problem:validation');
    expect(invalid?.problem?.errors?.every((error) => error.field.startsWith('/messages/1/'))).toBe(true);
    expect(replay?.replayed).toBe(true);
    expect(replay?.message?.id).toBe(messageIdFor('acme', 'pre-same'));
    expect(reused?.problem?.type).toBe('urn:postdate:problem:idempotency-key-reused');
    expect(reused?.problem?.errors).toEqual([
      { field: '/messages/3/idempotency_key', message: 'was already used with a different body' },
    ]);
    expect(delayed?.message?.send_at).toBe('2026-11-29T18:10:00.000Z');
    expect(grouped?.message?.group).toEqual({ key: 'campaign:42', version: 3 });
    expect(keyless?.problem?.errors).toEqual([
      { field: '/messages/6/idempotency_key', message: 'is required' },
    ]);

    // What was stored is what a GET reads; what was refused is not stored.
    const stored = await api.call(getEvent(messageIdFor('acme', 'new-delay')));
    expect(stored.status).toBe(200);
    expect((await api.call(getEvent(messageIdFor('acme', 'invalid')))).status).toBe(404);
    const original = await api.call(getEvent(messageIdFor('acme', 'pre-other')));
    expect(original.json.rev).toBe(1);
  });

  it('in strict mode enqueues nothing when one item is invalid, and names each failing item', async () => {
    const api = await apiHarness();
    const before = await api.scanAll();
    const messages = [
      item('s-0'),
      item('s-1', { to: ['not an address'] }),
      item('s-2'),
      item('s-3', { subject: undefined, text: undefined, html: undefined }),
    ];

    const response = await sendBatch(api, { messages, mode: 'strict' });

    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe('application/problem+json');
    const fields = (response.json.errors as { field: string }[]).map((error) => error.field);
    expect(fields.some((field) => field.startsWith('/messages/1/'))).toBe(true);
    expect(fields.some((field) => field.startsWith('/messages/3/'))).toBe(true);
    expect(fields.every((field) => /^\/messages\/[13]\//.test(field))).toBe(true);
    expect(await api.scanAll()).toEqual(before);

    const valid = await sendBatch(api, { messages: [item('s-0'), item('s-2')], mode: 'strict' });
    expect(valid.results.map((result) => result.status)).toEqual([202, 202]);
  });

  it('answers 100 items in request order, each under the id of its own key', async () => {
    const api = await apiHarness();
    const messages = Array.from({ length: 100 }, (_, i) =>
      item(`order-${i}`, i % 2 === 0 ? { delay_seconds: 60 + i } : { send_at: '2026-12-02T09:00:00Z' }),
    );

    const response = await sendBatch(api, { messages });

    expect(response.status).toBe(200);
    expect(response.results).toHaveLength(100);
    response.results.forEach((result, i) => {
      expect(result.index).toBe(i);
      expect(result.status).toBe(202);
      expect(result.message?.id).toBe(messageIdFor('acme', `order-${i}`));
    });
    const ids = messages.map((_, i) => messageIdFor('acme', `order-${i}`));
    // One item each: a small body is inside its state record (docs/data-model.md).
    expect(await recordsOf(api, ids)).toHaveLength(100);
  });

  it('enqueues nothing twice when a batch cut mid-request is replayed whole: the same ids, every item once', async () => {
    // 30 puts for 20 items of two puts each: some items are written, some not, some only their body.
    let putsLeft = 30;
    const api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          putNew: async (record: Parameters<ApiStore['putNew']>[0]) => {
            if (putsLeft-- <= 0) throw new Error('injected: the store is gone');
            return store.putNew(record);
          },
        }),
    });
    // Bodies too large to go inside their state records: two puts an item (docs/data-model.md).
    const messages = Array.from({ length: 20 }, (_, i) =>
      item(`cut-${i}`, { delay_seconds: 300, text: mailText(20 * 1024) }),
    );
    const ids = messages.map((_, i) => messageIdFor('acme', `cut-${i}`));

    const cut = await sendBatch(api, { messages });
    expect(cut.status).toBe(200);
    const written = cut.results.filter((result) => result.status === 202);
    const failed = cut.results.filter((result) => result.status === 500);
    expect(written.length).toBeGreaterThan(0);
    expect(failed.length).toBeGreaterThan(0);
    expect(written.length + failed.length).toBe(20);
    expect(failed[0]?.problem?.type).toBe('urn:postdate:problem:internal');

    putsLeft = Number.POSITIVE_INFINITY;
    const replay = await sendBatch(api, { messages });
    expect(replay.results.map((result) => result.message?.id)).toEqual(ids);
    for (const result of written) {
      expect(replay.results[result.index]).toMatchObject({ status: 200, replayed: true });
      expect(replay.results[result.index]?.message?.id).toBe(result.message?.id);
    }
    for (const result of failed) expect(replay.results[result.index]?.status).toBe(202);
    // One state record and one body per item, nothing more.
    const records = await recordsOf(api, ids);
    expect(records.filter((record) => record.sk === 'STATE')).toHaveLength(20);
    expect(records.filter((record) => record.sk === 'BODY')).toHaveLength(20);

    const again = await sendBatch(api, { messages });
    expect(again.results.every((result) => result.status === 200 && result.replayed === true)).toBe(true);
    expect(await recordsOf(api, ids)).toHaveLength(40);
  });

  it('answers 500 when no item could be written, and the replay then enqueues each item once', async () => {
    let failing = true;
    const api = await apiHarness({
      wrapStore: (store) =>
        Object.assign(Object.create(store) as ApiStore, {
          putNew: async (record: Parameters<ApiStore['putNew']>[0]) => {
            if (failing && record.sk === 'STATE') throw new Error('injected: the store is gone');
            return store.putNew(record);
          },
        }),
    });
    const messages = Array.from({ length: 5 }, (_, i) => item(`gone-${i}`));
    const cut = await sendBatch(api, { messages });
    expect(cut.status).toBe(500);
    failing = false;
    const replay = await sendBatch(api, { messages });
    expect(replay.results.map((result) => result.status)).toEqual([202, 202, 202, 202, 202]);
    const ids = messages.map((_, i) => messageIdFor('acme', `gone-${i}`));
    expect(await recordsOf(api, ids)).toHaveLength(5);
  });

  it('refuses 101 items, an empty list and an unknown mode with a 400 naming the field, storing nothing', async () => {
    const api = await apiHarness();
    const before = await api.scanAll();
    const tooMany = await sendBatch(api, {
      messages: Array.from({ length: 101 }, (_, i) => item(`many-${i}`)),
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.errors).toEqual([expect.objectContaining({ field: '/messages' })]);
    const empty = await sendBatch(api, { messages: [] });
    expect(empty.status).toBe(400);
    expect(empty.json.errors).toEqual([expect.objectContaining({ field: '/messages' })]);
    const mode = await sendBatch(api, { messages: [item('m-1')], mode: 'lenient' });
    expect(mode.status).toBe(400);
    expect(mode.json.errors).toEqual([expect.objectContaining({ field: '/mode' })]);
    expect(await api.scanAll()).toEqual(before);
  });

  it('answers a key given twice in one batch as two single enqueues in order: a replay, or a 422 for another body; an item over 256 KiB its own 413', async () => {
    const api = await apiHarness();
    const messages = [
      item('twice'),
      item('twice'),
      item('big', { text: 'x'.repeat(256 * 1024) }),
      item('other', { delay_seconds: 60 }),
      item('other', { delay_seconds: 120 }),
    ];
    const response = await sendBatch(api, { messages });
    expect(response.results.map((result) => [result.status, result.replayed])).toEqual([
      [202, false],
      [200, true],
      [413, undefined],
      [202, false],
      [422, undefined],
    ]);
    const [first, second, big, , reused] = response.results;
    expect(second?.message).toEqual(first?.message);
    expect(big?.problem?.type).toBe('urn:postdate:problem:payload-too-large');
    expect(reused?.problem?.type).toBe('urn:postdate:problem:idempotency-key-reused');
    expect(reused?.problem?.errors).toEqual([
      { field: '/messages/4/idempotency_key', message: 'was already used with a different body' },
    ]);
    const stored = await api.call(getEvent(messageIdFor('acme', 'other')));
    expect(stored.json.send_at).toBe('2026-11-29T18:01:00.000Z');

    const replay = await sendBatch(api, { messages });
    expect(replay.results.map((result) => result.status)).toEqual([200, 200, 413, 200, 422]);
    expect(replay.results[0]?.message).toEqual(first?.message);
  });

  it("answers an item without a usable key with the single enqueue's own problem type, its field under the item", async () => {
    const api = await apiHarness();
    const single = await api.call(enqueueEvent(validBody(), { key: '' }));
    const response = await sendBatch(api, {
      messages: [{ ...validBody() }, { ...validBody(), idempotency_key: 'bad\nkey' }],
    });
    expect(response.results.map((result) => [result.status, result.problem?.type])).toEqual([
      [400, single.json.type],
      [400, 'urn:postdate:problem:idempotency-key-invalid'],
    ]);
    expect(response.results[1]?.problem?.errors).toEqual([
      { field: '/messages/1/idempotency_key', message: 'must be 1–255 printable ASCII characters' },
    ]);
  });

  it('answers an item over 256 KiB without a usable key as the single enqueue of it does: its 413, the body read before the key', async () => {
    const api = await apiHarness();
    const big = validBody({ text: 'x'.repeat(256 * 1024) });
    const singles = [
      await api.call(enqueueEvent(big, { key: null })),
      await api.call(enqueueEvent(big, { key: 'bad\nkey' })),
    ];
    const response = await sendBatch(api, {
      messages: [{ ...big }, { ...big, idempotency_key: 'bad\nkey' }],
    });
    expect(response.results.map((result) => [result.status, result.problem?.type])).toEqual(
      singles.map((single) => [single.status, single.json.type]),
    );
  });

  it("names an item's fields in its problem's detail as its errors do, under the item (/messages/2/to, not /to)", async () => {
    const api = await apiHarness();
    const response = await sendBatch(api, {
      messages: [
        item('d-0'),
        item('d-1', { send_at_local: '2026-12-03T09:00', time_zone: 'Mars/Base' }),
        item('d-2', { to: ['not an address'], subject: 'a\r\nBcc: x@example.com' }),
      ],
    });
    const [, zone, two] = response.results;
    expect(zone?.problem?.errors?.map((error) => error.field)).toEqual(['/messages/1/time_zone']);
    expect(zone?.problem?.detail).toBe('One field is invalid: /messages/1/time_zone.');
    expect(two?.problem?.detail).toBe(
      `2 fields are invalid: ${two?.problem?.errors?.map((error) => error.field).join(', ')}.`,
    );
    expect(two?.problem?.detail).not.toMatch(/ \/to/);
  });

  it('takes an item of exactly 256 KiB and a body of exactly 2 MiB; one byte more is the item’s 413, or the whole body’s 413 storing nothing', async () => {
    const api = await apiHarness();
    /** An item whose body without its key is `bytes` of JSON, the measure of a single enqueue. */
    const sized = (key: string, bytes: number) => {
      const pad = bytes - Buffer.byteLength(JSON.stringify(validBody({ text: '' })));
      return item(key, { text: 'x'.repeat(pad) });
    };
    const items = await sendBatch(api, {
      messages: [sized('at-256k', 256 * 1024), sized('over-256k', 256 * 1024 + 1)],
    });
    expect(items.results.map((result) => result.status)).toEqual([202, 413]);
    expect(items.results[1]?.problem?.errors).toEqual([
      { field: '/messages/1', message: 'must be at most 262144 bytes' },
    ]);

    // Nine items of about 228 KiB; the last one's text fills the body to the exact bound.
    const body = (extra: number, prefix: string) => {
      const messages = Array.from({ length: 9 }, (_, i) => sized(`${prefix}-${i}`, 228 * 1024));
      const short = 2 * 1024 * 1024 - Buffer.byteLength(JSON.stringify({ messages })) + extra;
      messages[8] = sized(`${prefix}-8`, 228 * 1024 + short);
      return JSON.stringify({ messages });
    };
    const exact = body(0, 'exact');
    expect(Buffer.byteLength(exact)).toBe(2 * 1024 * 1024);
    const atBound = await api.call(batchEvent(exact));
    expect(atBound.status).toBe(200);
    expect((atBound.json.results as BatchResult[]).map((result) => result.status)).toEqual(
      Array(9).fill(202),
    );

    const before = await api.scanAll();
    const over = body(1, 'over');
    expect(Buffer.byteLength(over)).toBe(2 * 1024 * 1024 + 1);
    const overBound = await api.call(batchEvent(over));
    expect(overBound.status).toBe(413);
    expect(overBound.json.errors).toEqual([{ field: 'body', message: 'must be at most 2097152 bytes' }]);
    expect(await api.scanAll()).toEqual(before);
  });

  it('refuses a body over the batch bound with a 413', async () => {
    const api = await apiHarness();
    const text = 'x'.repeat(200 * 1024);
    const messages = Array.from({ length: 11 }, (_, i) => item(`large-${i}`, { text }));
    const response = await sendBatch(api, { messages });
    expect(response.status).toBe(413);
    expect(response.json.type).toBe('urn:postdate:problem:payload-too-large');
  });
});
