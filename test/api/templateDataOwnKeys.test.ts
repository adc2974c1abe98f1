/**
 * A template message's `data` is judged as it is stored (DESIGN §3: "`data` (a JSON object, at most
 * 64 KiB)"; §10: what was validated is what is sent). JSON.parse makes an own key `__proto__` of
 * `{"__proto__": …}`, and the records keep `data` as the request gave it, that key included; a limit
 * measured on a copy without it would let any amount of data in. Every way in refuses such data as it
 * refuses the same data under another name: a single enqueue, a batch item, the preview, the outbox
 * helper. Real parts: DynamoDB Local; the bodies are raw JSON text, as a client sends them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOutboxWrite, OutboxInputError, readOutboxTemplate } from '../../lambdas/outbox/index.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent } from './events.js';

type Api = Awaited<ReturnType<typeof apiHarness>>;

const ENVELOPE = '"to": ["ada@example.com"], "from": "ops@example.com", "template": {"name": "greeting"}';
/** 70,000 characters of data under one key: more than 64 KiB of JSON. */
const BIG = `"${'a'.repeat(70_000)}"`;
const OVER = /must be at most 65536 bytes of JSON/;

describe('template data with an own __proto__ key', () => {
  let api: Api;
  beforeAll(async () => {
    api = await apiHarness();
    const stored = await api.call(
      apiEvent({ method: 'PUT', path: '/v1/templates/greeting', body: { subject: 'Hi {{n}}', text: 'x' } }),
    );
    expect(stored.status).toBe(201);
  });

  it.each([
    ['another name', `{"n": 1, "padding": ${BIG}}`],
    ['__proto__', `{"n": 1, "__proto__": {"padding": ${BIG}}}`],
  ])(
    'a single enqueue with over 64 KiB of data under %s: 400 naming /data, nothing stored',
    async (what, data) => {
      const before = await api.scanAll();
      const answer = await api.call(
        enqueueEvent(`{${ENVELOPE}, "data": ${data}}`, { key: `single-${what}` }),
      );
      expect(answer.status).toBe(400);
      expect(answer.json.errors).toEqual([{ field: '/data', message: expect.stringMatching(OVER) }]);
      expect(await api.scanAll()).toEqual(before);
    },
  );

  it('a number JSON cannot carry under __proto__: 400 naming it, as anywhere else in data', async () => {
    const answer = await api.call(
      enqueueEvent(`{${ENVELOPE}, "data": {"n": 1, "__proto__": {"m": 1e400}}}`, { key: 'infinite' }),
    );
    expect(answer.status).toBe(400);
    expect(answer.json.errors).toEqual([
      { field: '/data/__proto__/m', message: expect.stringMatching(/finite number/) },
    ]);
  });

  it('a batch item: its own 400, naming the item', async () => {
    const before = await api.scanAll();
    const answer = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/messages/batch',
        routeKey: 'POST /v1/messages/batch',
        body: `{"messages": [{"idempotency_key": "batch-proto", ${ENVELOPE}, "data": {"n": 1, "__proto__": {"padding": ${BIG}}}}]}`,
      }),
    );
    expect(answer.status).toBe(200);
    const [result] = answer.json.results as { status: number; problem: { errors: unknown[] } }[];
    expect(result?.status).toBe(400);
    expect(result?.problem.errors).toEqual([
      { field: '/messages/0/data', message: expect.stringMatching(OVER) },
    ]);
    expect(await api.scanAll()).toEqual(before);
  });

  it('the preview: 400 naming /data', async () => {
    const answer = await api.call(
      apiEvent({
        method: 'POST',
        path: '/v1/templates/greeting/render',
        body: `{"data": {"n": 1, "__proto__": {"padding": ${BIG}}}}`,
      }),
    );
    expect(answer.status).toBe(400);
    expect(answer.json.errors).toEqual([{ field: '/data', message: expect.stringMatching(OVER) }]);
  });

  it('the outbox helper: an OutboxInputError naming /data', async () => {
    const template = await readOutboxTemplate(api.documents, api.tableName, 'acme', 'greeting');
    const data = JSON.parse(`{"n": 1, "__proto__": {"padding": ${BIG}}}`) as Record<string, unknown>;
    let thrown: unknown;
    try {
      buildOutboxWrite({
        tableName: api.tableName,
        tenant: 'acme',
        idempotencyKey: 'outbox-proto',
        now: api.clock.now(),
        body: { to: ['ada@example.com'], from: 'ops@example.com', template: { name: 'greeting' }, data },
        validation: { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 },
        ...(template ? { template } : {}),
      });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OutboxInputError);
    expect((thrown as OutboxInputError).problem?.errors).toEqual([
      { field: '/data', message: expect.stringMatching(OVER) },
    ]);
  });
});
