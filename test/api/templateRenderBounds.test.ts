/**
 * A render's cost is bounded when the template is stored and when the message is accepted (DESIGN
 * §5, §10): a valid template whose render would run for seconds (three nested #each over about
 * 1 KB of data rendered for 11 s in the sender, after the claim) is a 422 at enqueue, at once,
 * naming `data` and the limit; an ordinary template with an ordinary loop still passes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

const putTemplate = (name: string, body: unknown) =>
  apiEvent({ method: 'PUT', path: `/v1/templates/${name}`, body, tenant: 'acme' });

const message = (name: string, data: unknown) => ({
  to: ['ada@example.com'],
  from: 'ops@example.com',
  template: { name },
  data,
});

/** About 1 KB of data: 500 one-digit numbers. */
const KILOBYTE_LIST = { a: Array.from({ length: 500 }, (_, index) => index % 10) };

describe('render bounds at enqueue and store (DESIGN §5)', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
    const stored = await api.call(
      putTemplate('cubed', {
        subject: 'Report',
        text: '{{#each a}}{{#each @root.a}}{{#each @root.a}}{{/each}}{{/each}}{{/each}}done',
      }),
    );
    expect(stored.status).toBe(201);
    const order = await api.call(
      putTemplate('order', {
        subject: 'Order {{number}}',
        text: '{{#each lines}}{{@index}}. {{name}} × {{quantity}}: {{price}}\n{{/each}}',
        html: '<ul>{{#each lines}}<li>{{name}} × {{quantity}}: {{price}}</li>{{/each}}</ul>',
      }),
    );
    expect(order.status).toBe(201);
  });

  it('refuses, with a 422 naming data and the limit, a message whose render would loop for seconds', async () => {
    const answer = await api.call(enqueueEvent(message('cubed', KILOBYTE_LIST), { key: 'cubed-1' }));
    expect(answer.status).toBe(422);
    expect(answer.headers['content-type']).toContain('application/problem+json');
    expect(answer.json.errors).toEqual([{ field: '/data', message: expect.stringContaining('50000 steps') }]);
    const stored = await api.call(apiEvent({ method: 'GET', path: '/v1/messages', tenant: 'acme' }));
    expect(stored.json.items).toEqual([]);
  });

  it('accepts an order of 200 lines', async () => {
    const lines = Array.from({ length: 200 }, (_, index) => ({
      name: `Item <${index}>`,
      quantity: index % 3,
      price: `${index}.00`,
    }));
    const answer = await api.call(
      enqueueEvent(message('order', { number: 'A-1', lines }), { key: 'order-1' }),
    );
    expect(answer.status).toBe(202);
  });

  it('refuses, when it is stored, a template that nests #each more than three deep', async () => {
    const answer = await api.call(
      putTemplate('deep', {
        subject: 'Deep',
        text: '{{#each a}}{{#each b}}{{#each c}}{{#each d}}{{x}}{{/each}}{{/each}}{{/each}}{{/each}}',
      }),
    );
    expect(answer.status).toBe(400);
    expect(answer.json.errors).toEqual([{ field: '/text', message: expect.stringContaining('at most 3') }]);
  });
});
