/**
 * docs/runbook.md procedure 3 (`SmtpConfigErrors`), walked as the on-call operator walks it, on the
 * local stack: a real relay (smtp-server, local/smtp/controllableSmtpServer.ts) that requires AUTH
 * and answers `535 5.7.8` to any login but the current one, and senders that log in with the old
 * password. Locally there is no Secrets Manager (docs/local-stack.md): the senders take the login
 * from SMTP_USER/SMTP_PASS, so the runbook's step 3 (`put-secret-value`, picked up without a
 * deploy) is played by the senders' next start with the new password (`sender: 'external'`, as the
 * chaos run's AUTH fault does). Steps 1 and 4 and Verify run as written with the real CLI; step 2
 * and the log lines of Verify are `aws logs tail` (not local). The promise checker is the relay:
 * the held message arrives once, after the fix.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack, startSenderEventSource } from '../../local/localStack.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { eventually } from '../support/eventually.js';
import { matchesFilterPattern, runbookFilterPattern } from '../support/runbookLogSearch.js';
import { capturedLogs, enqueue, operatorCli, shownMessage } from './operatorShell.js';

const LOGIN = { username: 'postdate', password: 'rotated-password-2' };

describe('runbook procedure 3: the relay refuses our login (535)', () => {
  let relay: TestSmtpServer;
  let stack: LocalStack;
  let senders: ReturnType<typeof startSenderEventSource> | undefined;
  /** The functions' log events, as CloudWatch Logs would hold them (step 2 reads the sender's). */
  let logs: ReturnType<typeof capturedLogs>;

  beforeAll(async () => {
    logs = capturedLogs();
    relay = await startSmtpServer({ credentials: LOGIN });
    const config = loadConfig(
      {
        POSTDATE_API_KEY: 'pd_runbook-smtp-config-01',
        SMTP_HOST: relay.host,
        SMTP_PORT: String(relay.port),
        SMTP_USER: LOGIN.username,
        SMTP_PASS: 'old-password-1',
        POSTDATE_RELAY_PROBE_SECONDS: '1',
      },
      'local',
    );
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true, sender: 'external' });
  }, 90_000);

  afterAll(async () => {
    await senders?.stop();
    await stack?.stop();
    await relay?.close();
    logs?.restore();
  });

  /** The senders, started with this password (their login's only source locally). */
  const startSenders = (password: string) =>
    startSenderEventSource({
      sqsEndpoint: stack.sqsEndpoint,
      queueUrl: stack.queueUrls.send,
      queueArn: stack.queueArns.send,
      environment: { ...stack.functionEnvironment, SMTP_PASS: password },
      log: () => undefined,
    });

  it('walks steps 1, 3, 4 and Verify: the held message goes once the login is fixed, once', async () => {
    const postdate = operatorCli(stack);
    senders = startSenders('old-password-1');
    const id = await enqueue(stack, 'runbook-smtp-config-1', { tags: { kind: 'welcome' } });
    await eventually(
      'the relay to refuse a login',
      () => relay.authAttempts.some((a) => !a.ok) || undefined,
      {
        withinMs: 30_000,
      },
    );

    // Step 1: which setting.
    const retrying = await eventually(
      'messages list to show it retrying',
      async () => {
        const { stdout } = await postdate('messages', 'list', '--status', 'retrying', '--since', '1h');
        return stdout.includes(id) ? stdout : undefined;
      },
      { withinMs: 30_000 },
    );
    expect(retrying).toContain(id);
    const shown = await postdate('messages', 'show', id);
    expect(shown.stdout, shown.stdout).toMatch(/last error:\s+our SMTP configuration is wrong.*535 5\.7\.8/);
    // A refused login is the relay's outage, not this message's failure: no attempt counted, held by
    // the breaker (not a long backoff), and its words send the operator to the breaker's view.
    expect(shown.stdout).toMatch(/attempts:\s+0\b/);
    expect(shown.stdout, shown.stdout).not.toMatch(/status:\s+retrying — a transient failure/);
    expect(shown.stdout, shown.stdout).toMatch(/status:\s+retrying — .*postdate sending status/);
    expect(shown.stdout, shown.stdout).toMatch(/last error:.*a refused login or TLS holds .*breaker/);
    const breaker = await postdate('sending', 'status');
    expect(breaker.stdout, breaker.stdout).toMatch(/UNAVAILABLE: no relay takes mail/);
    expect(breaker.stdout, breaker.stdout).toMatch(
      /relay default:\s+breaker (open|half-open) since .*535: SMTP authentication failed/,
    );

    // Step 2: the sender's log, read with the runbook's pattern, names the refused login (no address).
    const pattern = runbookFilterPattern('3', 2, '/aws/lambda/$SENDER');
    // The line is written just after the breaker the CLI read: waited for, with a deadline.
    await eventually(
      () =>
        `--filter-pattern '${pattern}' to show the 535 among the sender's lines: ${logs.of('postdate-sender').join(' | ')}`,
      () =>
        logs
          .of('postdate-sender')
          .some((line) => matchesFilterPattern(pattern, line) && line.includes('"code":"535"')) || undefined,
      { withinMs: 10_000 },
    );

    // Step 3 (the local equivalent of put-secret-value): the senders get the rotated password.
    await senders.stop();
    senders = startSenders(LOGIN.password);

    // Step 4 and Verify.
    await eventually(
      'the held message sent',
      async () => (await shownMessage(postdate, id)).status === 'sent',
      {
        withinMs: 60_000,
      },
    );
    expect((await postdate('messages', 'list', '--since', '15m', '--status', 'sent')).stdout).toContain(id);
    expect((await postdate('messages', 'list', '--status', 'retrying')).stdout).not.toContain(id);
    const reconciled = await postdate('reconcile', '--since', '24h');
    expect(reconciled.code, reconciled.stdout).toBe(0);
    expect(relay.deliveries().filter((mail) => mail.postdateId === id)).toHaveLength(1);
    // The refused logins counted no attempt: one, the send.
    const sent = await shownMessage(postdate, id);
    expect(sent.attempts).toBe(1);
    expect(sent.history.map((entry) => entry.outcome)).toEqual(['sent']);
    expect((await postdate('sending', 'status')).stdout).toMatch(/available \(breaker closed\)/);
  }, 150_000);
});
