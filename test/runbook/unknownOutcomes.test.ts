/**
 * docs/runbook.md procedure 2 (`UnknownOutcomes`), walked as the on-call operator walks it, on the
 * local stack with a real relay (smtp-server, local/smtp/controllableSmtpServer.ts) behind
 * local/smtp/relayOutage.ts, and the real `postdate` CLI. Two messages under `on_ambiguous: "hold"`
 * end `unknown` for real: the first's connection is cut by the outage proxy after the final dot,
 * while the relay, which has read and queued the body, is still about to answer 250 (`cuts` records
 * the cut); the relay drops the second's connection after the dot without queuing it. Then every
 * step as written: the list, `messages show` (its Message-ID and the relay to search), the relay's
 * log searched by that Message-ID, the decision (found: `discard`; not found: `retry`), and Verify.
 * The promise checker is the relay: what it queued per Postdate id, once each in the end.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { ACCEPT, startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { type RelayOutage, startRelayOutage } from '../../local/smtp/relayOutage.js';
import { eventually } from '../support/eventually.js';
import { enqueue, operatorCli, shownMessage } from './operatorShell.js';

const MESSAGE_ID_DOMAIN = 'mail.example.com';

describe('runbook procedure 2: unknown messages after a connection cut after the final dot', () => {
  let server: TestSmtpServer;
  let relay: RelayOutage;
  let stack: LocalStack;

  beforeAll(async () => {
    server = await startSmtpServer();
    relay = await startRelayOutage({ targetHost: server.host, targetPort: server.port });
    const config = loadConfig(
      {
        POSTDATE_API_KEY: 'pd_runbook-unknown-outcomes-01',
        SMTP_HOST: relay.host,
        SMTP_PORT: String(relay.port),
        POSTDATE_RELAY_PROBE_SECONDS: '1',
        POSTDATE_MESSAGE_ID_DOMAIN: MESSAGE_ID_DOMAIN,
      },
      'local',
    );
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await relay?.close();
    await server?.close();
  });

  /** What the relay queued (its log's "queued as" lines), per Postdate id. */
  const queuedAtRelay = (id: string) =>
    server.received.filter((mail) => mail.postdateId === id && mail.outcome === 'accepted').length;

  it('walks steps 1 to 4 and Verify: the one the relay has is discarded, the one it lost is retried, each queued once', async () => {
    const postdate = operatorCli(stack);
    // The first transaction: the relay reads the body and queues it, and answers 250 only later; the
    // second: it closes the connection after the dot, nothing queued; then it accepts everything.
    server.script({ afterData: { acceptAfterMs: 60_000 }, label: 'queued' }, { afterData: 'drop' }, ACCEPT);

    const kept = await enqueue(stack, 'runbook-unknown-kept', {
      on_ambiguous: 'hold',
      tags: { kind: 'receipt' },
    });
    await eventually(
      'the relay to have read the first body',
      () => server.received.some((mail) => mail.postdateId === kept) || undefined,
      { withinMs: 30_000 },
    );
    await relay.set('down');
    expect(relay.cuts.length).toBeGreaterThanOrEqual(1);
    await relay.set('up');
    await eventually(
      'the first unknown',
      async () => (await shownMessage(postdate, kept)).status === 'unknown',
      {
        withinMs: 30_000,
      },
    );

    const lost = await enqueue(stack, 'runbook-unknown-lost', {
      on_ambiguous: 'hold',
      tags: { kind: 'receipt' },
    });
    await eventually(
      'the second unknown',
      async () => (await shownMessage(postdate, lost)).status === 'unknown',
      {
        withinMs: 30_000,
      },
    );

    // Step 1: list them.
    const listed = await postdate('messages', 'list', '--status', 'unknown', '--since', '7d');
    expect(listed.code, listed.stdout).toBe(0);
    expect(listed.stdout).toContain(kept);
    expect(listed.stdout).toContain(lost);

    // Step 2: for each, its Message-ID and the relay (and time) of its last attempt.
    for (const id of [kept, lost]) {
      const shown = await postdate('messages', 'show', id);
      expect(shown.code, shown.stdout).toBe(0);
      expect(shown.stdout, shown.stdout).toContain(`<${id}@${MESSAGE_ID_DOMAIN}>`);
      expect(shown.stdout, shown.stdout).toMatch(/ambiguous/);
      expect(shown.stdout, shown.stdout).toMatch(/relay:\s+default/);
      // Its words give both of step 4's ways out, as the runbook does.
      expect(shown.stdout, shown.stdout).toContain(`postdate messages retry ${id}`);
      expect(shown.stdout, shown.stdout).toContain(`postdate messages discard ${id}`);
    }

    // Step 3: the relay's log searched for each Message-ID (locally: what the relay queued).
    const foundAtRelay = (id: string) =>
      server.received.some(
        (mail) => mail.messageId === `<${id}@${MESSAGE_ID_DOMAIN}>` && mail.outcome === 'accepted',
      );
    expect(foundAtRelay(kept)).toBe(true);
    expect(foundAtRelay(lost)).toBe(false);

    // Step 4: found → discard (stays unknown, stops waiting); not found → retry (sent now).
    const discarded = await postdate('messages', 'discard', kept);
    expect(discarded.code, discarded.stdout).toBe(0);
    const retried = await postdate('messages', 'retry', lost);
    expect(retried.code, retried.stdout).toBe(0);

    // Verify.
    await eventually(
      'the retried message sent',
      async () => (await shownMessage(postdate, lost)).status === 'sent',
      {
        withinMs: 30_000,
      },
    );
    // The discarded one stays unknown (only a send proves a send), and says it was decided.
    const decided = await postdate('messages', 'show', kept);
    expect(decided.stdout).toMatch(/status:\s+unknown/);
    expect(decided.stdout, decided.stdout).toMatch(/discarded:\s+\d{4}-/);
    expect(decided.stdout, decided.stdout).not.toContain(`postdate messages retry ${kept}`);
    // "lists only what you left": the discarded one is told apart from one still waiting.
    const left = await postdate('messages', 'list', '--status', 'unknown', '--since', '7d');
    expect(left.stdout).not.toContain(lost);
    const keptLine = left.stdout.split('\n').find((line) => line.includes(kept));
    expect(keptLine, left.stdout).toMatch(/unknown \(discarded\)/);
    expect(queuedAtRelay(kept)).toBe(1);
    expect(queuedAtRelay(lost)).toBe(1);
  }, 150_000);
});
