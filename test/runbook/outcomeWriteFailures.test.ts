/**
 * docs/runbook.md procedure 1a (`OutcomeWriteFailures`), walked as the on-call operator walks it, on
 * the local stack with a real relay (smtp-server) and the real `postdate` CLI, then procedure 2 for
 * the message it leaves `unknown`.
 *
 * How the outcome write fails, for real: the senders run beside the stack (`sender: 'external'`)
 * and reach DynamoDB Local through a TCP pass-through (local/smtp/relayOutage.ts, nothing of SMTP
 * in its `refusing` mode); the relay, having queued both bodies, switches it to `refusing` and only
 * then answers 250. Every outcome write after that 250 is refused (ECONNREFUSED) until the sender's
 * invocation runs out; then DynamoDB comes back. Not SIGSTOP: requests that reached the stopped
 * process would sit in its sockets and could land when it resumes, a different case (a write that
 * landed late). Compressed in one place only, the sender's timing: SMTP timeouts of 1 s and a function
 * timeout of 34 s (deployed 20 s, 120 s, 240 s), about the least the time rule (core/sendTiming.ts:
 * 2 × 1 + 1 + the 28 s reserve) allows, and a lease of 38 s (deployed 300 s), 4 s past the timeout
 * so that the operator's look comes before the lease ends (else the copy back at its end finds
 * DynamoDB still refusing and waits 30 s more).
 *
 * Checked as the operator reads it: the alarm's metric (the sender's EMF document, read against the
 * alarm of the synthesized template), step 1's log search as the runbook writes it (ids and the
 * relay's `code`, no address or body), `messages show` while the lease runs (`sending`, the `lease
 * relay`). Then DynamoDB back, decided from what the relay received, never from Postdate's account:
 * `hold` → `unknown`, no second copy; `retry` → sent again once with the same Message-ID (DESIGN §5:
 * an expired lease is ambiguous; decision 0293). Step 3: procedure 2 for the `unknown` one, decided
 * by the line's 250 (the relay's record agrees): discarded; the relay still has it once.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack, startSenderEventSource } from '../../local/localStack.js';
import { type RelayOutage, startRelayOutage } from '../../local/smtp/relayOutage.js';
import { synthesizePostdate } from '../cdk/support/synthesize.js';
import { type AlarmOf, alarmOf, datapoints, type EmfDocument } from '../support/emfAlarms.js';
import { eventually } from '../support/eventually.js';
import { matchesFilterPattern, runbookFilterPattern } from '../support/runbookLogSearch.js';
import { capturedLogs, enqueue, operatorCli, shownMessage } from './operatorShell.js';

const STACK = 'PostdateUnderTest';

/** What the relay received: each message it queued, as its own log would show it. */
interface Queued {
  readonly postdateId: string | undefined;
  readonly messageId: string | undefined;
  readonly raw: string;
}

/** The OutcomeWriteFailures alarm of the synthesized template (lib/constructs/Ops.ts). */
function outcomeWriteAlarm(): AlarmOf {
  const alarms = Object.entries(synthesizePostdate().template.findResources('AWS::CloudWatch::Alarm'))
    .map(([id, resource]) => [id, (resource as { Properties: Record<string, unknown> }).Properties] as const)
    .filter(([, properties]) => properties.MetricName === 'OutcomeWriteFailures');
  expect(alarms).toHaveLength(1);
  const [id, properties] = alarms[0] as [string, Record<string, unknown>];
  return alarmOf(id, properties);
}

