/**
 * The enqueue's promises over generated requests, judged by DESIGN alone (§3, §3a, §4, §10, §13, §14,
 * §16) and docs/api.md "Idempotency", against the real api handler on DynamoDB Local and the S3
 * emulator. Each run uses fresh keys; "changes nothing" is read from the outside — the table's items,
 * the listing, the bucket's objects, and the same key enqueued again with a valid body.
 *
 * - the same key and an equivalent body (key order, whitespace, `null` or the default for an absent
 *   field, trimmed addresses, another offset for the same instant, `09:00` for `09:00:00`, a retry a
 *   little later) replays: 200, the very message, `Idempotent-Replayed: true`, nothing written;
 * - the same key and another body is a 422 that leaves every record of the original as it was;
 * - an invalid request is problem+json naming its field and stores nothing: no message, no key taken
 *   (the same key with a valid body afterwards is a fresh 202), no attachment bytes;
 * - one key under two tenants, or on a tenant's live and test sides, names two messages;
 * - a batch's items answer as single enqueues would, in order; permissive stores exactly the valid
 *   ones, strict none when one is invalid (400 naming each failing index) and all otherwise; its
 *   items and single enqueues of the same key replay each other.
 */
import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import type { ApiEvent } from '../../lambdas/api/createApiHandler.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;
type Body = Record<string, unknown>;

const REUSED = 'urn:postdate:problem:idempotency-key-reused';
const TENANTS = ['acme', 'globex', 'acme.test'] as const;
/** The harness's clock starts here; every generated time is far enough ahead that a later replay keeps it valid. */
const BASE = Date.parse('2026-11-29T18:00:00.000Z');
const DAY = 86_400_000;

