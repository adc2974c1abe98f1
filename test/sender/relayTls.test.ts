import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodemailerMailer } from '../../lambdas/adapters/NodemailerMailer.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import { startSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { createSenderRig, FAST_SMTP_TIMEOUTS, type SenderWorld } from './senderHarness.js';

/**
 * A relay whose certificate we do not trust (issue 15 §4). smtp-server's built-in certificate is
 * self-signed (and by now expired): nodemailer, verifying certificates as it does by default,
 * refuses it with `ESOCKET` at `CONN` and Node's TLS code in `originalCode`. That is our setup to fix,
 * so it must be `config` (long backoff, alarmed), not a transient network failure that burns the
 * attempts in seconds.
 */

interface TlsRelay {
  readonly port: number;
  /** Mail bodies the relay received (none expected: TLS never comes up). */
  readonly received: string[];
  close(): Promise<void>;
}

/** A real TLS relay: TLS from the first byte (`secure`) or STARTTLS on a plain port. */
async function tlsRelay(mode: 'secure' | 'starttls'): Promise<TlsRelay> {
  const received: string[] = [];
  const server = new SMTPServer({
    secure: mode === 'secure',
    authOptional: true,
    logger: false,
    onData(stream, _session, callback) {
      stream.on('data', () => {});
      stream.on('end', () => {
        received.push('body');
        callback();
      });
    },
  });
  // The client hanging up mid-handshake is reported here; it is the point of the test.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function mailerFor(relay: TlsRelay, mode: 'secure' | 'starttls', invalidations: { count: number }) {
  return new NodemailerMailer({
    host: '127.0.0.1',
    port: relay.port,
    secure: mode === 'secure',
    requireTls: mode === 'starttls',
    messageIdDomain: 'mail.test',
    credentials: {
      ...environmentSmtpCredentials({ user: undefined, pass: undefined }),
      invalidate: () => {
        invalidations.count += 1;
      },
    },
    timeouts: FAST_SMTP_TIMEOUTS,
  });
}

const email = {
  id: '01JTESTTLS00000000000000000',
  from: 'ops@example.com',
  to: ['ada@example.org'],
  cc: [],
  bcc: [],
  replyTo: null,
  subject: 'TLS',
  text: 'hello',
  html: null,
  headers: {},
  envelope: ['ada@example.org'],
};

describe.each(['secure', 'starttls'] as const)(
  'NodemailerMailer against a %s relay with an untrusted certificate',
  (mode) => {
    let relay: TlsRelay;
    beforeAll(async () => {
      relay = await tlsRelay(mode);
    });
    afterAll(async () => {
      await relay.close();
    });

    it('files it under config with a certificate code, before the relay saw anything, and resets the pool', async () => {
      const invalidations = { count: 0 };
      const mailer = mailerFor(relay, mode, invalidations);
      try {
        const outcome = await mailer.send(email);
        expect(outcome.delivered).toBe(false);
        if (outcome.delivered) return;
        expect(outcome.failure.class).toBe('config');
        expect(outcome.failure.reason).toMatch(
          /TLS certificate is not trusted \((CERT_HAS_EXPIRED|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)\)/,
        );
        expect(outcome.failure.origin).toBe('outage');
        // A config failure before the transaction resets the pool and drops the cached login.
        expect(invalidations.count).toBe(1);
        expect(relay.received).toEqual([]);
      } finally {
        await mailer.close();
      }
    });
  },
);

describe('the sender with a relay whose certificate is not trusted', () => {
  let relay: TlsRelay;
  let world: SenderWorld;
  beforeAll(async () => {
    relay = await tlsRelay('secure');
    const [{ tableName, streamArn }, smtp] = await Promise.all([freshTable('sender-tls'), startSmtpServer()]);
    const mailer = mailerFor(relay, 'secure', { count: 0 });
    world = {
      tableName,
      streamArn,
      documents: documentClient(),
      // Only for the rig's bookkeeping; the mailer talks to the TLS relay.
      smtp,
      mailer,
      async close() {
        await mailer.close();
        await smtp.close();
      },
    };
  });
  afterAll(async () => {
    await world.close();
    await relay.close();
  });

  it('records class config (the long backoff and the ConfigErrors metric), no attempt counted', async () => {
    const rig = await createSenderRig(world, { settings: { retryBaseSeconds: 1, retryCapSeconds: 2 } });
    const message = await rig.putMessage();
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toHaveLength(1);
    const state = await rig.state(message.id);
    expect(state.status).toBe('retrying');
    expect(state.last_error).toMatchObject({ class: 'config' });
    // No attempt, still retrying: the last error only, no history entry (decision 0175).
    expect(state.history).toEqual([]);
    expect(state.attempts).toBe(0);
    expect(rig.metrics.of('ConfigErrors')).toBe(1);
    expect(relay.received).toEqual([]);
  });
});
