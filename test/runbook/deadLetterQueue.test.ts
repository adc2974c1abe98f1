/**
 * docs/runbook.md procedure 1 (`DeadLetterQueueNotEmpty`), walked on the local stack: a real relay
 * (smtp-server) answers 451 after DATA while "broken", so with `POSTDATE_MAX_ATTEMPTS=1` the message
 * becomes `dead` and the sender puts its copy on the DLQ, as in production. Then the runbook's
 * commands through the real entry point (cli/postdate.mjs), and what it promises of each: `dlq
 * show` names it, `messages list --status dead` lists it, a dry-run redrive moves nothing, the
 * redrive sends it once the cause is fixed, and Verify holds.
 */

import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { runBin } from '../cli/cliFixtures.js';
import { eventually } from '../support/eventually.js';

describe('runbook procedure 1: a dead message in the DLQ', () => {
  let broken = true;
  const received: string[] = [];
  let relay: SMTPServer;
  let stack: LocalStack;

  beforeAll(async () => {
    relay = new SMTPServer({
      disabledCommands: ['STARTTLS', 'AUTH'],
      authOptional: true,
      logger: false,
      onData(stream, _session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          if (broken) {
            callback(
              Object.assign(new Error('4.3.0 mailbox store temporarily unavailable'), { responseCode: 451 }),
            );
            return;
          }
          received.push(Buffer.concat(chunks).toString('utf8'));
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const { port } = relay.server.address() as AddressInfo;
    const config = loadConfig(
      {
        POSTDATE_API_KEY: 'pd_runbook-dead-letter-01',
        SMTP_HOST: '127.0.0.1',
        SMTP_PORT: String(port),
        POSTDATE_MAX_ATTEMPTS: '1',
      },
      'local',
    );
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await new Promise<void>((resolve) => (relay ? relay.close(() => resolve()) : resolve()));
  });

  async function postdate(...args: string[]): Promise<{ stdout: string; code: number }> {
    return runBin(['--table', stack.tableName, ...args], {
      AWS_ENDPOINT_URL_DYNAMODB: stack.dynamodbEndpoint,
      AWS_ENDPOINT_URL_SQS: stack.sqsEndpoint,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_REGION: 'us-east-1',
      POSTDATE_SEND_DLQ_URL: stack.queueUrls.sendDeadLetter,
      POSTDATE_SEND_QUEUE_URL: stack.queueUrls.send,
      POSTDATE_MAX_ATTEMPTS: '1',
    });
  }

  async function status(id: string): Promise<string> {
    const { stdout } = await postdate('--json', 'messages', 'show', id);
    return (JSON.parse(stdout) as { message: { status: string } }).message.status;
  }

  it('walks steps 1, 2, 4 and Verify', async () => {
    const answer = await fetch(`${stack.apiUrl}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': 'runbook-dead-1',
      },
      body: JSON.stringify({ to: ['ada@example.com'], subject: 'Dead', text: 'Hello.' }),
    });
    expect(answer.status).toBe(202);
    const { id } = (await answer.json()) as { id: string };
    await eventually('the message dead', async () => (await status(id)) === 'dead', { withinMs: 30_000 });

    // Step 1: what is there.
    const shown = await eventually(
      'dlq show to name the dead message',
      async () => {
        const { stdout } = await postdate('dlq', 'show');
        return stdout.includes(id) && /messages:\s+1\b/.test(stdout) ? stdout : undefined;
      },
      { withinMs: 30_000 },
    );
    expect(shown).toMatch(/451/);
    // Step 2: why.
    expect((await postdate('messages', 'list', '--status', 'dead', '--since', '24h')).stdout).toContain(id);

    // Step 3: the cause is fixed. Step 4: rehearse (nothing moves), then redrive.
    broken = false;
    const rehearsal = await postdate('dlq', 'redrive', '--ids', id, '--dry-run');
    expect(rehearsal.code, rehearsal.stdout).toBe(0);
    expect(await status(id)).toBe('dead');
    expect((await postdate('dlq', 'show')).stdout).toMatch(/messages:\s+1\b/);
    const redrive = await postdate('dlq', 'redrive', '--ids', id);
    expect(redrive.code, redrive.stdout).toBe(0);

    // Verify.
    await eventually('the redriven message sent', async () => (await status(id)) === 'sent', {
      withinMs: 60_000,
    });
    expect(received.filter((mail) => mail.includes(id))).toHaveLength(1);
    expect((await postdate('dlq', 'show')).stdout).toMatch(/messages:\s+0\b/);
    expect((await postdate('messages', 'list', '--status', 'dead', '--since', '24h')).stdout).not.toContain(
      id,
    );
  }, 150_000);
});
