import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { SIMULATOR_DOMAIN } from '../../lambdas/core/testSide.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import {
  receiveSimulatedMail,
  SIMULATED_MAIL_PRELOAD,
  type SimulatedMail,
} from '../../local/smtp/simulatedMailViewer.js';
import { createLocalStackTestKey, postLocalMessage } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';

/**
 * DESIGN §14: test messages "are visible in the API and the mail viewer", and are never handed to
 * SMTP. The whole local stack runs with its sender sandboxes preloading simulatedMailViewer.ts, as
 * `npm start` wires it; the relay is a real smtp-server that records every connection; this test's
 * thread listens where the viewer listens. Test messages arrive there composed as the relay would
 * get them and marked `X-Postdate-Test: true` while the relay sees no connection; a refused one
 * does not arrive; a live message goes to the relay and not there.
 */

const TEST_KEY = 'pd_test_viewer-spec-0001';
const at = (mailbox: string) => `${mailbox}@${SIMULATOR_DOMAIN}`;

describe('test messages in the local mail viewer', () => {
  let relay: TestSmtpServer;
  let stack: LocalStack;
  let listening: { close(): void };
  const shown: SimulatedMail[] = [];

  async function enqueue(key: string, secret: string, body: Record<string, unknown>): Promise<string> {
    const response = await postLocalMessage(stack, {
      secret,
      key,
      body: { from: 'Shop <shop@example.com>', text: 'Hello.', ...body },
    });
    const message = (await response.json()) as { id: string };
    expect(response.status).toBe(202);
    return message.id;
  }

  async function statusOf(id: string, secret: string): Promise<string> {
    const response = await fetch(`${stack.apiUrl}/v1/messages/${id}`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    return ((await response.json()) as { status: string }).status;
  }

  const shownWith = (postdateId: string) =>
    shown.filter((mail) =>
      new RegExp(`^X-Postdate-Id: ${postdateId}\r?$`, 'im').test(Buffer.from(mail.raw).toString('utf8')),
    );

  beforeAll(async () => {
    relay = await startSmtpServer();
    listening = receiveSimulatedMail({ host: relay.host, port: relay.port }, async (mail) =>
      shown.push(mail),
    );
    const config = loadConfig(
      { POSTDATE_API_KEY: 'pd_viewer-live-key-0001', SMTP_HOST: relay.host, SMTP_PORT: String(relay.port) },
      'local',
    );
    stack = await startLocalStack({
      config,
      ports: ANY_FREE_PORTS,
      quiet: true,
      functionPreload: [SIMULATED_MAIL_PRELOAD],
    });
    await createLocalStackTestKey(stack, TEST_KEY);
  }, 120_000);

  afterAll(async () => {
    listening?.close();
    await stack?.stop();
    await relay?.close();
  });

  it('shows a delivered test message, composed as the relay would get it and marked, with no SMTP connection', async () => {
    const connectionsBefore = relay.sessions.length;
    const delivered = await enqueue('viewer-test-delivered', TEST_KEY, {
      to: [`Sim <${at('delivered')}>`, 'Ada <ada@example.org>'],
      cc: ['grace@example.org'],
      subject: 'A test order shipped',
      html: '<p>Shipped</p>',
      headers: { 'X-Campaign': 'spring' },
    });
    const bounced = await enqueue('viewer-test-bounce', TEST_KEY, { to: [at('bounce')], subject: 'Bounced' });

    const [mail] = await eventually(
      'the delivered test message in the viewer',
      () => (shownWith(delivered).length > 0 ? shownWith(delivered) : undefined),
      { withinMs: 60_000, everyMs: 50 },
    );
    expect(mail?.from).toBe('shop@example.com');
    expect(mail?.recipients).toEqual([at('delivered'), 'ada@example.org', 'grace@example.org']);
    const parsed = await simpleParser(Buffer.from(mail?.raw ?? new Uint8Array()));
    expect(parsed.headers.get('x-postdate-test')).toBe('true');
    expect(parsed.headers.get('x-postdate-id')).toBe(delivered);
    expect(parsed.headers.get('x-campaign')).toBe('spring');
    expect(parsed.messageId).toMatch(new RegExp(`^<${delivered}@`));
    expect(parsed.subject).toBe('A test order shipped');
    expect(parsed.html).toContain('<p>Shipped</p>');

    // The bounce ends failed (refused at RCPT TO: no body went anywhere) and is not shown.
    await eventually('the bounce failed', async () => (await statusOf(bounced, TEST_KEY)) === 'failed', {
      withinMs: 60_000,
      everyMs: 100,
    });
    expect(await statusOf(delivered, TEST_KEY)).toBe('sent');
    expect(shownWith(bounced)).toEqual([]);
    // Neither test message opened a connection to the relay.
    expect(relay.sessions.length).toBe(connectionsBefore);
    expect(relay.received).toEqual([]);
  }, 90_000);

  it('sends a live message to the relay and does not show it as test mail', async () => {
    const live = await enqueue('viewer-live', stack.apiKey, { to: ['ada@example.org'], subject: 'Live' });
    await eventually(
      'the live message at the relay',
      () => relay.received.some((mail) => mail.postdateId === live),
      {
        withinMs: 60_000,
        everyMs: 50,
      },
    );
    expect(shownWith(live)).toEqual([]);
  }, 90_000);
});
