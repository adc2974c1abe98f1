/**
 * Test mode as a team's CI meets it (DESIGN §14, decision 0269): the whole local stack over real HTTP,
 * a real SMTP server as its relay, and a test key. Each simulator address ends as the table in
 * docs/api-resources.md says, with `test: true`, the attempts and the history a live message would
 * show; a mixed message (a simulator address and a real one) is sent without the real one reached;
 * the relay sees no connection at all. A second CI run uses a fresh `+label` on `bounce@` and tries
 * its bounce path again, where the bare `bounce@` of the first run is now suppressed. A live key
 * naming the simulator in any spelling is a 400 naming the field, and stores nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { SIMULATOR_DOMAIN } from '../../lambdas/core/testSide.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { createLocalStackTestKey, postLocalMessage } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';

const LIVE_KEY = 'pd_testmode-ci-live-01';
const TEST_KEY = 'pd_test_testmode-ci-01';

interface History {
  readonly outcome: string;
  readonly code: string | null;
  readonly enhanced_code: string | null;
  readonly relay?: string;
}
interface View {
  readonly id: string;
  readonly status: string;
  readonly test: boolean;
  readonly attempts: number;
  readonly history: readonly History[];
  readonly recipients: { accepted: number; pending: number; rejected: number; suppressed: number };
}

const at = (mailbox: string) => `${mailbox}@${SIMULATOR_DOMAIN}`;
const FINAL = ['sent', 'failed', 'suppressed', 'unknown', 'dead'];

describe('a CI run against the local stack with a test key', () => {
  let relay: TestSmtpServer;
  let stack: LocalStack;
  const auth = (secret: string) => ({ authorization: `Bearer ${secret}` });

  async function enqueue(key: string, body: Record<string, unknown>, secret = TEST_KEY) {
    return postLocalMessage(stack, {
      secret,
      key,
      body: { from: 'shop@example.com', subject: 'Your order', text: 'Hello.', ...body },
    });
  }
  async function send(key: string, body: Record<string, unknown>): Promise<string> {
    const response = await enqueue(key, body);
    expect(response.status).toBe(202);
    return ((await response.json()) as { id: string }).id;
  }
  async function settled(id: string): Promise<View> {
    return eventually(
      `message ${id} settled`,
      async () => {
        const response = await fetch(`${stack.apiUrl}/v1/messages/${id}`, { headers: auth(TEST_KEY) });
        const seen = (await response.json()) as View;
        return FINAL.includes(seen.status) ? seen : undefined;
      },
      { withinMs: 60_000, everyMs: 100 },
    );
  }
  const codes = (view: View) => view.history.map((entry) => [entry.outcome, entry.code, entry.enhanced_code]);

  beforeAll(async () => {
    relay = await startSmtpServer();
    stack = await startLocalStack({
      config: loadConfig(
        {
          POSTDATE_API_KEY: LIVE_KEY,
          SMTP_HOST: relay.host,
          SMTP_PORT: String(relay.port),
          // A short backoff, so that `defer@` (451, then accepted) ends soon.
          POSTDATE_RETRY_BASE_SECONDS: '1',
        },
        'local',
      ),
      ports: ANY_FREE_PORTS,
      quiet: true,
    });
    await createLocalStackTestKey(stack, TEST_KEY);
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await relay?.close();
  });

  it('ends every simulator address as documented, test: true, with its history, and the relay sees no connection', async () => {
    const ids = {
      delivered: await send('ci-delivered', { to: [at('delivered')] }),
      bounce: await send('ci-bounce', { to: [at('bounce')] }),
      defer: await send('ci-defer', { to: [at('defer')] }),
      reject: await send('ci-reject', { to: [at('reject')] }),
      ambiguous: await send('ci-ambiguous', { to: [at('ambiguous')], on_ambiguous: 'hold' }),
      slow: await send('ci-slow', { to: [at('slow')] }),
      mixed: await send('ci-mixed', { to: [at('Bounce+Mixed'), 'ada@example.org'] }),
    };
    const views = Object.fromEntries(
      await Promise.all(Object.entries(ids).map(async ([name, id]) => [name, await settled(id)] as const)),
    ) as Record<keyof typeof ids, View>;

    expect(views.delivered).toMatchObject({ status: 'sent', attempts: 1, test: true });
    expect(codes(views.delivered)).toEqual([['sent', '250', '2.0.0']]);
    expect(views.bounce).toMatchObject({ status: 'failed', attempts: 1, test: true });
    expect(codes(views.bounce)).toEqual([['permanent', '550', '5.1.1']]);
    expect(views.defer).toMatchObject({ status: 'sent', attempts: 2, test: true });
    expect(codes(views.defer).map(([outcome, code]) => [outcome, code])).toEqual([
      ['transient', '451'],
      ['sent', '250'],
    ]);
    expect(views.reject).toMatchObject({ status: 'failed', attempts: 1, test: true });
    expect(codes(views.reject)).toEqual([['permanent', '550', '5.7.1']]);
    expect(views.ambiguous).toMatchObject({ status: 'unknown', attempts: 1, test: true });
    expect(views.ambiguous.history.map((entry) => entry.outcome)).toEqual(['ambiguous']);
    expect(views.slow).toMatchObject({ status: 'sent', attempts: 1, test: true });
    // The real address is "accepted" by the simulator and never reaches the relay.
    expect(views.mixed).toMatchObject({
      status: 'sent',
      test: true,
      recipients: { accepted: 1, rejected: 1, pending: 0, suppressed: 0 },
    });
    for (const view of Object.values(views))
      for (const entry of view.history) expect(entry.relay).toBe('simulator');
    expect(relay.sessions).toEqual([]);
    expect(relay.transactions).toBe(0);
  }, 120_000);

  it("lets the next CI run try its bounce path again with a fresh +label, where the last run's address is suppressed", async () => {
    const first = await settled(await send('ci-run-1', { to: [at('bounce+run-1')] }));
    expect(first).toMatchObject({ status: 'failed', attempts: 1 });
    expect(codes(first)).toEqual([['permanent', '550', '5.1.1']]);
    const second = await settled(await send('ci-run-2', { to: [at('bounce+run-2')] }));
    expect(second).toMatchObject({ status: 'failed', attempts: 1 });
    const again = await settled(await send('ci-run-1-again', { to: [at('bounce+run-1')] }));
    expect(again).toMatchObject({ status: 'suppressed', attempts: 0 });
    expect(relay.sessions).toEqual([]);
  }, 120_000);

  it('refuses the simulator to a live key in every spelling, naming the field, and stores nothing', async () => {
    for (const [index, to] of [
      [0, at('delivered')],
      [1, 'Desk <Bounce+1@Simulator.Postdate.Test>'],
    ] as const) {
      const recipients = index === 0 ? [to] : ['ada@example.org', to];
      const response = await enqueue(`live-sim-${index}`, { to: recipients }, LIVE_KEY);
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(JSON.stringify(await response.json())).toContain(`/to/${index}`);
    }
    const list = await fetch(`${stack.apiUrl}/v1/messages`, { headers: auth(LIVE_KEY) });
    expect(((await list.json()) as { items: unknown[] }).items).toEqual([]);
  });
});
