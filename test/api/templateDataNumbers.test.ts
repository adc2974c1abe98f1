/**
 * A number in a template message's `data` that JSON cannot carry (DESIGN §10: "the sender renders at
 * send time from that version, so what was validated is what is sent"; decision 0156). `1e400` is
 * Infinity once JSON.parse read it, and the stored data (JSON) says `null`: it would render one way
 * at enqueue and another at send. Every way in refuses it at enqueue with a problem naming the field,
 * and stores nothing: a single enqueue, a batch item, the preview, the outbox helper. Real parts:
 * DynamoDB Local; the bodies are raw JSON text, as a client sends them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  buildOutboxWrite,
  OutboxInputError,
  parseEnqueueRequest,
  readOutboxTemplate,
} from '../../lambdas/outbox/index.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent } from './events.js';

type Api = Awaited<ReturnType<typeof apiHarness>>;

const ENVELOPE = '"to": ["ada@example.com"], "from": "ops@example.com", "template": {"name": "score"}';
const REASON = /finite number/;

describe('a number in `data` that JSON cannot carry', () => {
  let api: Api;
  beforeAll(async () => {
    api = await apiHarness();
    const stored = await api.call(
      apiEvent({
        method: 'PUT',
        path: '/v1/templates/score',
        body: {
          subject: 'Score {{n}}',
          text: '{{#if n}}yes{{else}}no{{/if}} {{#each items}}{{price}}{{/each}}',
        },
      }),
    );
    expect(stored.status).toBe(201);
  });

  it.each([
    ['1e400', '{"n": 1e400, "items": []}', '/data/n'],
    ['-1e400', '{"n": -1e400, "items": []}', '/data/n'],
    ['1e400 nested', '{"n": 1, "items": [{"price": 2}, {"price": 1e400}]}', '/data/items/1/price'],
  ])('refuses %s in a single enqueue: 400 naming the field, nothing stored', async (what, data, field) => {
    const before = await api.scanAll();
    const answer = await api.call(enqueueEvent(`{${ENVELOPE}, "data": ${data}}`, { key: `single-${what}` }));
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.json.errors).toEqual([{ field, message: expect.stringMatching(REASON) }]);
    expect(await api.scanAll()).toEqual(before);
  });

  it('accepts the largest and the smallest finite numbers (JSON carries them as they are)', async () => {
    const data = '{"n": 1.7976931348623157e308, "items": [{"price": -5e-324}]}';
    const answer = await api.call(enqueueEvent(`{${ENVELOPE}, "data": ${data}}`, { key: 'finite' }));
    expect(answer.status).toBe(202);
  });

  it('refuses it in a batch item as a single enqueue does, naming the item', async () => {
    const before = await api.scanAll();
    const answer = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/messages/batch',
        routeKey: 'POST /v1/messages/batch',
        body: `{"messages": [{"idempotency_key": "batch-inf", ${ENVELOPE}, "data": {"n": 1e400, "items": []}}]}`,
      }),
    );
    expect(answer.status).toBe(200);
    const [result] = answer.json.results as { status: number; problem: { errors: unknown[] } }[];
    expect(result?.status).toBe(400);
    expect(result?.problem.errors).toEqual([
      { field: '/messages/0/data/n', message: expect.stringMatching(REASON) },
    ]);
    expect(await api.scanAll()).toEqual(before);
  });

  it('refuses it in a preview, which validates `data` the same way', async () => {
    const answer = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/templates/score/render',
        body: '{"data": {"n": 1e400, "items": []}}',
      }),
    );
    expect(answer.status).toBe(400);
    expect(answer.json.errors).toEqual([{ field: '/data/n', message: expect.stringMatching(REASON) }]);
  });

  it('refuses Infinity and NaN in the outbox helper, whose data comes from the caller’s code', async () => {
    const template = await readOutboxTemplate(api.documents, api.tableName, 'acme', 'score');
    const build = (n: number) =>
      buildOutboxWrite({
        tableName: api.tableName,
        tenant: 'acme',
        idempotencyKey: `outbox-${n}`,
        now: api.clock.now(),
        body: {
          to: ['ada@example.com'],
          from: 'ops@example.com',
          template: { name: 'score' },
          data: { n, items: [] },
        },
        validation: { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 },
        ...(template ? { template } : {}),
      });
    for (const n of [Number.POSITIVE_INFINITY, Number.NaN]) {
      let thrown: unknown;
      try {
        build(n);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, String(n)).toBeInstanceOf(OutboxInputError);
      expect((thrown as OutboxInputError).problem?.errors).toEqual([
        { field: '/data/n', message: expect.stringMatching(REASON) },
      ]);
    }
    expect(build(42).items.length).toBeGreaterThan(0);
  });

  it('keeps in a parsed request the data it validated: the caller changing its own object afterwards writes nothing unchecked', async () => {
    const template = await readOutboxTemplate(api.documents, api.tableName, 'acme', 'score');
    const data: { n: number; items: unknown[] } = { n: 1, items: [] };
    const parsed = parseEnqueueRequest(
      { to: ['ada@example.com'], from: 'ops@example.com', template: { name: 'score' }, data },
      {
        allowedFrom: ['*@example.com'],
        defaultFrom: 'ops@example.com',
        maxHorizonDays: 400,
        now: api.clock.now(),
      },
    );
    if (!parsed.ok) throw new Error(parsed.problem.detail);
    // The application reuses its object for the next message, past what parseEnqueueRequest checked.
    data.n = Number.NaN;
    data.items.push({ price: Number.POSITIVE_INFINITY });
    const write = buildOutboxWrite({
      tableName: api.tableName,
      tenant: 'acme',
      idempotencyKey: 'outbox-reused-data',
      now: api.clock.now(),
      request: parsed.value,
      ...(template ? { template } : {}),
    });
    expect(write.body.data_json).toBe('{"n":1,"items":[]}');
    expect(() => Object.assign(parsed.value.data ?? {}, { n: 2 })).toThrow(TypeError);
  });
});