describe('runbook procedure 1a: an outcome write that never landed', () => {
  let relay: SMTPServer;
  let dynamodb: RelayOutage;
  let stack: LocalStack;
  let senders: ReturnType<typeof startSenderEventSource> | undefined;
  let logs: ReturnType<typeof capturedLogs>;
  let alarm: AlarmOf;
  const queued: Queued[] = [];
  /** The bodies the relay holds its 250 for: once both are in, DynamoDB refuses and they are answered. */
  const waiting: (() => void)[] = [];
  let holdFor = 2;

  beforeAll(async () => {
    logs = capturedLogs({ echo: false });
    relay = new SMTPServer({
      disabledCommands: ['STARTTLS', 'AUTH'],
      authOptional: true,
      logger: false,
      onData(stream, _session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          queued.push({
            raw,
            postdateId: /^X-Postdate-Id:\s*(\S+)/im.exec(raw)?.[1],
            messageId: /^Message-ID:\s*(\S+)/im.exec(raw)?.[1],
          });
          if (holdFor === 0) {
            callback();
            return;
          }
          waiting.push(() => callback());
          if (waiting.length < holdFor) return;
          holdFor = 0;
          // The relay has both; DynamoDB refuses from now on; then the 250s.
          void dynamodb.set('refusing').then(() => {
            for (const answer of waiting.splice(0)) answer();
          });
        });
      },
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const { port } = relay.server.address() as AddressInfo;
    const config = loadConfig(
      {
        POSTDATE_API_KEY: 'pd_runbook-outcome-writes-01',
        SMTP_HOST: '127.0.0.1',
        SMTP_PORT: String(port),
        POSTDATE_SMTP_TIMEOUT_SECONDS: '1',
        POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS: '1',
        POSTDATE_SENDER_TIMEOUT_SECONDS: '34',
        POSTDATE_LEASE_SECONDS: '38',
      },
      'local',
    );
    alarm = outcomeWriteAlarm();
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true, sender: 'external' });
    dynamodb = await startRelayOutage({ targetHost: '127.0.0.1', targetPort: stack.ports.dynamodb });
    senders = startSenderEventSource({
      sqsEndpoint: stack.sqsEndpoint,
      queueUrl: stack.queueUrls.send,
      queueArn: stack.queueArns.send,
      environment: {
        ...stack.functionEnvironment,
        AWS_ENDPOINT_URL_DYNAMODB: `http://${dynamodb.host}:${dynamodb.port}`,
        // As the construct sets it on every function (the alarm's `stack` dimension), and the EMF
        // metrics on, as in AWS (the local stack turns them off unless asked).
        POSTDATE_STACK: STACK,
        POWERTOOLS_METRICS_DISABLED: 'false',
      },
      log: () => undefined,
    });
  }, 90_000);

  afterAll(async () => {
    await dynamodb?.set('up');
    await senders?.stop();
    await stack?.stop();
    await dynamodb?.close();
    await new Promise<void>((resolve) => (relay ? relay.close(() => resolve()) : resolve()));
    logs?.restore();
  });

  /** How many times the relay queued a message (its own record, not Postdate's). */
  const atRelay = (id: string) => queued.filter((mail) => mail.postdateId === id);

  it('walks 1a and, for the held one, procedure 2: hold ends unknown with one copy, retry is sent again once', async () => {
    const postdate = operatorCli(stack, { bin: true });
    const hold = await enqueue(stack, 'runbook-outcome-write-hold', { on_ambiguous: 'hold' });
    const retry = await enqueue(stack, 'runbook-outcome-write-retry', { on_ambiguous: 'retry' });

    // The alarm: the sender's log and metric once its invocation ran out. Step 1's search, as the
    // runbook writes it, over the sender's log events.
    const pattern = runbookFilterPattern('1a', 1, '/aws/lambda/$SENDER');
    const failures = await eventually(
      'both senders to give up their outcome writes',
      () => {
        const lines = logs.of('postdate-sender').filter((line) => matchesFilterPattern(pattern, line));
        return [hold, retry].every((id) => lines.some((line) => line.includes(id))) && lines;
      },
      { withinMs: 60_000, everyMs: 200 },
    );
    expect(dynamodb.mode()).toBe('refusing');
    expect(atRelay(hold)).toHaveLength(1);
    expect(atRelay(retry)).toHaveLength(1);

    // The metric the alarm reads: EMF, namespace and dimensions as the template's alarm has them.
    // (Published when the invocation ends, just after the line.)
    expect(alarm.dimensions).toEqual({ service: 'postdate', stack: STACK });
    expect(alarm.statistic).toBe('Sum');
    expect(alarm.comparison).toBe('GreaterThanOrEqualToThreshold');
    const emf = () =>
      logs
        .of('postdate')
        .filter((line) => line.includes('"_aws"'))
        .map((line) => JSON.parse(line) as EmfDocument);
    await eventually(
      () => `the alarm's datapoints among ${JSON.stringify(emf())}`,
      () => datapoints(alarm, emf()).reduce((sum, value) => sum + value, 0) >= alarm.threshold,
      { withinMs: 10_000 },
    );

    // The log line: the ids to look up and the relay's answer (`code`), no address, no subject or body.
    for (const id of [hold, retry]) {
      const line = failures.find((entry) => entry.includes(id)) as string;
      const fields = JSON.parse(line) as Record<string, unknown>;
      expect(fields).toMatchObject({ id, rev: 1, code: '250', status: 'sent' });
      expect(fields.sqsMessageId).toEqual(expect.any(String));
      expect(line).not.toMatch(/@|Runbook|Hello/);
    }

    // `messages show <id>` (the CLI reaches DynamoDB; the senders do not): the lease and its relay.
    for (const shown of await Promise.all([hold, retry].map((id) => postdate('messages', 'show', id)))) {
      expect(shown.code, shown.stdout).toBe(0);
      expect(shown.stdout).toMatch(/status:\s+sending/);
      expect(shown.stdout).toMatch(/lease relay:\s+default/);
    }

    // DynamoDB takes writes again: the sweeper and the lease do the rest.
    await dynamodb.set('up');
    const settled = async (id: string) => {
      const { status } = await shownMessage(postdate, id);
      return !['sending', 'retrying'].includes(status) && status;
    };
    await eventually('both messages to leave sending', async () => (await settled(hold)) && settled(retry), {
      withinMs: 60_000,
      everyMs: 250,
    });
    // hold: never a second copy at the relay, and `unknown`. retry: sent again, once, same Message-ID.
    expect(atRelay(hold)).toHaveLength(1);
    expect(await settled(hold)).toBe('unknown');
    expect(await settled(retry)).toBe('sent');
    const copies = atRelay(retry);
    expect(copies).toHaveLength(2);
    expect(copies[1]?.messageId).toBe(copies[0]?.messageId);
    const retried = await shownMessage(postdate, retry);
    expect(retried.attempts).toBe(2);
    expect(retried.history.map((entry) => entry.outcome)).toEqual(
      expect.arrayContaining(['ambiguous', 'sent']),
    );

    // Procedure 2 for the held one: list, show (its Message-ID and relay), the relay's log, decide.
    const listed = await postdate('messages', 'list', '--status', 'unknown', '--since', '7d');
    expect(listed.stdout).toContain(hold);
    const shown = await postdate('messages', 'show', hold);
    const messageId = atRelay(hold)[0]?.messageId as string;
    expect(shown.stdout).toContain(messageId);
    expect(shown.stdout).toMatch(/relay:\s+default/);
    // Step 3 of 1a: the line's code 250 says found (the relay's own record agrees) → discard.
    expect(messageId).toBe(`<${hold}@${stack.messageIdDomain}>`);
    const discarded = await postdate('messages', 'discard', hold);
    expect(discarded.code, discarded.stdout).toBe(0);
    const left = await postdate('messages', 'list', '--status', 'unknown', '--since', '7d');
    expect(left.stdout.split('\n').find((line) => line.includes(hold))).toMatch(/unknown \(discarded\)/);
    expect(atRelay(hold)).toHaveLength(1);
  }, 150_000);
});
