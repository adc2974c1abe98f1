import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from 'smtp-server';

/**
 * A real SMTP server (npm `smtp-server`) on a free loopback port whose behaviour each test scripts:
 * accept, answer any 4xx/5xx at MAIL FROM, RCPT TO or after the final dot, reject AUTH (535), stall
 * (never answer) at the greeting, at RCPT TO or after the final dot, answer 250 only after a delay
 * (a slow relay), or drop the connection after the final dot without replying. It records every
 * message body it received, with its Message-ID, and every transaction with the behaviour it applied.
 *
 * Used by the sender's tests and the chaos run (chaos/, which records the relay's side of every
 * transaction with it); it lives in local/ so that nothing outside test/ imports from test/. Unlike
 * smtpSink.ts (a relay that accepts everything, for the local stack), it is scripted per transaction.
 */

/** An SMTP reply to send instead of the normal one; put the enhanced code first in `message`. */
export interface SmtpReply {
  readonly code: number;
  /** e.g. "5.1.1 User unknown"; the server sends `{code} {message}`. */
  readonly message: string;
}

/** What the server does for one mail transaction (one message sent over a connection). */
export interface SmtpBehaviour {
  /** Never send the greeting on the connection that carries this transaction. */
  readonly stallGreeting?: boolean;
  /** Refuse MAIL FROM with this reply. */
  readonly mailFrom?: SmtpReply;
  /** Refuse RCPT TO: every recipient (a reply), some (a function returning a reply or undefined), or stall. */
  readonly rcptTo?: SmtpReply | ((address: string) => SmtpReply | undefined) | 'stall';
  /**
   * After the final dot: `accept` (250, the default), an error reply, `drop` (close the connection
   * without a reply), `stall` (never reply) or `{ acceptAfterMs }` (250, that long after the dot:
   * content scanning, tarpitting).
   */
  readonly afterData?: 'accept' | SmtpReply | 'drop' | 'stall' | SlowAccept;
  /**
   * The text of the 250 reply to the final dot when the message is accepted, as a relay words it
   * (e.g. "2.0.0 Ok: queued as 224B824BD40"; the server sends `250 {text}`). @default ACCEPT_REPLY
   */
  readonly acceptReply?: string;
  /** A name for this behaviour, kept with the transaction (e.g. the fault script's kind). */
  readonly label?: string;
}

/** Answer 250 to the final dot, but only this long after it. */
export interface SlowAccept {
  readonly acceptAfterMs: number;
}

export const ACCEPT: SmtpBehaviour = {};

/** The server's 250 text after the final dot unless a behaviour names another (Postfix's shape). */
export const ACCEPT_REPLY = 'OK: queued as test';

/** One message body the server received in full (the client sent the final dot). */
export interface ReceivedMessage {
  readonly messageId: string | null;
  readonly postdateId: string | null;
  readonly from: string | null;
  readonly to: readonly string[];
  readonly raw: string;
  /** What the server did after the final dot. `dropped` and `stalled` mean the client got no reply. */
  readonly outcome: 'accepted' | 'refused' | 'dropped' | 'stalled';
  /** The client's port of the connection that carried it. */
  readonly remotePort?: number;
  /** The behaviour's `label`, if it had one. */
  readonly label?: string;
  /** When the server had read the final dot (epoch ms). */
  readonly receivedAtMs?: number;
}

/** One mail transaction (a MAIL FROM, or a connection whose greeting was stalled) and what the server did. */
export interface TransactionRecord {
  readonly remotePort: number | undefined;
  readonly label: string | undefined;
  readonly startedAtMs: number;
  /** Set once the server read the body in full (the final dot). */
  readonly received?: ReceivedMessage;
}

/** One SMTP session (a client connection), as the server saw it. */
export interface SessionRecord {
  readonly remotePort: number;
  readonly openedAtMs: number;
  /** Mail transactions (MAIL FROM) on it. */
  readonly transactions: number;
  /** The client sent QUIT on it. */
  readonly quit: boolean;
  /** The connection has closed. */
  readonly closed: boolean;
}

