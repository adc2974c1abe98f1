/**
 * Templates as a team uses them that edits its order templates weekly while mail is queued (DESIGN
 * §3, §10; decision 0251), through the api handler on DynamoDB Local, every answer checked against
 * the OpenAPI document: many versions stored at once, the bounds of a stored template at the byte, a
 * name the data only inherits, an archive and a new version after it. Covers routes/templates.ts,
 * core/templateRequests.ts, core/templateSyntax.ts and store/templateStore.ts; the sender's side (a
 * queued message sends its pinned version, after an archive too) is test/sender/templates.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

const putTemplate = (name: string, body: unknown) =>
  apiEvent({ method: 'PUT', path: `/v1/templates/${name}`, body });

const order = (template: Record<string, unknown>, data: unknown) => ({
  to: ['ada@example.com'],
  from: 'Ops <ops@example.com>',
  template,
  data,
});

describe('templates while mail is queued', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  it('gives twelve PUTs at once twelve numbers or a 503 that stored nothing: none lost, none shared', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        api.call(putTemplate('busy', { subject: `S${i}`, text: `T${i}` })),
      ),
    );
    for (const result of results) expect([201, 503]).toContain(result.status);
    const created = results.filter((result) => result.status === 201);
    for (const result of results.filter((r) => r.status === 503)) {
      expect(result.headers['retry-after']).toBe('1');
      expect(result.headers['content-type']).toBe('application/problem+json');
    }
    // The numbers are 1..n without a gap: a 503 took none.
    const versions = created.map((result) => Number(result.json.version)).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: created.length }, (_, i) => i + 1));
    const head = await api.call(apiEvent({ method: 'GET', path: '/v1/templates/busy' }));
    expect(head.json.latest_version).toBe(created.length);
    // Each number holds what its own PUT sent.
    for (const result of created) {
      const stored = await api.call(
        apiEvent({ method: 'GET', path: `/v1/templates/busy/versions/${result.json.version}` }),
      );
      expect(stored.json).toMatchObject({ subject: result.json.subject, text: result.json.text });
    }
    const none = await api.call(
      apiEvent({ method: 'GET', path: `/v1/templates/busy/versions/${created.length + 1}` }),
    );
    expect(none.status).toBe(404);
  });

  // The limits as docs/openapi.json publishes them (`maxLength`), written out so that a change to
  // one is a change a test sees.
  it.each([
    ['subject', 2000, '/subject'],
    ['description', 500, '/description'],
  ])('holds %s to its limit at the character, naming it, storing nothing', async (part, limit, field) => {
    const name = `limit-${part}`;
    const ok = await api.call(putTemplate(name, { subject: 's', text: 't', [part]: 'x'.repeat(limit) }));
    expect(ok.status).toBe(201);
    const refused = await api.call(
      putTemplate(name, { subject: 's', text: 't', [part]: 'x'.repeat(limit + 1) }),
    );
    expect(refused.status).toBe(400);
    expect(refused.json.errors).toEqual([{ field, message: `must be at most ${limit} characters` }]);
    expect((await api.call(apiEvent({ method: 'GET', path: `/v1/templates/${name}` }))).json.version).toBe(1);
  });

  it('holds a name to 100 characters, naming `name`', async () => {
    const at = 'n'.repeat(100);
    expect((await api.call(putTemplate(at, { subject: 's', text: 't' }))).status).toBe(201);
    const refused = await api.call(putTemplate(`${at}n`, { subject: 's', text: 't' }));
    expect(refused.status).toBe(400);
    expect(refused.json.errors).toEqual([expect.objectContaining({ field: 'name' })]);
  });

  it('stores a part that fills the 256 KiB body, and answers one byte more with 413 naming the body', async () => {
    const envelope = JSON.stringify({ subject: 's', html: '' }).length;
    const html = 'h'.repeat(256 * 1024 - envelope);
    const ok = await api.call(putTemplate('big', { subject: 's', html }));
    expect(ok.status).toBe(201);
    expect((await api.call(apiEvent({ method: 'GET', path: '/v1/templates/big' }))).json.html).toBe(html);
    const over = await api.call(putTemplate('big', { subject: 's', html: `${html}h` }));
    expect(over.status).toBe(413);
    expect(over.json.errors).toEqual([{ field: 'body', message: 'must be at most 262144 bytes' }]);
    expect((await api.call(apiEvent({ method: 'GET', path: '/v1/templates/big' }))).json.latest_version).toBe(
      1,
    );
  });

  it('answers a name a list only inherits (`items.map`) with 422 naming it, at preview and at enqueue, storing nothing', async () => {
    expect(
      (await api.call(putTemplate('lines', { subject: 'Your order', text: 'Items: {{items.map}}' }))).status,
    ).toBe(201);
    const data = { items: [1, 2] };
    const expected = [
      { field: '/data', message: 'lacks `items.map`, which the text template uses (line 1, column 10)' },
    ];
    const preview = await api.call(
      apiEvent({ method: 'POST', path: '/v1/templates/lines/render', body: { data } }),
    );
    expect(preview.status).toBe(422);
    expect(preview.json.errors).toEqual(expected);
    const before = (await api.scanAll()).length;
    const enqueue = await api.call(enqueueEvent(order({ name: 'lines' }, data), { key: 'lines-1' }));
    expect(enqueue.status).toBe(422);
    expect(enqueue.json.errors).toEqual(expected);
    expect((await api.scanAll()).length).toBe(before);
  });

  it('refuses every new enqueue of an archived template, a pinned version and a batch item too; the listing shows it; a new version un-archives', async () => {
    await api.call(putTemplate('weekly', { subject: 'v1 {{n}}', text: 'one {{n}}' }));
    const queued = await api.call(
      enqueueEvent(order({ name: 'weekly' }, { n: 1 }), { key: 'weekly-before' }),
    );
    expect(queued.status).toBe(202);
    expect((await api.call(apiEvent({ method: 'DELETE', path: '/v1/templates/weekly' }))).status).toBe(200);
    const archived = [{ field: '/template/name', message: 'is archived: no new message may use it' }];

    const pinned = await api.call(
      enqueueEvent(order({ name: 'weekly', version: 1 }, { n: 1 }), { key: 'w-1' }),
    );
    expect(pinned.status).toBe(422);
    expect(pinned.headers['content-type']).toBe('application/problem+json');
    expect(pinned.json.errors).toEqual(archived);
    const batch = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/messages/batch',
        body: { messages: [{ idempotency_key: 'wb-1', ...order({ name: 'weekly' }, { n: 1 }) }] },
      }),
    );
    expect(batch.json.results).toMatchObject([
      {
        status: 422,
        problem: { errors: [{ field: '/messages/0/template/name', message: archived[0]?.message }] },
      },
    ]);
    const listed = async () => {
      const { items } = (await api.call(apiEvent({ method: 'GET', path: '/v1/templates' }))).json as {
        items: { name: string; archived_at: string | null }[];
      };
      return items.find((item) => item.name === 'weekly');
    };
    expect((await listed())?.archived_at).toBe('2026-11-29T18:00:00.000Z');
    // The message queued before the archive is untouched.
    expect(
      (await api.call(apiEvent({ method: 'GET', path: `/v1/messages/${queued.json.id}` }))).json,
    ).toMatchObject({
      status: 'scheduled',
      template: { name: 'weekly', version: 1 },
    });

    // Next week's edit: a new version, and the template is in use again (decision 0026).
    const next = await api.call(putTemplate('weekly', { subject: 'v2 {{n}}', text: 'two {{n}}' }));
    expect(next.json).toMatchObject({ version: 2, archived_at: null });
    expect(await listed()).toMatchObject({ latest_version: 2, archived_at: null });
    const again = await api.call(
      enqueueEvent(order({ name: 'weekly', version: 1 }, { n: 1 }), { key: 'w-2' }),
    );
    expect(again.status).toBe(202);
    expect(again.json.template).toEqual({ name: 'weekly', version: 1 });
  });
});
