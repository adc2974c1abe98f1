/**
 * Failover on the local stack (DESIGN §15, docs/local-stack.md "Two relays"): with the backup relay
 * on, mail leaves through the first sink (`primary`); stop it, and the next message leaves through
 * the second (`backup`), once, no attempt counted for the outage, its view naming the relay.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../lambdas/core/config.js';
import { functionEnvironment } from '../../local/functionEnvironment.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';

describe('two relays on the local stack', () => {
  let stack: LocalStack;

  beforeAll(async () => {
    const config = loadConfig({ POSTDATE_API_KEY: 'pd_local-stack-two-relays-01' }, 'local');
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true, backupRelay: {} });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  });

  async function enqueue(key: string): Promise<string> {
    const answer = await fetch(`${stack.apiUrl}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: JSON.stringify({ to: ['ada@example.com'], subject: 'Failover', text: 'Hello.' }),
    });
    expect(answer.status).toBe(202);
    return ((await answer.json()) as { id: string }).id;
  }

  async function view(id: string): Promise<{ status: string; relay: string | null; attempts: number }> {
    const answer = await fetch(`${stack.apiUrl}/v1/messages/${id}`, {
      headers: { authorization: `Bearer ${stack.apiKey}` },
    });
    return (await answer.json()) as { status: string; relay: string | null; attempts: number };
  }

  it('lists the two relays to the functions', () => {
    const relays = JSON.parse(stack.functionEnvironment.POSTDATE_RELAYS ?? '[]') as {
      name: string;
      port: number;
    }[];
    expect(relays.map((relay) => [relay.name, relay.port])).toEqual([
      ['primary', stack.smtpSink?.port],
      ['backup', stack.backupSink?.port],
    ]);
    // What `npm start` writes to its stack file, where the local CLI reads its relays.
    expect(stack.relayNames).toEqual(['primary', 'backup']);
  });

  it('sends through the first sink; with it stopped, through the second, once', async () => {
    const first = await enqueue('two-relays-1');
    await eventually(
      'the first message at the primary sink',
      () => stack.smtpSink?.messages().some((mail) => mail.postdateId === first),
      { withinMs: 30_000 },
    );
    const firstSent = await eventually(
      'the first message sent',
      async () => {
        const state = await view(first);
        return state.status === 'sent' ? state : undefined;
      },
      { withinMs: 10_000 },
    );
    expect(firstSent.relay).toBe('primary');

    await stack.smtpSink?.stop();
    const second = await enqueue('two-relays-2');
    await eventually(
      'the second message at the backup sink',
      () => stack.backupSink?.messages().some((mail) => mail.postdateId === second),
      { withinMs: 30_000 },
    );
    const sent = await eventually(
      'the second message sent',
      async () => {
        const state = await view(second);
        return state.status === 'sent' ? state : undefined;
      },
      { withinMs: 10_000 },
    );
    expect(sent.relay).toBe('backup');
    // The outage counted no attempt: the one attempt is the backup's send.
    expect(sent.attempts).toBe(1);
    expect(stack.backupSink?.messages().filter((mail) => mail.postdateId === second)).toHaveLength(1);
  }, 60_000);

  it('gives the primary relay port 465 when SMTP_SECURE is set and SMTP_PORT is not (DESIGN §8)', () => {
    // Nothing listens on the relay: only the port the functions are handed is read, from the
    // environment the stack wires them with (the test above reads it from a running stack).
    const config = loadConfig({ SMTP_HOST: '127.0.0.1', SMTP_SECURE: 'true' }, 'local');
    const environment = functionEnvironment({
      config,
      host: '127.0.0.1',
      ports: stack.ports,
      resources: { queues: { urls: stack.queueUrls, arns: stack.queueArns } },
      quiet: true,
      backupSmtpPort: stack.backupSink?.port,
    });
    const relays = JSON.parse(environment.POSTDATE_RELAYS ?? '[]') as {
      name: string;
      port: number;
      secure: boolean;
    }[];
    expect(relays[0]).toMatchObject({ name: 'primary', port: 465, secure: true });
    expect(relays[1]).toMatchObject({ name: 'backup', port: stack.backupSink?.port });
  });

  it('refuses a backup relay beside POSTDATE_RELAYS', async () => {
    const config = loadConfig(
      {
        POSTDATE_RELAYS: JSON.stringify([
          { name: 'x', host: '127.0.0.1', port: 2525, secure: false, require_tls: false },
        ]),
      },
      'local',
    );
    await expect(
      startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true, backupRelay: {} }),
    ).rejects.toThrow(ConfigError);
  });
});
