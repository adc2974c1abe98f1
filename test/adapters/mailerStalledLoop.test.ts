import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { NodemailerMailer } from '../../lambdas/adapters/NodemailerMailer.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import type { OutgoingEmail } from '../../lambdas/ports/Mailer.js';

/**
 * DESIGN §5, "Never out of time mid-send": a stalled event loop is never taken for a silent relay —
 * a reply already received is read before a timeout is declared. The relay (a real smtp-server in
 * this process) answers 250 to the final dot at once, and right after writing it the test blocks
 * the event loop (synchronous CPU work, as an 11 s template render in another copy did) for longer
 * than the reply limit. When the loop runs again the reply timer is overdue and the 250 sits unread
 * in the socket: the 250 must win. Taking it for a timeout would make the attempt ambiguous and the
 * message would be sent twice.
 */

const REPLY_LIMIT_MS = 1000;
const STALL_MS = 2500;

function busyWait(milliseconds: number): void {
  const until = Date.now() + milliseconds;
  while (Date.now() < until) {
    // The stall: nothing else on this thread runs, neither timers nor socket reads.
  }
}

/** A relay that accepts every message and, right after its 250 to the final dot, stalls the loop. */
async function stallingRelay(): Promise<{
  host: string;
  port: number;
  stalls: number;
  close(): Promise<void>;
}> {
  const relay = { host: '127.0.0.1', port: 0, stalls: 0, close: async () => {} };
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, _session, callback) {
      stream.resume();
      stream.once('end', () => {
        callback(null, 'Ok: queued as stalled');
        // The 250 is written to the socket; the next turn of the loop is the stalled one.
        setImmediate(() => {
          relay.stalls += 1;
          busyWait(STALL_MS);
        });
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  relay.port = (server.server.address() as AddressInfo).port;
  relay.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return relay;
}

const email: OutgoingEmail = {
  id: '01JTESTSTALLEDLOOP00000000',
  from: 'ops@example.com',
  to: ['ada@example.org'],
  cc: [],
  bcc: [],
  replyTo: null,
  subject: 'Stalled loop',
  text: 'hello',
  html: null,
  headers: {},
  envelope: ['ada@example.org'],
};

describe('NodemailerMailer with a stalled event loop', () => {
  let closeAll: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closeAll) await close();
    closeAll = [];
  });

  it('reads the 250 that arrived during the stall before it declares the reply overdue: delivered, not ambiguous', async () => {
    const relay = await stallingRelay();
    const mailer = new NodemailerMailer({
      host: relay.host,
      port: relay.port,
      secure: false,
      requireTls: false,
      messageIdDomain: 'mail.test',
      credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
      timeouts: {
        connectionMs: 5000,
        greetingMs: 5000,
        dnsMs: 1000,
        preDotMs: 5000,
        replyMs: REPLY_LIMIT_MS,
      },
    });
    closeAll = [() => mailer.close(), () => relay.close()];
    // The reply to the dot is waited for until endsBy, about the reply limit: shorter than the stall.
    const outcome = await mailer.send(email, { endsBy: Date.now() + REPLY_LIMIT_MS });
    expect(relay.stalls).toBe(1);
    expect(outcome.delivered ? 'delivered' : outcome.failure.class).toBe('delivered');
    expect(outcome.delivered && outcome.reply).toMatch(/^250 .*queued as stalled/);
  });
});