let emulator: S3Emulator;
let s3: S3Client;
let api: Harness;
let keyCounter = 0;
/** A key no earlier run used. */
const freshKey = (label: string) => `${label}-${++keyCounter}-${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `rules-${randomBytes(4).toString('hex')}` });
  s3 = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
});
/** A table of its own for each property, so that reading "everything" stays small. */
beforeEach(async () => {
  api = await apiHarness({ attachments: new S3AttachmentStore({ bucket: emulator.bucket, client: s3 }) });
  for (const tenant of TENANTS) {
    const put = await api.call(
      apiEvent({
        method: 'PUT',
        path: '/v1/templates/receipt',
        routeKey: 'PUT /v1/templates/{name}',
        pathParameters: { name: 'receipt' },
        tenant,
        body: { subject: 'Receipt {{n}}', text: 'n = {{n}}' },
      }),
    );
    expect(put.status).toBe(201);
  }
});
afterAll(async () => {
  await emulator?.stop();
});

// ─── Generators

const mailbox = fc.constantFrom(
  'ada@example.com',
  'Ada Lovelace <ada@example.com>',
  '"Lovelace, Ada" <ada.l@example.com>',
  'bob+tag@example.org',
  'Carol <carol@bücher.de>',
  "o'brien@example.net",
);
const line = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 ,.!?-]{0,30}$/);
const iso = (ms: number) => new Date(ms).toISOString();

/** How the send time is asked: not at all, `send_at`, `delay_seconds` or a local time in a zone. */
const sendTime = fc.oneof(
  fc.constant({}),
  fc
    .integer({ min: 2 * DAY, max: 300 * DAY })
    .map((ahead) => ({ send_at: iso(BASE + ahead - (ahead % 1000)) })),
  // A past send_at means now (DESIGN §3).
  fc.integer({ min: 1000, max: DAY }).map((ago) => ({ send_at: iso(BASE - ago - (ago % 1000)) })),
  // Up to the horizon itself: a replay a little later is past it, and still a replay (docs/api.md).
  fc
    .oneof(fc.integer({ min: 0, max: 30 * 86_400 }), fc.constant(400 * 86_400))
    .map((seconds) => ({ delay_seconds: seconds })),
  fc.integer({ min: 2, max: 300 }).map((days) => ({
    send_at: iso(BASE + days * DAY),
    time_zone: 'Europe/Berlin',
    quiet_hours: { start: '21:30', end: '06:45' },
  })),
  fc
    .record({
      day: fc.integer({ min: 3, max: 200 }),
      hour: fc.integer({ min: 0, max: 23 }),
      zone: fc.constantFrom('Europe/Berlin', 'America/New_York', 'Asia/Tokyo', 'UTC'),
      quiet: fc.boolean(),
    })
    .map(({ day, hour, zone, quiet }) => ({
      send_at_local: `${iso(BASE + day * DAY).slice(0, 10)}T${String(hour).padStart(2, '0')}:00`,
      time_zone: zone,
      ...(quiet ? { quiet_hours: { start: '22:00', end: '07:00' } } : {}),
    })),
);

/** A deadline after any send time the body asks for. */
function deadlineAfter(body: Body): string {
  if (typeof body.send_at === 'string') return iso(Date.parse(body.send_at) + 3 * DAY);
  if (typeof body.delay_seconds === 'number') return iso(BASE + body.delay_seconds * 1000 + 3 * DAY);
  return iso(BASE + 250 * DAY);
}

const content = fc.oneof(
  fc
    .record({
      subject: line,
      text: fc.option(line, { nil: undefined }),
      html: fc.option(line, { nil: undefined }),
    })
    .map(({ subject, text, html }) => ({
      subject,
      ...(text === undefined && html === undefined ? { text: 'Hello.' } : {}),
      ...(text === undefined ? {} : { text }),
      ...(html === undefined ? {} : { html: `<p>${html}</p>` }),
    })),
  fc
    .record({
      version: fc.constantFrom(undefined, 1),
      n: fc.integer({ min: 0, max: 999 }),
      extra: fc.boolean(),
    })
    .map(({ version, n, extra }) => ({
      template: { name: 'receipt', ...(version === undefined ? {} : { version }) },
      data: extra ? { n, note: 'kept' } : { n },
    })),
);

/** A valid enqueue body with a varying set of optional fields. */
const validBodies: fc.Arbitrary<Body> = fc
  .record(
    {
      to: fc.array(mailbox, { minLength: 1, maxLength: 3 }),
      cc: fc.array(mailbox, { minLength: 1, maxLength: 2 }),
      bcc: fc.array(mailbox, { minLength: 1, maxLength: 2 }),
      from: fc.constantFrom('Ops <ops@example.com>', 'billing@example.com'),
      reply_to: mailbox,
      headers: fc.record({ 'X-Campaign': fc.stringMatching(/^[0-9]{1,4}$/) }),
      group: fc.record({
        key: fc.constantFrom('campaign:1', 'campaign:2'),
        version: fc.integer({ min: 1, max: 5 }),
      }),
      on_ambiguous: fc.constantFrom('retry', 'hold'),
      tags: fc.record({ kind: fc.constantFrom('receipt', 'notice') }),
      metadata: fc.record({ order: fc.stringMatching(/^[0-9]{1,6}$/) }),
      attachments: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => [
        {
          filename: 'note.txt',
          content_type: 'text/plain',
          content: Buffer.from(bytes).toString('base64'),
        },
      ]),
      deadline: fc.constant(true),
    },
    { requiredKeys: ['to'] },
  )
  .chain((fields) =>
    fc.tuple(content, sendTime).map(([message, time]) => {
      const { deadline, ...rest } = fields;
      const body: Body = { ...rest, ...message, ...time };
      if (deadline) body.not_after = deadlineAfter(body);
      return body;
    }),
  );

/** The same request spelled otherwise, as docs/api.md "Idempotency" says it stays the same. */
function respelled(
  body: Body,
  choices: { nulls: boolean; defaults: boolean; pad: boolean; offset: boolean; seconds: boolean },
): Body {
  const out: Body = { ...body };
  const pad = (address: unknown) => (choices.pad ? `  ${String(address)} ` : address);
  for (const field of ['to', 'cc', 'bcc'] as const) {
    if (Array.isArray(out[field])) out[field] = (out[field] as unknown[]).map(pad);
  }
  if (typeof out.reply_to === 'string') out.reply_to = pad(out.reply_to);
  if (typeof out.from === 'string') out.from = pad(out.from);
  if (choices.nulls) {
    if (out.template !== null && typeof out.template === 'object' && !('version' in out.template))
      out.template = { ...out.template, version: null };
    for (const field of ['reply_to', 'not_after', 'group', 'send_at', 'cc', 'bcc', 'tags', 'metadata']) {
      if (!(field in out) && !(field === 'send_at' && ('send_at_local' in out || 'delay_seconds' in out)))
        out[field] = null;
    }
  }
  if (choices.defaults) {
    out.on_ambiguous ??= 'retry';
    out.from ??= 'postdate@example.com';
    out.cc ??= [];
    out.bcc ??= [];
    out.headers ??= {};
    out.tags ??= {};
    out.metadata ??= {};
    out.attachments ??= [];
    if (out.template !== undefined) out.data ??= {};
  }
  if (choices.offset && typeof out.send_at === 'string') {
    // The same instant at +05:30, with milliseconds.
    const at = new Date(Date.parse(out.send_at) + 5.5 * 3_600_000).toISOString().slice(0, 23);
    out.send_at = `${at}+05:30`;
  }
  if (choices.seconds && typeof out.send_at_local === 'string') out.send_at_local = `${out.send_at_local}:00`;
  if (out.data !== null && typeof out.data === 'object')
    out.data = Object.fromEntries(Object.entries(out.data as Body).reverse());
  return Object.fromEntries(Object.entries(out).reverse());
}

const respellings = fc.record({
  nulls: fc.boolean(),
  defaults: fc.boolean(),
  pad: fc.boolean(),
  offset: fc.boolean(),
  seconds: fc.boolean(),
  indent: fc.constantFrom(0, 2, '\t'),
  laterMs: fc.integer({ min: 0, max: 60_000 }),
});

/** A change that makes another request (still a valid one) of `body`. */
const changes: fc.Arbitrary<{ name: string; apply: (body: Body) => Body }> = fc.constantFrom(
  { name: 'another recipient', apply: (b) => ({ ...b, to: [...(b.to as string[]), 'zed@example.com'] }) },
  { name: 'a display name on a recipient', apply: (b) => ({ ...b, to: ['Zed <zed@example.com>'] }) },
  {
    name: 'the recipients as cc',
    apply: (b) => ({ ...b, to: [], cc: [...((b.cc as string[]) ?? []), ...(b.to as string[])] }),
  },
  {
    name: 'another sender',
    apply: (b) => ({ ...b, from: b.from === 'alt@example.com' ? 'x@example.com' : 'alt@example.com' }),
  },
  {
    name: 'other content',
    apply: (b) =>
      b.template === undefined
        ? { ...b, subject: `${String(b.subject)}!` }
        : { ...b, data: { ...(b.data as Body), n: Number((b.data as Body).n) + 1 } },
  },
  {
    name: 'another header value',
    apply: (b) => ({ ...b, headers: { ...(b.headers as Body), 'X-Other': '1' } }),
  },
  { name: 'another tag', apply: (b) => ({ ...b, tags: { ...(b.tags as Body), extra: 'x' } }) },
  { name: 'other metadata', apply: (b) => ({ ...b, metadata: { ...(b.metadata as Body), extra: 'x' } }) },
  {
    name: 'the other ambiguity policy',
    apply: (b) => ({ ...b, on_ambiguous: b.on_ambiguous === 'hold' ? 'retry' : 'hold' }),
  },
  {
    name: 'another group version',
    apply: (b) => ({
      ...b,
      group: { key: 'campaign:9', version: ((b.group as { version?: number })?.version ?? 0) + 1 },
    }),
  },
  {
    name: 'another deadline',
    apply: (b) => ({ ...b, not_after: iso(Date.parse(deadlineAfter(b)) + 1000) }),
  },
  {
    name: 'the same file name with other bytes',
    apply: (b) => {
      const bytes = Buffer.from(
        String((b.attachments as { content: string }[] | undefined)?.[0]?.content ?? ''),
        'base64',
      );
      return {
        ...b,
        attachments: [
          {
            filename: 'note.txt',
            content_type: 'text/plain',
            content: Buffer.concat([bytes, Buffer.from('!')]).toString('base64'),
          },
        ],
      };
    },
  },
  {
    name: 'another send time',
    apply: (b) => {
      if (typeof b.send_at === 'string') return { ...b, send_at: iso(Date.parse(b.send_at) + 1000) };
      if (typeof b.delay_seconds === 'number')
        return { ...b, delay_seconds: b.delay_seconds === 0 ? 1 : b.delay_seconds - 1 };
      if (typeof b.send_at_local === 'string')
        return {
          ...b,
          send_at_local:
            b.send_at_local.replace(/T\d\d/, 'T23') === b.send_at_local
              ? b.send_at_local.replace(/T\d\d/, 'T22')
              : b.send_at_local.replace(/T\d\d/, 'T23'),
        };
      return { ...b, send_at: iso(BASE + 5 * DAY) };
    },
  },
);

interface Breakage {
  readonly name: string;
  readonly apply: (body: Body) => Body | string;
  readonly status: number;
  /** The field the problem names, as a JSON Pointer prefix. */
  readonly field: string;
}

/** What makes a request invalid (DESIGN §3, §10, §13, §16), each with the answer it must get. */
const breakages: fc.Arbitrary<Breakage> = fc.constantFrom<Breakage>(
  { name: 'a bad address', apply: (b) => ({ ...b, to: ['not an address'] }), status: 400, field: '/to/0' },
  {
    name: 'LF in a recipient',
    apply: (b) => ({ ...b, to: ['ada@example.com\nBcc: eve@example.com'] }),
    status: 400,
    field: '/to/0',
  },
  {
    name: 'CR/LF in a header value',
    apply: (b) => ({ ...b, headers: { 'X-Campaign': '1\r\nBcc: eve@example.com' } }),
    status: 400,
    field: '/headers/X-Campaign',
  },
  {
    name: 'CR/LF in the subject',
    apply: (b) => {
      const { template: _t, data: _d, ...rest } = b;
      return { ...rest, subject: 'Hi\r\nBcc: eve@example.com', text: 'x' };
    },
    status: 400,
    field: '/subject',
  },
  {
    name: 'an unknown top-level field',
    apply: (b) => ({ ...b, priority: 'high' }),
    status: 400,
    field: '/priority',
  },
  {
    name: '51 recipients',
    apply: (b) => ({ ...b, to: Array.from({ length: 51 }, (_, i) => `r${i}@example.com`), cc: [], bcc: [] }),
    status: 400,
    field: '/to',
  },
  { name: 'no recipient', apply: (b) => ({ ...b, to: [], cc: [], bcc: [] }), status: 400, field: '/to' },
  {
    name: 'a sender not allowed',
    apply: (b) => ({ ...b, from: 'eve@evil.test' }),
    status: 400,
    field: '/from',
  },
  {
    name: 'a body over 256 KiB',
    apply: (b) => {
      const { template: _t, data: _d, html: _h, ...rest } = b;
      return { ...rest, subject: 'Big', text: 'x'.repeat(256 * 1024) };
    },
    status: 413,
    field: '',
  },
  {
    name: 'send_at past the horizon',
    apply: (b) => withTime(b, { send_at: iso(BASE + 401 * DAY) }),
    status: 400,
    field: '/send_at',
  },
  {
    name: 'delay_seconds past the horizon',
    apply: (b) => withTime(b, { delay_seconds: 401 * 86_400 }),
    status: 400,
    field: '/delay_seconds',
  },
  {
    name: 'not_after before send_at',
    apply: (b) => ({ ...withTime(b, { send_at: iso(BASE + 10 * DAY) }), not_after: iso(BASE + 9 * DAY) }),
    status: 400,
    field: '/not_after',
  },
  {
    name: 'not_after at send_at',
    apply: (b) => ({ ...withTime(b, { send_at: iso(BASE + 10 * DAY) }), not_after: iso(BASE + 10 * DAY) }),
    status: 400,
    field: '/not_after',
  },
  {
    name: 'a local time past the horizon',
    apply: (b) => withTime(b, { send_at_local: iso(BASE + 402 * DAY).slice(0, 16), time_zone: 'Asia/Tokyo' }),
    status: 400,
    field: '/send_at_local',
  },
  {
    name: 'a template and content',
    apply: (b) => ({
      ...b,
      template: { name: 'receipt' },
      data: { n: 1 },
      subject: 'Hi',
      text: 'x',
      html: undefined,
    }),
    status: 400,
    field: '/subject',
  },
  {
    name: 'an unknown time_zone',
    apply: (b) => withTime(b, { send_at_local: '2026-12-24T09:00', time_zone: 'Mars/Olympus_Mons' }),
    status: 400,
    field: '/time_zone',
  },
  {
    name: 'send_at_local without time_zone',
    apply: (b) => withTime(b, { send_at_local: '2026-12-24T09:00' }),
    status: 400,
    field: '/time_zone',
  },
  {
    name: 'quiet_hours without time_zone',
    apply: (b) =>
      withTime(b, { send_at: iso(BASE + 5 * DAY), quiet_hours: { start: '22:00', end: '07:00' } }),
    status: 400,
    field: '/time_zone',
  },
  {
    name: 'data without a template',
    apply: (b) => {
      const { template: _t, data: _d, ...rest } = b;
      return { ...rest, subject: 'Hi', text: 'x', data: { n: 1 } };
    },
    status: 400,
    field: '/data',
  },
  {
    name: 'a template the data does not render',
    apply: (b) => {
      const { subject: _s, text: _t, html: _h, ...rest } = b;
      return { ...rest, template: { name: 'receipt' }, data: { other: 1 } };
    },
    status: 422,
    field: '/data',
  },
  {
    name: 'a template that does not exist',
    apply: (b) => {
      const { subject: _s, text: _t, html: _h, ...rest } = b;
      return { ...rest, template: { name: 'nowhere' }, data: { n: 1 } };
    },
    status: 422,
    field: '/template',
  },
  {
    name: 'an executable attachment',
    apply: (b) => ({
      ...b,
      attachments: [{ filename: 'run.exe', content_type: 'application/x-msdownload', content: 'TVo=' }],
    }),
    status: 400,
    field: '/attachments/0',
  },
  {
    name: 'JSON that does not parse',
    apply: (b) => `${JSON.stringify(b).slice(0, -1)},}`,
    status: 400,
    field: '',
  },
);

/** `body` with its send time asked only as `time`. */
function withTime(body: Body, time: Body): Body {
  const {
    send_at: _a,
    delay_seconds: _d,
    send_at_local: _l,
    time_zone: _z,
    quiet_hours: _q,
    not_after: _n,
    ...rest
  } = body;
  return { ...rest, ...time };
}

// ─── Reading the store from the outside

const tenantOf = fc.constantFrom(...TENANTS);

function single(tenant: string, key: string, body: Body | string, indent: number | string = 0): ApiEvent {
  const text = typeof body === 'string' ? body : JSON.stringify(body, null, indent);
  return enqueueEvent(text, { key, tenant });
}

function batch(tenant: string, messages: Body[], mode?: 'strict' | 'permissive'): ApiEvent {
  return apiEvent({
    method: 'POST',
    path: '/v1/messages/batch',
    routeKey: 'POST /v1/messages/batch',
    tenant,
    body: { messages, ...(mode === undefined ? {} : { mode }) },
  });
}

/** Every message id the tenant's listing holds, newest first. */
async function listed(tenant: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const query: Record<string, string> = { limit: '100', ...(cursor ? { cursor } : {}) };
    const answer = await api.call(
      apiEvent({ method: 'GET', path: '/v1/messages', routeKey: 'GET /v1/messages', query, tenant }),
    );
    expect(answer.status).toBe(200);
    ids.push(...(answer.json.items as { id: string }[]).map((item) => item.id));
    cursor = answer.json.next_cursor as string | null;
    if (!cursor) return ids;
  }
  throw new Error('the listing never ended');
}

async function bucketKeys(): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket: emulator.bucket, ContinuationToken: token }),
    );
    keys.push(...(page.Contents ?? []).map((object) => object.Key ?? ''));
    token = page.NextContinuationToken;
  } while (token);
  return keys.sort();
}

/** What a test can see of everything stored: the table's items, every listing, the bucket. */
async function everything() {
  const items = (await api.scanAll()).map((item) => JSON.stringify(item)).sort();
  const lists = await Promise.all(TENANTS.map(listed));
  return { items, lists, objects: await bucketKeys() };
}

function expectProblem(
  answer: { status: number; headers: Record<string, string>; json: Body },
  status: number,
  field: string,
) {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toBe('application/problem+json');
  expect(answer.json).toMatchObject({ status, type: expect.stringMatching(/^urn:postdate:problem:/) });
  expect(typeof answer.json.title).toBe('string');
  expect(typeof answer.json.detail).toBe('string');
  const fields = ((answer.json.errors as { field: string; message: string }[] | undefined) ?? []).map(
    (error) => {
      expect(typeof error.message).toBe('string');
      return error.field;
    },
  );
  expect(fields.length).toBeGreaterThan(0);
  if (field !== '')
    expect(fields.some((named) => named === field || named.startsWith(`${field}/`))).toBe(true);
}

const RUNS = { numRuns: Number(process.env.RULES_RUNS ?? 20) };
/** A deadline, not a measure: a property takes 5–15 s here, several times that on a loaded machine. */
const PROPERTY_TIMEOUT = 240_000;

describe('one Idempotency-Key (DESIGN §3, §4; docs/api.md "Idempotency")', () => {
  it(
    'replays the same request however it is spelled: 200, the very message, nothing written',
    async () => {
      await fc.assert(
        fc.asyncProperty(validBodies, respellings, tenantOf, async (body, spelling, tenant) => {
          const key = freshKey('same');
          const first = await api.call(single(tenant, key, body));
          expect(first.status).toBe(202);
          const before = await everything();
          api.clock.advance(spelling.laterMs);
          const again = await api.call(single(tenant, key, respelled(body, spelling), spelling.indent));
          expect({ status: again.status, replayed: again.headers['idempotent-replayed'] }).toEqual({
            status: 200,
            replayed: 'true',
          });
          expect(again.json).toEqual(first.json);
          // The same request as a batch item replays it too (DESIGN §3a).
          const item = await api.call(
            batch(tenant, [{ idempotency_key: key, ...respelled(body, spelling) }]),
          );
          expect(item.json.results).toEqual([{ index: 0, status: 200, replayed: true, message: first.json }]);
          expect(await everything()).toEqual(before);
        }),
        RUNS,
      );
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'answers another request under the key 422 and leaves the original untouched in every field',
    async () => {
      await fc.assert(
        fc.asyncProperty(validBodies, changes, tenantOf, async (body, change, tenant) => {
          const key = freshKey('other');
          const first = await api.call(single(tenant, key, body));
          expect(first.status).toBe(202);
          const id = String(first.json.id);
          const shown = await api.call(getEvent(id, tenant));
          const before = await everything();
          const other = await api.call(single(tenant, key, change.apply(body)));
          expect(other.status).toBe(422);
          expect(other.json).toMatchObject({ type: REUSED, errors: [{ field: 'Idempotency-Key' }] });
          expect((await api.call(getEvent(id, tenant))).json).toEqual(shown.json);
          expect(await everything()).toEqual(before);
          expect((await api.call(single(tenant, key, body))).status).toBe(200);
        }),
        RUNS,
      );
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'keeps one key of two tenants, and of a live and a test side, apart',
    async () => {
      await fc.assert(
        fc.asyncProperty(validBodies, validBodies, async (mine, theirs) => {
          const key = freshKey('walls');
          const answers = [];
          for (const [tenant, body] of [
            ['acme', mine],
            ['globex', theirs],
            ['acme.test', theirs],
          ] as const) {
            const answer = await api.call(single(tenant, key, body));
            expect([tenant, answer.status]).toEqual([tenant, 202]);
            answers.push(answer.json);
          }
          expect(new Set(answers.map((answer) => answer.id)).size).toBe(3);
          expect(answers.map((answer) => answer.test)).toEqual([false, false, true]);
          for (const [index, tenant] of TENANTS.entries()) {
            const again = await api.call(single(tenant, key, index === 0 ? mine : theirs));
            expect([tenant, again.status, again.json]).toEqual([tenant, 200, answers[index]]);
            expect(
              (await api.call(getEvent(String(answers[index]?.id), TENANTS[(index + 1) % 3]))).status,
            ).toBe(404);
          }
        }),
        { numRuns: 15 },
      );
    },
    PROPERTY_TIMEOUT,
  );
});

describe('an invalid request (DESIGN §3 "Validation gives a clear 4xx and stores nothing")', () => {
  it(
    'is problem+json naming its field, and leaves no message, no key taken and no bytes',
    async () => {
      await fc.assert(
        fc.asyncProperty(validBodies, breakages, tenantOf, async (body, breakage, tenant) => {
          const key = freshKey('invalid');
          const before = await everything();
          const refused = await api.call(single(tenant, key, breakage.apply(body)));
          expectProblem(refused, breakage.status, breakage.field);
          expect(await everything()).toEqual(before);
          const fresh = await api.call(single(tenant, key, body));
          expect({ status: fresh.status, replayed: fresh.headers['idempotent-replayed'] }).toEqual({
            status: 202,
            replayed: undefined,
          });
        }),
        RUNS,
      );
    },
    PROPERTY_TIMEOUT,
  );
});

describe('a batch (DESIGN §3a)', () => {
  const items = fc.array(
    fc.record({ body: validBodies, breakage: fc.option(breakages, { freq: 3, nil: undefined }) }),
    { minLength: 1, maxLength: 6 },
  );

  it(
    'answers each item as a single enqueue would, in order, and stores by its mode',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          items,
          fc.constantFrom(undefined, 'permissive', 'strict'),
          tenantOf,
          async (generated, mode, tenant) => {
            // A body that does not parse cannot be a batch item: the batch is JSON as a whole.
            const cases = generated
              .filter(({ breakage }) => breakage?.name !== 'JSON that does not parse')
              .map(({ body, breakage }) => ({
                key: freshKey('item'),
                body,
                sent: (breakage === undefined ? body : breakage.apply(body)) as Body,
                breakage,
              }));
            fc.pre(cases.length > 0);
            const before = await everything();
            const answer = await api.call(
              batch(
                tenant,
                cases.map(({ key, sent }) => ({ idempotency_key: key, ...sent })),
                mode,
              ),
            );
            const invalid = cases.flatMap(({ breakage }, index) => (breakage === undefined ? [] : [index]));

            if (mode === 'strict' && invalid.length > 0) {
              expect(answer.status).toBe(400);
              const fields = (answer.json.errors as { field: string }[]).map((error) => error.field);
              const named = new Set(fields.map((field) => Number(field.split('/')[2])));
              expect([...named].sort()).toEqual(invalid);
              expect(await everything()).toEqual(before);
            } else {
              expect(answer.status).toBe(200);
              const results = answer.json.results as {
                index: number;
                status: number;
                problem?: Body;
                message?: Body;
              }[];
              expect(results.map((result) => result.index)).toEqual(cases.map((_, index) => index));
              for (const [index, { breakage }] of cases.entries()) {
                const result = results[index];
                if (breakage === undefined) {
                  expect(result?.status).toBe(202);
                } else {
                  expectProblem(
                    {
                      status: result?.status ?? 0,
                      headers: { 'content-type': 'application/problem+json' },
                      json: result?.problem ?? {},
                    },
                    breakage.status,
                    `/messages/${index}${breakage.field}`,
                  );
                }
              }
              const after = await listed(tenant);
              const stored = results
                .filter((result) => result.status === 202)
                .map((result) => String(result.message?.id));
              expect(
                after.filter((id) => !before.lists[TENANTS.indexOf(tenant)]?.includes(id)).sort(),
              ).toEqual(stored.sort());
            }

            // The same batch again: every item it stored replays (`replayed: true`), every other answers as before.
            const stored = mode !== 'strict' || invalid.length === 0;
            const replay = await api.call(
              batch(
                tenant,
                cases.map(({ key, sent }) => ({ idempotency_key: key, ...sent })),
                mode,
              ),
            );
            if (stored) {
              const first = answer.json.results as { status: number; message?: Body }[];
              const again = replay.json.results as { status: number; replayed?: boolean; message?: Body }[];
              expect(
                again.map((result) => [result.status === 202 ? 200 : result.status, result.message?.id]),
              ).toEqual(
                first.map((result) => [result.status === 202 ? 200 : result.status, result.message?.id]),
              );
              expect(again.map((result) => result.replayed === true)).toEqual(
                first.map((result) => result.status === 202),
              );
            } else {
              expect(replay.status).toBe(400);
            }

            // Each item's key afterwards, through the single route: a replay of what the batch stored, a
            // fresh enqueue where it stored nothing.
            for (const { key, body, breakage } of cases) {
              const again = await api.call(single(tenant, key, body));
              expect([key, again.status]).toEqual([key, stored && breakage === undefined ? 200 : 202]);
            }
          },
        ),
        RUNS,
      );
    },
    PROPERTY_TIMEOUT,
  );
});
