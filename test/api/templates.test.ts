/**
 * Templates through the api handler on DynamoDB Local (DESIGN §3, §10): immutable versions, the
 * listing, archive, the preview, and the enqueue's template form — validated by rendering at enqueue
 * (422 naming the variable or field, nothing stored), pinned on the records, replayed like any other.
 */
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { messageIdFor } from '../../lambdas/core/ids.js';
import { buildOutboxWrite, OutboxInputError, readOutboxTemplate } from '../../lambdas/outbox/index.js';
import { inlineBodyOf } from '../../lambdas/store/bodyContent.js';
import { type MessageStateRecord, messagePk } from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

const putTemplate = (name: string, body: unknown, tenant = 'acme') =>
  apiEvent({ method: 'PUT', path: `/v1/templates/${name}`, body, tenant });

const WELCOME = {
  subject: 'Welcome, {{user.first_name}}',
  text: 'Hi {{user.first_name}}, your code is {{code}}.',
  html: '<p>Hi {{user.first_name}}, your code is <b>{{code}}</b>.</p>',
  description: 'Sent after sign-up',
};

const templateBody = (
  template: Record<string, unknown>,
  data: unknown,
  overrides: Record<string, unknown> = {},
) => ({
  to: ['Ada Lovelace <ada@example.com>'],
  from: 'Ops <ops@example.com>',
  template,
  data,
  ...overrides,
});

