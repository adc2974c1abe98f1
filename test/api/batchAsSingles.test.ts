/**
 * A batch answers item by item what single enqueues of its items would (DESIGN §3a, §4): generated
 * batches of a few item shapes — new, replayed, reused keys, keys repeated inside the batch, refused
 * (400, 413, 422), templated, grouped, with attachments, at the simulator, for a suppressed address,
 * on a live key and a test key — sent once as a batch and once as single POST /v1/messages in request
 * order, each on its own fresh table with the same clock, template and suppression. Replaying the
 * whole batch is compared with sending the singles again. And one body bound: a body is held to
 * 256 KiB by its JSON alone and in a batch alike, however its client escaped it on the wire.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import type { ApiEvent } from '../../lambdas/api/createApiHandler.js';
import { batchItemProblem } from '../../lambdas/core/batchEnqueueSchema.js';
import type { ProblemDetails } from '../../lambdas/core/problem.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

/** A bucket each for the batch's api and the singles' api: their messages have the same ids. */
const buckets: S3Emulator[] = [];
beforeAll(async () => {
  for (const side of ['batch', 'singles']) {
    buckets.push(await startS3Emulator({ port: 0, bucket: `${side}-${randomBytes(4).toString('hex')}` }));
  }
});
afterAll(async () => {
  for (const bucket of buckets) await bucket.stop();
});

interface Answer {
  status: number;
  replayed: boolean;
  message?: unknown;
  /** The whole problem: type, title, status, detail and fields named under the item. */
  problem?: unknown;
}

/** Item shapes, each an enqueue body; some differ only in a field, so a shared key becomes a reuse. */
const SHAPES: readonly Record<string, unknown>[] = [
  validBody(),
  validBody({ subject: 'Another subject' }),
  validBody({ delay_seconds: 600 }),
  validBody({ to: ['not an address'] }),
  validBody({ subject: undefined, text: undefined, html: undefined }),
  validBody({ text: 'x'.repeat(256 * 1024) }),
  validBody({ send_at: '2029-01-01T00:00:00Z' }),
  validBody({ group: { key: 'campaign:42', version: 3 } }),
  validBody({
    subject: undefined,
    text: undefined,
    html: undefined,
    template: { name: 'receipt' },
    data: { n: 7 },
  }),
  validBody({
    subject: undefined,
    text: undefined,
    html: undefined,
    template: { name: 'missing' },
    data: {},
  }),
  validBody({ attachments: [{ filename: 'a.txt', content_type: 'text/plain', content: 'aGVsbG8=' }] }),
  validBody({ to: ['bounce@simulator.postdate.test'] }),
  validBody({ to: ['gone@example.com'] }),
  validBody({
    send_at_local: '2026-12-03T09:00',
    time_zone: 'Europe/Berlin',
    quiet_hours: { start: '21:00', end: '08:00' },
  }),
];

/** Keys drawn from a small pool so that keys repeat inside a batch and meet the one stored before. */
const KEYS = ['k-0', 'k-1', 'k-2', 'k-3', 'k-4', 'stored'];