export interface TestSmtpServer {
  readonly host: string;
  readonly port: number;
  /** Every session (client connection), in the order they opened. */
  readonly sessions: readonly SessionRecord[];
  /** Every message body received in full, in order. */
  readonly received: readonly ReceivedMessage[];
  /** Received messages the server answered with 250 (or dropped/stalled: it may count as delivered). */
  deliveries(): readonly ReceivedMessage[];
  /** AUTH attempts, with whether they succeeded. */
  readonly authAttempts: readonly { readonly username: string; readonly ok: boolean }[];
  /** Transactions started (MAIL FROM commands received). */
  readonly transactions: number;
  /** Every transaction started, in order, with the behaviour's label and the body once received. */
  readonly transactionLog: readonly TransactionRecord[];
  /**
   * Scripts the next transactions: the first behaviour applies to the next MAIL FROM, the second to
   * the one after, and so on; the last one repeats. `script()` with nothing means accept everything.
   */
  script(...behaviours: SmtpBehaviour[]): void;
  /** Closes every open client connection from the server's side (a relay that ends idle sessions). */
  disconnectAll(): void;
  close(): Promise<void>;
}

export interface StartSmtpServerOptions {
  /** When set, AUTH is required and only these credentials pass; anything else gets 535. */
  readonly credentials?: { readonly username: string; readonly password: string };
  /** The loopback port to listen on (a relay back on its own port after an outage); any free one unless set. */
  readonly port?: number;
}