describe('the template routes', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  it('stores immutable versions: each PUT is the previous version + 1, and a version never changes', async () => {
    const first = await api.call(putTemplate('receipt', { subject: 'Receipt {{n}}', text: 'v1 {{n}}' }));
    expect(first.status).toBe(201);
    expect(first.json).toMatchObject({
      name: 'receipt',
      version: 1,
      subject: 'Receipt {{n}}',
      text: 'v1 {{n}}',
      html: null,
    });
    expect(first.headers.location).toBe('/v1/templates/receipt/versions/1');
    const second = await api.call(
      putTemplate('receipt', { subject: 'Receipt {{n}}', html: '<p>v2 {{n}}</p>' }),
    );
    expect(second.json).toMatchObject({ version: 2, latest_version: 2 });

    const latest = await api.call(apiEvent({ method: 'GET', path: '/v1/templates/receipt' }));
    expect(latest.status).toBe(200);
    expect(latest.json).toMatchObject({
      name: 'receipt',
      version: 2,
      html: '<p>v2 {{n}}</p>',
      archived_at: null,
    });
    const one = await api.call(apiEvent({ method: 'GET', path: '/v1/templates/receipt/versions/1' }));
    expect(one.json).toMatchObject({ version: 1, text: 'v1 {{n}}', latest_version: 2 });
    const none = await api.call(apiEvent({ method: 'GET', path: '/v1/templates/receipt/versions/3' }));
    expect(none.status).toBe(404);
    // The template exists; its version 3 does not: the error names the version, not the name.
    expect(none.json.errors).toEqual([{ field: 'version', message: 'not found' }]);
    const noName = await api.call(apiEvent({ method: 'GET', path: '/v1/templates/nothing/versions/1' }));
    expect(noName.json.errors).toEqual([{ field: 'name', message: 'not found' }]);
    const render = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/templates/receipt/render',
        body: { data: { n: 1 }, version: 3 },
      }),
    );
    expect(render.status).toBe(404);
    expect(render.json.errors).toEqual([{ field: '/version', message: 'not found' }]);
  });

  it('gives two concurrent PUTs of one template two different versions', async () => {
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) => api.call(putTemplate('race', { subject: `S${i}`, text: `T${i}` }))),
    );
    expect(results.map((result) => result.status)).toEqual([201, 201, 201, 201]);
    const versions = results.map((result) => Number(result.json.version)).sort();
    expect(versions).toEqual([1, 2, 3, 4]);
    // Each version holds what its own PUT sent.
    for (const result of results) {
      const stored = await api.call(
        apiEvent({ method: 'GET', path: `/v1/templates/race/versions/${result.json.version}` }),
      );
      expect(stored.json.subject).toBe(result.json.subject);
    }
  });

  it('refuses a template that uses an unknown helper, a partial or the prototype when it is stored (400), storing nothing', async () => {
    for (const html of [
      '{{shout name}}',
      '{{> footer}}',
      '{{constructor}}',
      '{{#each items as |i|}}{{i}}{{/each}}',
    ]) {
      const response = await api.call(putTemplate('refused', { subject: 'Hi', html }));
      expect(response.status, html).toBe(400);
      expect(response.headers['content-type']).toBe('application/problem+json');
      expect((response.json.errors as { field: string }[])[0]?.field).toBe('/html');
    }
    const after = await api.call(apiEvent({ method: 'GET', path: '/v1/templates/refused' }));
    expect(after.status).toBe(404);
  });

  it('lists the tenant’s templates by name, a page at a time, and never another tenant’s', async () => {
    for (const name of ['list-a', 'list-b', 'list-c'])
      await api.call(putTemplate(name, { subject: 'x', text: 'y' }, 'lister'));
    await api.call(putTemplate('list-z', { subject: 'x', text: 'y' }, 'other'));
    const first = await api.call(
      apiEvent({ method: 'GET', path: '/v1/templates', query: { limit: '2' }, tenant: 'lister' }),
    );
    expect((first.json.items as { name: string }[]).map((item) => item.name)).toEqual(['list-a', 'list-b']);
    const second = await api.call(
      apiEvent({
        method: 'GET',
        path: '/v1/templates',
        query: { cursor: String(first.json.next_cursor) },
        tenant: 'lister',
      }),
    );
    expect((second.json.items as { name: string }[]).map((item) => item.name)).toEqual(['list-c']);
    expect(second.json.next_cursor).toBeNull();
    const foreign = await api.call(
      apiEvent({ method: 'GET', path: '/v1/templates/list-z', tenant: 'lister' }),
    );
    expect(foreign.status).toBe(404);
  });

  it('previews a render (nothing sent), and answers 422 naming the missing variable', async () => {
    await api.call(putTemplate('welcome', WELCOME));
    const preview = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/templates/welcome/render',
        body: { data: { user: { first_name: '<Ada>' }, code: 'K-1' } },
      }),
    );
    expect(preview.status).toBe(200);
    expect(preview.json).toEqual({
      name: 'welcome',
      version: 1,
      subject: 'Welcome, <Ada>',
      text: 'Hi <Ada>, your code is K-1.',
      html: '<p>Hi &lt;Ada&gt;, your code is <b>K-1</b>.</p>',
    });
    const missing = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/templates/welcome/render',
        body: { data: { user: { first_name: 'Ada' } } },
      }),
    );
    expect(missing.status).toBe(422);
    expect(missing.json.type).toBe('urn:postdate:problem:template');
    expect((missing.json.errors as { message: string }[])[0]?.message).toContain('`code`');
  });

  it('answers a preview that would print an object or a list with 422 naming the variable', async () => {
    await api.call(
      putTemplate('coded', { subject: 'Your code', text: 'Code: {{code}}', html: '<p>{{code}}</p>' }),
    );
    const preview = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/templates/coded/render',
        body: { data: { code: { value: 'K-1', expires: '2026-12-31' } } },
      }),
    );
    expect(preview.status).toBe(422);
    expect(preview.headers['content-type']).toBe('application/problem+json');
    expect(preview.json.type).toBe('urn:postdate:problem:template');
    const instead =
      '`{{code}}` prints only strings, numbers and booleans — name one of its fields, such as `{{code.<field>}}`';
    expect(preview.json.errors).toEqual([
      {
        field: '/data',
        message: `\`code\` is an object, which the text template prints (line 1, column 7): ${instead}`,
      },
      {
        field: '/data',
        message: `\`code\` is an object, which the html template prints (line 1, column 4): ${instead}`,
      },
    ]);
    expect(JSON.stringify(preview.json)).not.toContain('K-1');
  });

  it('archives: the template stays readable, and a second archive keeps the first time', async () => {
    await api.call(putTemplate('old', { subject: 'x', text: 'y' }));
    const archived = await api.call(apiEvent({ method: 'DELETE', path: '/v1/templates/old' }));
    expect(archived.status).toBe(200);
    expect(archived.json.archived_at).toBe('2026-11-29T18:00:00.000Z');
    api.clock.advance(60_000);
    const again = await api.call(apiEvent({ method: 'DELETE', path: '/v1/templates/old' }));
    expect(again.json.archived_at).toBe('2026-11-29T18:00:00.000Z');
    expect(
      (await api.call(apiEvent({ method: 'GET', path: '/v1/templates/old' }))).json.archived_at,
    ).not.toBeNull();
    expect((await api.call(apiEvent({ method: 'DELETE', path: '/v1/templates/never' }))).status).toBe(404);
  });
});

