/**
 * Suppressions as an operator meets them on the local stack (DESIGN §12, §11, §14; decision 0256):
 * the functions as they run, a real SMTP server as the relay, real HTTP and a real webhook receiver.
 * A relay's 5.1.1 for one recipient (the other accepted) adds that mailbox with its reason and the
 * message's id; the next message to any spelling of it ends `suppressed` with no MAIL FROM at the
 * relay and one `message.suppressed` webhook counting it; an address added over HTTP is left out of
 * the envelope of a message that also goes to someone else, and counted on the message; a test
 * key's simulated bounce lands on its own list only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { SIMULATOR_DOMAIN } from '../../lambdas/core/testSide.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { createLocalStackTestKey, postLocalMessage } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { startReceiver } from '../webhooks/webhookHarness.js';

const LIVE_KEY = 'pd_suppressions-local-live-01';
const TEST_KEY = 'pd_test_suppressions-local-01';

interface View {
  readonly status: string;
  readonly recipients: { accepted: number; pending: number; rejected: number; suppressed: number };
}
interface Entry {
  readonly address: string;
  readonly reason: string;
  readonly message_id: string | null;
}

describe('suppressions on the local stack, against a real relay', () => {
  let relay: TestSmtpServer;
  let stack: LocalStack;
  let hook: Awaited<ReturnType<typeof startReceiver>>;

  const auth = (secret: string) => ({ authorization: `Bearer ${secret}` });
  async function enqueue(secret: string, key: string, body: Record<string, unknown>): Promise<string> {
    const response = await postLocalMessage(stack, {
      secret,
      key,
      body: { from: 'shop@example.com', subject: 'Your order', text: 'Hello.', ...body },
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as { id: string }).id;
  }
  async function view(id: string, secret = LIVE_KEY): Promise<View> {
    return (await (
      await fetch(`${stack.apiUrl}/v1/messages/${id}`, { headers: auth(secret) })
    ).json()) as View;
  }
  async function settled(id: string, secret = LIVE_KEY): Promise<View> {
    return eventually(
      `message ${id} settled`,
      async () => {
        const seen = await view(id, secret);
        return ['sent', 'failed', 'suppressed'].includes(seen.status) ? seen : undefined;
      },
      { withinMs: 60_000, everyMs: 100 },
    );
  }
  async function entries(secret = LIVE_KEY): Promise<Entry[]> {
    const response = await fetch(`${stack.apiUrl}/v1/suppressions?limit=100`, { headers: auth(secret) });
    expect(response.status).toBe(200);
    return ((await response.json()) as { items: Entry[] }).items;
  }
  const eventsOf = (id: string) =>
    hook.received
      .map(
        (request) =>
          JSON.parse(request.body) as { type: string; data: View & { id: string; previous_status: string } },
      )
      .filter((event) => event.data.id === id);

  beforeAll(async () => {
    relay = await startSmtpServer();
    // The relay refuses one mailbox for good, as Postfix does for a user it does not know.
    relay.script({
      rcptTo: (address) =>
        address.toLowerCase() === 'gone@example.org'
          ? { code: 550, message: '5.1.1 <gone@example.org>: Recipient address rejected: User unknown' }
          : undefined,
    });
    hook = await startReceiver();
    stack = await startLocalStack({
      config: loadConfig(
        { POSTDATE_API_KEY: LIVE_KEY, SMTP_HOST: relay.host, SMTP_PORT: String(relay.port) },
        'local',
      ),
      ports: ANY_FREE_PORTS,
      quiet: true,
    });
    await createLocalStackTestKey(stack, TEST_KEY);
    const created = await fetch(`${stack.apiUrl}/v1/webhooks`, {
      method: 'POST',
      headers: { ...auth(LIVE_KEY), 'content-type': 'application/json' },
      body: JSON.stringify({ url: hook.url() }),
    });
    expect(created.status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await hook?.close();
    await relay?.close();
  });

  it('a 5.1.1 for one recipient adds that mailbox; the next message to it ends suppressed, no MAIL FROM, one webhook', async () => {
    const first = await enqueue(LIVE_KEY, 'suppress-local-first', {
      to: ['Gone <Gone@Example.ORG>', 'ada@example.org'],
    });
    expect(await settled(first)).toMatchObject({
      status: 'sent',
      recipients: { accepted: 1, rejected: 1, suppressed: 0, pending: 0 },
    });
    expect(await entries()).toEqual([
      expect.objectContaining({ address: 'gone@example.org', reason: 'hard_bounce', message_id: first }),
    ]);

    const transactionsBefore = relay.transactions;
    const second = await enqueue(LIVE_KEY, 'suppress-local-second', {
      to: ['GONE@example.org'],
      bcc: ['gone@EXAMPLE.org'],
    });
    // Counted by place, as `rejected` is: the mailbox in `to` and in `bcc` is two (decision 0237).
    expect(await settled(second)).toMatchObject({
      status: 'suppressed',
      recipients: { accepted: 0, rejected: 0, pending: 0, suppressed: 2 },
    });
    const suppressedEvents = await eventually(
      'the message.suppressed webhook',
      () => {
        const seen = eventsOf(second).filter((event) => event.type === 'message.suppressed');
        return seen.length > 0 ? seen : undefined;
      },
      { withinMs: 60_000, everyMs: 100 },
    );
    expect(suppressedEvents).toHaveLength(1);
    expect(suppressedEvents[0]?.data).toMatchObject({ status: 'suppressed', previous_status: 'sending' });
    expect(suppressedEvents[0]?.data.recipients.suppressed).toBe(2);
    // No SMTP transaction for it: the relay saw no MAIL FROM.
    expect(relay.transactions).toBe(transactionsBefore);
  });

  it('an address added over HTTP is left out of the envelope and counted; a bad one is a 400 naming `address` that adds nothing', async () => {
    const before = await entries();
    const bad = await fetch(`${stack.apiUrl}/v1/suppressions/${encodeURIComponent('not an address')}`, {
      method: 'PUT',
      headers: auth(LIVE_KEY),
    });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(JSON.stringify(await bad.json())).toContain('"field":"address"');
    expect(await entries()).toEqual(before);

    const added = await fetch(`${stack.apiUrl}/v1/suppressions/${encodeURIComponent('Grace@Example.org')}`, {
      method: 'PUT',
      headers: auth(LIVE_KEY),
    });
    expect(added.status).toBe(200);
    expect(await added.json()).toMatchObject({
      address: 'grace@example.org',
      reason: 'manual',
      message_id: null,
    });

    const id = await enqueue(LIVE_KEY, 'suppress-local-partly', {
      to: ['bob@example.org'],
      bcc: ['grace@example.org'],
    });
    expect(await settled(id)).toMatchObject({
      status: 'sent',
      recipients: { accepted: 1, rejected: 0, suppressed: 1, pending: 0 },
    });
    const delivered = relay.deliveries().filter((mail) => mail.postdateId === id);
    expect(delivered.map((mail) => mail.to)).toEqual([['bob@example.org']]);
  });

  it("a test key's simulated bounce lands on the test side's list only", async () => {
    const liveBefore = await entries();
    const id = await enqueue(TEST_KEY, 'suppress-local-test-bounce', {
      to: [`bounce@${SIMULATOR_DOMAIN}`],
    });
    expect(await settled(id, TEST_KEY)).toMatchObject({ status: 'failed' });
    expect(await entries(TEST_KEY)).toEqual([
      expect.objectContaining({
        address: `bounce@${SIMULATOR_DOMAIN}`,
        reason: 'hard_bounce',
        message_id: id,
      }),
    ]);
    expect(await entries()).toEqual(liveBefore);
  });
});