/** A small deterministic generator (mulberry32), so a failing seed can be run again. */
function generator(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

function generatedBatch(seed: number): { idempotency_key: string; body: Record<string, unknown> }[] {
  const pick = generator(seed);
  return Array.from({ length: 10 }, () => ({
    idempotency_key: KEYS[pick(KEYS.length)] ?? 'k-0',
    body: SHAPES[pick(SHAPES.length)] ?? validBody(),
  }));
}

async function preparedHarness(tenant: string, bucket: S3Emulator): Promise<Harness> {
  const client = attachmentS3Client(bucket.endpoint, LOCAL_AWS);
  const api = await apiHarness({ attachments: new S3AttachmentStore({ bucket: bucket.bucket, client }) });
  const put = (path: string, routeKey: string, pathParameters: Record<string, string>, body: unknown) =>
    api.call(apiEvent({ method: 'PUT', path, routeKey, pathParameters, tenant, body }));
  const template = await put(
    '/v1/templates/receipt',
    'PUT /v1/templates/{name}',
    { name: 'receipt' },
    {
      subject: 'Receipt {{n}}',
      text: 'n = {{n}}',
    },
  );
  expect(template.status).toBe(201);
  const suppressed = await put(
    '/v1/suppressions/gone%40example.com',
    'PUT /v1/suppressions/{address}',
    { address: 'gone@example.com' },
    {},
  );
  expect(suppressed.status).toBeLessThan(300);
  expect((await api.call(single(tenant, 'stored', validBody()))).status).toBe(202);
  return api;
}

function single(tenant: string, key: string, body: unknown): ApiEvent {
  return apiEvent({
    method: 'POST',
    path: '/v1/messages',
    routeKey: 'POST /v1/messages',
    tenant,
    headers: { 'idempotency-key': key },
    body,
  });
}

async function singleAnswers(api: Harness, tenant: string, items: ReturnType<typeof generatedBatch>) {
  const answers: Answer[] = [];
  for (const [index, item] of items.entries()) {
    const response = await api.call(single(tenant, item.idempotency_key, item.body));
    const ok = response.status < 300;
    answers.push({
      status: response.status,
      replayed: response.headers['idempotent-replayed'] === 'true',
      ...(ok
        ? { message: response.json }
        : { problem: batchItemProblem(index, response.json as unknown as ProblemDetails) }),
    });
  }
  return answers;
}

async function batchAnswers(api: Harness, tenant: string, items: ReturnType<typeof generatedBatch>) {
  const messages = items.map((item) => ({ idempotency_key: item.idempotency_key, ...item.body }));
  const response = await api.call(
    apiEvent({
      method: 'POST',
      path: '/v1/messages/batch',
      routeKey: 'POST /v1/messages/batch',
      tenant,
      body: { messages },
    }),
  );
  expect(response.status).toBe(200);
  const results = response.json.results as {
    index: number;
    status: number;
    replayed?: boolean;
    message?: unknown;
    problem?: unknown;
  }[];
  expect(results.map((result) => result.index)).toEqual(items.map((_, index) => index));
  return results.map(
    (result): Answer => ({
      status: result.status,
      replayed: result.replayed === true,
      ...(result.status < 300 ? { message: result.message } : { problem: result.problem }),
    }),
  );
}

describe('a batch item answers what a single enqueue of it would', () => {
  it.each([
    ['acme', 1],
    ['acme', 2],
    ['acme', 3],
    ['acme', 6],
    ['acme.test', 4],
    ['acme.test', 5],
    ['acme.test', 9],
  ])('on %s, generated batch %i, sent and then replayed whole', async (tenant, seed) => {
    const items = generatedBatch(seed);
    const [forBatch, forSingles] = buckets;
    if (forBatch === undefined || forSingles === undefined) throw new Error('no buckets');
    const [asBatch, asSingles] = await Promise.all([
      preparedHarness(tenant, forBatch),
      preparedHarness(tenant, forSingles),
    ]);

    expect(await batchAnswers(asBatch, tenant, items)).toEqual(await singleAnswers(asSingles, tenant, items));
    expect(await batchAnswers(asBatch, tenant, items)).toEqual(await singleAnswers(asSingles, tenant, items));
  });
});

describe('the 256 KiB bound of a body', () => {
  it('is measured on its JSON alike alone and as a batch item, inline attachments off or on', async () => {
    // 200 KiB of text as JSON, over 256 KiB on the wire: a client that escapes every `é` as `\u00e9`.
    const text = 'é'.repeat(100 * 1024);
    const escaped = JSON.stringify({ ...validBody(), text }).replaceAll('é', '\\u00e9');
    for (const inlineAttachmentMaxKb of [0, 3072]) {
      const api = await apiHarness({ inlineAttachmentMaxKb });
      const alone = await api.call(single('acme', `alone-${inlineAttachmentMaxKb}`, escaped));
      const batch = await api.call(
        apiEvent({
          method: 'POST',
          path: '/v1/messages/batch',
          routeKey: 'POST /v1/messages/batch',
          body: { messages: [{ idempotency_key: `item-${inlineAttachmentMaxKb}`, ...validBody(), text }] },
        }),
      );
      const [item] = batch.json.results as { status: number }[];
      expect([inlineAttachmentMaxKb, alone.status]).toEqual([inlineAttachmentMaxKb, item?.status]);
      expect(alone.status).toBe(202);
    }
  });
});