describe('POST /v1/messages with a template', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
    await api.call(putTemplate('welcome', WELCOME));
    await api.call(
      putTemplate('amplifier', { subject: 'Big', html: '{{#each items}}<p>{{../blob}}</p>{{/each}}' }),
    );
  });

  const stored = async (key: string) => {
    const id = messageIdFor('acme', key);
    const read = async (sk: string) =>
      (
        await api.documents.send(
          new GetCommand({
            TableName: api.tableName,
            Key: { [KEY.partition]: messagePk(id), [KEY.sort]: sk },
          }),
        )
      ).Item;
    // The body in either form: inside the state record (a small message) or an item of its own.
    const state = await read(ITEM_SORT_KEY.messageState);
    const body =
      state?.body !== undefined
        ? inlineBodyOf(state as MessageStateRecord)
        : await read(ITEM_SORT_KEY.messageBody);
    return { id, state, body };
  };

  it('accepts it (202), pins the latest version, shows template {name, version}, and stores the data, not a body', async () => {
    const data = { user: { first_name: 'Ada' }, code: 'K-1' };
    const response = await api.call(enqueueEvent(templateBody({ name: 'welcome' }, data), { key: 'tpl-1' }));
    expect(response.status).toBe(202);
    expect(response.json.template).toEqual({ name: 'welcome', version: 1 });
    const { id, state, body } = await stored('tpl-1');
    expect(state?.template).toEqual({ name: 'welcome', version: 1 });
    expect(body).toMatchObject({
      template: { name: 'welcome', version: 1 },
      subject: '',
      text: null,
      html: null,
    });
    expect(JSON.parse(String(body?.data_json))).toEqual(data);
    const view = await api.call(getEvent(id));
    expect(view.json.template).toEqual({ name: 'welcome', version: 1 });
    // An inline message shows null.
    const inline = await api.call(
      enqueueEvent({ to: ['a@example.com'], subject: 'x', text: 'y' }, { key: 'inline-1' }),
    );
    expect(inline.json.template).toBeNull();
  });

  it('refuses a batch item that would print an object (422 in its result, nothing stored), and enqueues the others', async () => {
    const item = (key: string, data: Record<string, unknown>) => ({
      idempotency_key: key,
      ...templateBody({ name: 'welcome' }, data),
    });
    const response = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/messages/batch',
        routeKey: 'POST /v1/messages/batch',
        body: {
          messages: [
            item('batch-printable', { user: { first_name: 'Ada' }, code: 'K-1' }),
            item('batch-object', { user: { first_name: 'Ada' }, code: { value: 'K-1' } }),
          ],
        },
      }),
    );
    expect(response.status).toBe(200);
    const [printable, object] = response.json.results as {
      status: number;
      problem?: { type: string; errors: { field: string; message: string }[] };
    }[];
    expect(printable?.status).toBe(202);
    expect(object?.status).toBe(422);
    expect(object?.problem?.type).toBe('urn:postdate:problem:template');
    expect(object?.problem?.errors[0]).toEqual({
      field: '/messages/1/data',
      message: expect.stringContaining('`code` is an object, which the text template prints'),
    });
    expect((await stored('batch-printable')).state?.status).toBe('scheduled');
    expect((await stored('batch-object')).state).toBeUndefined();
  });

  it('pins a requested version, and a new version does not change a queued message', async () => {
    await api.call(putTemplate('pinned', { subject: 'One {{n}}', text: 'one' }));
    const queued = await api.call(
      enqueueEvent(templateBody({ name: 'pinned' }, { n: 1 }), { key: 'pin-latest' }),
    );
    await api.call(putTemplate('pinned', { subject: 'Two {{n}}', text: 'two' }));
    const asked = await api.call(
      enqueueEvent(templateBody({ name: 'pinned', version: 1 }, { n: 1 }), { key: 'pin-v1' }),
    );
    const latest = await api.call(
      enqueueEvent(templateBody({ name: 'pinned' }, { n: 1 }), { key: 'pin-v2' }),
    );
    expect(queued.json.template).toEqual({ name: 'pinned', version: 1 });
    expect(asked.json.template).toEqual({ name: 'pinned', version: 1 });
    expect(latest.json.template).toEqual({ name: 'pinned', version: 2 });
    expect((await stored('pin-latest')).body?.template).toEqual({ name: 'pinned', version: 1 });
    const beyond = await api.call(
      enqueueEvent(templateBody({ name: 'pinned', version: 3 }, { n: 1 }), { key: 'pin-v3' }),
    );
    expect(beyond.status).toBe(422);
    expect(beyond.json.errors).toEqual([
      { field: '/template/version', message: 'does not exist (the latest is 2)' },
    ]);
  });

  it('answers a replay of the same key and data with 200 and the original, even after a new version or an archive', async () => {
    await api.call(putTemplate('replayed', { subject: 'Hi {{name}}', text: 'x' }));
    const body = templateBody({ name: 'replayed' }, { name: 'Ada', nested: { a: 1, b: [1, 2] } });
    const first = await api.call(enqueueEvent(body, { key: 'replay-1' }));
    expect(first.status).toBe(202);
    // Same data, keys in another order.
    const reordered = templateBody({ name: 'replayed' }, { nested: { b: [1, 2], a: 1 }, name: 'Ada' });
    const replay = await api.call(enqueueEvent(reordered, { key: 'replay-1' }));
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json.id).toBe(first.json.id);
    await api.call(putTemplate('replayed', { subject: 'Hello {{name}}', text: 'y' }));
    await api.call(apiEvent({ method: 'DELETE', path: '/v1/templates/replayed' }));
    const later = await api.call(enqueueEvent(body, { key: 'replay-1' }));
    expect(later.status).toBe(200);
    expect(later.json.template).toEqual({ name: 'replayed', version: 1 });
    const otherData = await api.call(
      enqueueEvent(templateBody({ name: 'replayed' }, { name: 'Bob' }), { key: 'replay-1' }),
    );
    expect(otherData.status).toBe(422);
    expect(otherData.json.type).toBe('urn:postdate:problem:template');
    await api.call(putTemplate('replayed', { subject: 'Hello {{name}}', text: 'z' }));
    const reused = await api.call(
      enqueueEvent(templateBody({ name: 'replayed' }, { name: 'Bob' }), { key: 'replay-1' }),
    );
    expect(reused.status).toBe(422);
    expect(reused.json.type).toBe('urn:postdate:problem:idempotency-key-reused');
  });

  describe('refusals: a clear 4xx, nothing stored', () => {
    const refusals: [string, Record<string, unknown>, number, { field: string; message?: string }][] = [
      [
        'a variable the data lacks (strict)',
        templateBody({ name: 'welcome' }, { user: { first_name: 'Ada' } }),
        422,
        { field: '/data', message: 'lacks `code`, which the text template uses' },
      ],
      [
        'an object printed (never "[object Object]")',
        templateBody({ name: 'welcome' }, { user: { first_name: 'Ada' }, code: { value: 'K-1' } }),
        422,
        { field: '/data', message: '`code` is an object, which the text template prints (line 1, column' },
      ],
      [
        'a list printed (never "A,da")',
        templateBody({ name: 'welcome' }, { user: { first_name: ['A', 'da'] }, code: 'K-1' }),
        422,
        { field: '/data', message: '`user.first_name` is a list, which the subject template prints' },
      ],
      [
        'a CR/LF from the data into the subject (header injection)',
        templateBody({ name: 'welcome' }, { user: { first_name: 'Ada\r\nBcc: eve@example.com' }, code: 'K' }),
        422,
        {
          field: '/data/user/first_name',
          message: 'goes into the subject, which must not contain CR or LF (header injection)',
        },
      ],
      [
        'a rendered body over the size limit (30 × 10 KB from 10 KB of data)',
        templateBody(
          { name: 'amplifier' },
          { blob: 'x'.repeat(10_000), items: Array.from({ length: 30 }, (_, i) => i) },
        ),
        422,
        { field: '/data', message: 'more than the 262144 a message may have' },
      ],
      [
        'an unknown template',
        templateBody({ name: 'nope' }, {}),
        422,
        { field: '/template/name', message: 'no such template' },
      ],
      [
        'both a template and a subject',
        templateBody({ name: 'welcome' }, {}, { subject: 'x' }),
        400,
        { field: '/subject' },
      ],
      [
        'both a template and html',
        templateBody({ name: 'welcome' }, {}, { html: '<p>' }),
        400,
        { field: '/html' },
      ],
      ['data that is not an object', templateBody({ name: 'welcome' }, ['a']), 400, { field: '/data' }],
      [
        'data over 64 KiB',
        templateBody({ name: 'welcome' }, { user: { first_name: 'Ada' }, code: 'x'.repeat(70_000) }),
        400,
        { field: '/data' },
      ],
      [
        'data without a template',
        { to: ['a@example.com'], subject: 'x', text: 'y', data: {} },
        400,
        { field: '/data' },
      ],
      ['a bad template name', templateBody({ name: '../etc' }, {}), 400, { field: '/template/name' }],
      [
        'a version of 0',
        templateBody({ name: 'welcome', version: 0 }, {}),
        400,
        { field: '/template/version' },
      ],
    ];
    it.each(refusals)('%s', async (_what, body, status, error) => {
      const before = (await api.scanAll()).length;
      const response = await api.call(
        enqueueEvent(body, { key: `refused-${refusals.findIndex(([what]) => what === _what)}` }),
      );
      expect(response.status).toBe(status);
      expect(response.headers['content-type']).toBe('application/problem+json');
      const errors = response.json.errors as { field: string; message: string }[];
      expect(errors[0]?.field).toBe(error.field);
      if (error.message) expect(errors[0]?.message).toContain(error.message);
      expect((await api.scanAll()).length).toBe(before);
    });

    it('an archived template: new enqueues are refused', async () => {
      await api.call(putTemplate('retired', { subject: 'x', text: 'y' }));
      const queued = await api.call(
        enqueueEvent(templateBody({ name: 'retired' }, {}), { key: 'retired-before' }),
      );
      expect(queued.status).toBe(202);
      await api.call(apiEvent({ method: 'DELETE', path: '/v1/templates/retired' }));
      const refused = await api.call(
        enqueueEvent(templateBody({ name: 'retired' }, {}), { key: 'retired-after' }),
      );
      expect(refused.status).toBe(422);
      expect(refused.json.errors).toEqual([
        { field: '/template/name', message: 'is archived: no new message may use it' },
      ]);
      // The queued one keeps its records (the sender test sends it).
      expect((await stored('retired-before')).state?.status).toBe('scheduled');
      expect((await stored('retired-after')).state).toBeUndefined();
    });

    it('a data value that reaches html as markup stays text', async () => {
      const response = await api.call(
        apiEvent({
          method: 'POST',
          path: '/v1/templates/welcome/render',
          body: { data: { user: { first_name: 'Ada' }, code: '<script>alert(1)</script>' } },
        }),
      );
      expect(response.json.html).toBe(
        '<p>Hi Ada, your code is <b>&lt;script&gt;alert(1)&lt;/script&gt;</b>.</p>',
      );
    });
  });

  it('the outbox helper writes a template message, validated and pinned as the API does', async () => {
    const now = api.clock.now();
    const template = await readOutboxTemplate(api.documents, api.tableName, 'acme', 'welcome');
    expect(template).toMatchObject({ name: 'welcome', version: 1, archived: false });
    const validation = {
      allowedFrom: ['*@example.com'],
      defaultFrom: 'ops@example.com',
      maxHorizonDays: 400,
    };
    const write = buildOutboxWrite({
      tableName: api.tableName,
      tenant: 'acme',
      idempotencyKey: 'outbox-tpl-1',
      now,
      body: templateBody({ name: 'welcome' }, { user: { first_name: 'Ada' }, code: 'K' }),
      validation,
      ...(template ? { template } : {}),
    });
    await api.documents.send(new TransactWriteCommand({ TransactItems: write.items }));
    const view = await api.call(getEvent(write.messageId));
    expect(view.json.template).toEqual({ name: 'welcome', version: 1 });
    const build = (data: unknown, withTemplate = true) =>
      buildOutboxWrite({
        tableName: api.tableName,
        tenant: 'acme',
        idempotencyKey: 'outbox-tpl-2',
        now,
        body: templateBody({ name: 'welcome' }, data),
        validation,
        ...(withTemplate && template ? { template } : {}),
      });
    expect(() => build({ user: { first_name: 'Ada' } })).toThrow(OutboxInputError);
    try {
      build({ user: { first_name: 'Ada' } });
    } catch (error) {
      expect((error as OutboxInputError).problem?.errors?.[0]?.message).toContain('`code`');
    }
    expect(() => build({ user: { first_name: 'Ada' }, code: 'K' }, false)).toThrow(/readOutboxTemplate/);
  });
});
