/**
 * A template message through the whole local stack (DESIGN §7, §10): PUT a template over HTTP,
 * enqueue a message that names it, and read the rendered mail at the SMTP sink and its mail viewer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';
import { callApi } from '../support/localApi.js';

const API_KEY = 'pd_local-stack-templates-key-01';

describe('a template message on the local stack', () => {
  let stack: LocalStack;
  const call = (method: string, path: string, body?: unknown, key?: string) =>
    callApi(stack, method, path, body, key);

  beforeAll(async () => {
    const config = loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local');
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('renders at send time and delivers the rendered mail to the SMTP sink', async () => {
    const stored = await call('PUT', '/v1/templates/order-shipped', {
      subject: 'Order {{order.id}} shipped',
      text: 'Hi {{name}}, {{#each order.items}}{{this}}; {{/each}}',
      html: '<p>Hi {{name}}</p><ul>{{#each order.items}}<li>{{this}}</li>{{/each}}</ul>',
    });
    expect(stored.status).toBe(201);

    const enqueued = await call(
      'POST',
      '/v1/messages',
      {
        to: ['ada@example.com'],
        template: { name: 'order-shipped' },
        data: { name: 'Ada <3', order: { id: 'A-17', items: ['tea', 'cups & saucers'] } },
      },
      'local-template-1',
    );
    expect(enqueued.status).toBe(202);
    const { id, template } = enqueued.json as { id: string; template: unknown };
    expect(template).toEqual({ name: 'order-shipped', version: 1 });

    // The first delivery of this stack may need a cold sender sandbox (only slot 0 is warmed).
    const mail = await eventually(
      'the mail at the sink',
      () => stack.smtpSink?.messages().find((message) => message.postdateId === id),
      { withinMs: 30_000, everyMs: 100 },
    );
    expect(mail.subject).toBe('Order A-17 shipped');
    const raw = mail.raw.toString('utf8');
    expect(raw).toContain('<p>Hi Ada &lt;3</p><ul><li>tea</li><li>cups &amp; saucers</li></ul>');
    expect(raw).toContain('Hi Ada <3, tea; cups & saucers;');

    const listed = (await (await fetch(`${stack.mailViewerUrl}api/messages`)).json()) as {
      items: { postdateId: string | null; subject: string | null }[];
    };
    expect(listed.items.find((item) => item.postdateId === id)?.subject).toBe('Order A-17 shipped');

    const view = await eventually(
      'the message sent',
      async () => {
        const message = (await call('GET', `/v1/messages/${id}`)).json as { status: string };
        return message.status === 'sent' ? message : undefined;
        // The mail is at the sink: what is left is the sender's write of `sent` after the SMTP reply.
      },
      { withinMs: 20_000, everyMs: 100 },
    );
    expect(view).toMatchObject({ status: 'sent', template: { name: 'order-shipped', version: 1 } });
  }, 60_000);
});
