/**
 * docs/runbook.md procedure 5 (`RelayUnavailable`), walked as the on-call operator walks it, on the
 * local stack with a real relay (an SMTP sink behind local/smtp/relayOutage.ts, which answers 421 at
 * the greeting while `down`) and the real `postdate` entry point (cli/postdate.mjs). Each step's
 * command is run as the runbook writes it, and its output is held to what the runbook promises:
 * the breaker says UNAVAILABLE and reconcile exits 1 while the relay is down; a pause is named on the
 * message it holds; after the relay is back and sending resumed, the message is sent once, with one
 * attempt (the outage counted none), and every Verify line holds.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { type RelayOutage, startRelayOutage } from '../../local/smtp/relayOutage.js';
import { type SmtpSink, startSmtpSink } from '../../local/smtp/smtpSink.js';
import { eventually } from '../support/eventually.js';
import { enqueue, operatorCli } from './operatorShell.js';

const PROBE_SECONDS = 1;

describe('runbook procedure 5: a provider outage, pausing and resuming sending', () => {
  let sink: SmtpSink;
  let relay: RelayOutage;
  let stack: LocalStack;

  beforeAll(async () => {
    sink = await startSmtpSink({ port: 0 });
    relay = await startRelayOutage({ targetHost: '127.0.0.1', targetPort: sink.port });
    const config = loadConfig(
      {
        POSTDATE_API_KEY: 'pd_runbook-provider-outage-01',
        SMTP_HOST: relay.host,
        SMTP_PORT: String(relay.port),
        POSTDATE_RELAY_PROBE_SECONDS: String(PROBE_SECONDS),
      },
      'local',
    );
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await relay?.close();
    await sink?.stop();
  });

  it('walks steps 1 to 4 and Verify', async () => {
    await relay.set('down');
    const postdate = operatorCli(stack);
    const id = await enqueue(stack, 'runbook-outage-1', { subject: 'Outage', tags: { kind: 'welcome' } });

    // Step 1: the breakers; reconcile exits 1 while no relay takes mail. However many probes failed,
    // the next is due one interval after the last failure, which was written before this read: never
    // more than one interval after the command returned (decision 0266; the walk of 0262 read 13 s).
    const status = await eventually(
      'sending status to say no relay takes mail, after three failed probes',
      async () => {
        const { stdout } = await postdate('sending', 'status');
        const returnedAt = Date.now();
        const nextProbe = /next probe (\S+);/.exec(stdout)?.[1];
        if (nextProbe !== undefined) {
          expect(Date.parse(nextProbe) - returnedAt, stdout).toBeLessThanOrEqual(PROBE_SECONDS * 1000);
        }
        const failed = Number(/(\d+) failed probe\(s\)/.exec(stdout)?.[1] ?? 0);
        return /UNAVAILABLE: no relay takes mail/.test(stdout) && failed >= 3 ? stdout : undefined;
      },
      { withinMs: 30_000 },
    );
    expect(status).toMatch(
      /relay default:\s+breaker (open|half-open) since .*next probe .*failed probe\(s\); .*421/,
    );
    expect((await postdate('reconcile', '--since', '1h')).code).toBe(1);

    // Step 2: a pause on purpose, named on the message it holds.
    expect((await postdate('sending', 'pause', '--reason', 'incident 42')).code).toBe(0);
    const shown = await postdate('messages', 'show', id);
    expect(shown.stdout).toMatch(/held:.*incident 42/);

    // The relay is back; step 4: resume.
    await relay.set('up');
    expect((await postdate('sending', 'resume')).code).toBe(0);

    // Verify.
    await eventually(
      'the message sent once the relay is back and sending resumed',
      async () =>
        (await postdate('--json', 'messages', 'show', id)).stdout.includes('"status": "sent"') || undefined,
      { withinMs: 60_000 },
    );
    const sent = JSON.parse((await postdate('--json', 'messages', 'show', id)).stdout) as {
      message: { status: string; attempts: number; history: { outcome: string }[] };
    };
    expect(sent.message).toMatchObject({ status: 'sent', attempts: 1 });
    expect(sent.message.history.map((entry) => entry.outcome)).toEqual(['sent']);
    expect(sink.messages().filter((mail) => mail.postdateId === id)).toHaveLength(1);
    const after = await postdate('sending', 'status');
    expect(after.stdout).toMatch(/available \(breaker closed\)/);
    expect(after.stdout).toMatch(/paused:\s+nothing/);
    const reconciled = await postdate('reconcile', '--since', '24h');
    expect(reconciled.code, reconciled.stdout).toBe(0);
    expect((await postdate('dlq', 'show')).stdout).toMatch(/messages:\s+0/);
  }, 150_000);
});