export async function startSmtpServer(options: StartSmtpServerOptions = {}): Promise<TestSmtpServer> {
  const received: ReceivedMessage[] = [];
  const transactionLog: { -readonly [K in keyof TransactionRecord]: TransactionRecord[K] }[] = [];
  const sessionTransaction = new Map<string, (typeof transactionLog)[number]>();
  const timers = new Set<NodeJS.Timeout>();
  const authAttempts: { username: string; ok: boolean }[] = [];
  let behaviours: SmtpBehaviour[] = [ACCEPT];
  let next = 0;
  let transactions = 0;
  const sockets = new Map<number, Socket>();
  const sessions: { -readonly [K in keyof SessionRecord]: SessionRecord[K] }[] = [];
  /** The behaviour chosen for each open session (at connect for greeting stalls, else at MAIL FROM). */
  const sessionBehaviour = new Map<string, SmtpBehaviour>();

  const peek = (): SmtpBehaviour => behaviours[Math.min(next, behaviours.length - 1)] ?? ACCEPT;
  const take = (): SmtpBehaviour => {
    const behaviour = peek();
    next += 1;
    return behaviour;
  };
  const behaviourOf = (session: SMTPServerSession): SmtpBehaviour =>
    sessionBehaviour.get(session.id) ?? ACCEPT;

  const credentials = options.credentials;
  const server = new SMTPServer({
    secure: false,
    disabledCommands: credentials ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    authOptional: credentials === undefined,
    allowInsecureAuth: true,
    closeTimeout: 50,
    logger: false,
    onConnect(session, callback) {
      if (peek().stallGreeting) {
        const behaviour = take();
        sessionBehaviour.set(session.id, behaviour);
        transactionLog.push({
          remotePort: session.remotePort,
          label: behaviour.label,
          startedAtMs: Date.now(),
        });
        transactions += 1;
        return; // never greet
      }
      callback();
    },
    onAuth(auth, _session, callback) {
      const ok =
        credentials !== undefined &&
        auth.username === credentials.username &&
        auth.password === credentials.password;
      authAttempts.push({ username: auth.username ?? '', ok });
      if (!ok)
        return callback(replyError({ code: 535, message: '5.7.8 Authentication credentials invalid' }));
      callback(null, { user: auth.username });
    },
    onMailFrom(_address, session, callback) {
      transactions += 1;
      const connection = sessions.find(
        (record) => record.remotePort === session.remotePort && !record.closed,
      );
      if (connection) connection.transactions += 1;
      const behaviour = take();
      sessionBehaviour.set(session.id, behaviour);
      const record = { remotePort: session.remotePort, label: behaviour.label, startedAtMs: Date.now() };
      transactionLog.push(record);
      sessionTransaction.set(session.id, record);
      if (behaviour.mailFrom) return callback(replyError(behaviour.mailFrom));
      callback();
    },
    onRcptTo(address: SMTPServerAddress, session, callback) {
      const rule = behaviourOf(session).rcptTo;
      if (rule === 'stall') return; // never answer
      const reply = typeof rule === 'function' ? rule(address.address) : rule;
      if (reply) return callback(replyError(reply));
      callback();
    },
    onData(stream: Readable, session, callback) {
      const behaviour = behaviourOf(session);
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const after = behaviour.afterData ?? 'accept';
        const outcome =
          after === 'accept' || isSlowAccept(after)
            ? 'accepted'
            : after === 'drop'
              ? 'dropped'
              : after === 'stall'
                ? 'stalled'
                : 'refused';
        const message: ReceivedMessage = {
          messageId: header(raw, 'Message-ID'),
          postdateId: header(raw, 'X-Postdate-Id'),
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          raw,
          outcome,
          remotePort: session.remotePort,
          ...(behaviour.label === undefined ? {} : { label: behaviour.label }),
          receivedAtMs: Date.now(),
        };
        received.push(message);
        const record = sessionTransaction.get(session.id);
        if (record) record.received = message;
        const acceptReply = behaviour.acceptReply ?? ACCEPT_REPLY;
        if (after === 'accept') return callback(null, acceptReply);
        if (isSlowAccept(after)) {
          const timer = setTimeout(() => {
            timers.delete(timer);
            callback(null, acceptReply);
          }, after.acceptAfterMs);
          timers.add(timer);
          return;
        }
        if (after === 'stall') return; // never reply
        if (after === 'drop') {
          sockets.get(session.remotePort)?.destroy();
          return;
        }
        callback(replyError(after));
      });
    },
  });
  server.on('error', () => {
    // A client that vanished mid-session (the tests do this on purpose) is not a server failure.
  });
  server.server.on('connection', (socket: Socket) => {
    const port = socket.remotePort;
    if (port === undefined) return;
    sockets.set(port, socket);
    const record = { remotePort: port, openedAtMs: Date.now(), transactions: 0, quit: false, closed: false };
    sessions.push(record);
    // Commands are lines; QUIT is one outside a message body (the tests' bodies have no such line).
    socket.on('data', (chunk: Buffer) => {
      if (/(^|\n)QUIT\r?\n/i.test(chunk.toString('latin1'))) record.quit = true;
    });
    socket.once('close', () => {
      record.closed = true;
      sockets.delete(port);
    });
  });

  const host = '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;

  return {
    host,
    port,
    sessions,
    received,
    deliveries: () => received.filter((message) => message.outcome !== 'refused'),
    authAttempts,
    get transactions() {
      return transactions;
    },
    transactionLog,
    script(...scripted: SmtpBehaviour[]) {
      behaviours = scripted.length > 0 ? scripted : [ACCEPT];
      next = 0;
    },
    disconnectAll() {
      for (const socket of sockets.values()) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        for (const socket of sockets.values()) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function isSlowAccept(after: SmtpBehaviour['afterData']): after is SlowAccept {
  return typeof after === 'object' && 'acceptAfterMs' in after;
}

function replyError(reply: SmtpReply): Error & { responseCode: number } {
  return Object.assign(new Error(reply.message), { responseCode: reply.code });
}

/** The first value of a header in a raw message (unfolded), or null. */
function header(raw: string, name: string): string | null {
  const head = raw.split(/\r?\n\r?\n/, 1)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const pattern = new RegExp(`^${name}:\\s*(.*)$`, 'im');
  return pattern.exec(unfolded)?.[1]?.trim() ?? null;
}
