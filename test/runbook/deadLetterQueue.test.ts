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
import { eventually } from '../support/eventually.js';
import { enqueue, operatorCli, shownMessage } from './operatorShell.js';

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

  it('walks steps 1, 2, 4 and Verify', async () => {
    const postdate = operatorCli(stack, { bin: true });
    const status = async (id: string) => (await shownMessage(postdate, id)).status;
    const id = await enqueue(stack, 'runbook-dead-1', { subject: 'Dead' });
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
