import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { monotonicFactory } from 'ulid';
import { type LocalPart, listenAs } from '../localEnv.js';
import { decodeEncodedWords, readHeaders } from './mailHeaders.js';

/** What the sink knows about one received message. */
export interface ReceivedMailSummary {
  /** The sink's own id (a ULID: sorts by arrival). */
  readonly id: string;
  readonly receivedAt: string;
  readonly envelope: { readonly from: string | null; readonly to: readonly string[] };
  /** The user name the client authenticated with, when it did. */
  readonly authUser: string | null;
  readonly subject: string | null;
  readonly messageId: string | null;
  readonly postdateId: string | null;
  readonly size: number;
}

export interface ReceivedMail extends ReceivedMailSummary {
  readonly raw: Buffer;
}

export interface SmtpSink {
  readonly host: string;
  readonly port: number;
  /** Every message received so far, oldest first (including those reloaded from the data dir). */
  messages(): readonly ReceivedMail[];
  message(id: string): ReceivedMail | undefined;
  /** Forgets every message (and deletes the stored .eml files). */
  clear(): void;
  stop(): Promise<void>;
}

export interface StartSmtpSinkOptions {
  readonly port: number;
  readonly host?: string;
  /**
   * The part of the local stack this is, whose variable a taken port's PortInUseError names; unset
   * (the backup relay's, a bench's), the listen's own error is kept.
   */
  readonly part?: LocalPart;
  /** When set, each message is also written to `{dataDir}/{id}.eml` and reloaded on the next start. */
  readonly dataDir?: string;
  /** Largest message accepted (SIZE extension); larger ones get 552. Default 25 MiB. */
  readonly maxBytes?: number;
}

const DEFAULT_MAX_BYTES = 25 * 1024 * 1024;

/**
 * A local SMTP server that accepts every message (any AUTH or none, no TLS) and keeps it for the
 * mail viewer and the tests. It never relays anything anywhere.
 * @throws PortInUseError when the port is taken and `part` is given.
 */
export async function startSmtpSink(options: StartSmtpSinkOptions): Promise<SmtpSink> {
  const host = options.host ?? '127.0.0.1';
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const nextId = monotonicFactory();
  const store = options.dataDir ? mailStore(options.dataDir) : undefined;
  const received: ReceivedMail[] = store ? store.load() : [];

  const server = new SMTPServer({
    name: 'postdate-sink.local',
    banner: 'Postdate local SMTP sink (nothing is relayed)',
    size: maxBytes,
    authOptional: true,
    allowInsecureAuth: true,
    // Locally the sender runs with SMTP_REQUIRE_TLS=false; offering STARTTLS with a self-signed
    // certificate would only make nodemailer's opportunistic upgrade fail.
    disabledCommands: ['STARTTLS'],
    logger: false,
    // The sender keeps pooled connections open; stopping must not wait the default 30 s for them.
    closeTimeout: 500,
    // Greet at once, as a submission relay does: smtp-server otherwise holds every new session 100 ms
    // to catch clients that talk too soon (an inbound MX's defence; patched in, patches/), which made
    // each session a sender opens (one per 120 s or 100 messages) 100 ms late (decision 0150).
    earlyTalkerDelay: 0,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username ?? 'anonymous' });
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', (error: Error) => callback(error));
      stream.on('end', () => {
        if (stream.sizeExceeded) {
          callback(
            Object.assign(new Error('Message exceeds the fixed maximum message size'), { responseCode: 552 }),
          );
          return;
        }
        const mail = describeMail(nextId(), Buffer.concat(chunks), session);
        received.push(mail);
        store?.save(mail);
        callback(null, `Message queued as ${mail.id}`);
      });
    },
  });

  server.on('error', () => {
    // A client that misbehaves must not bring the sink down; smtp-server already answered it. (The
    // listen's own error, which smtp-server passes on here too, is listenAs's.)
  });
  const port = await listenAs(options.part, server.server, options.port, host);

  return {
    host,
    port,
    messages: () => [...received],
    message: (id) => received.find((mail) => mail.id === id),
    clear() {
      received.length = 0;
      store?.clear();
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function describeMail(id: string, raw: Buffer, session: SMTPServerSession): ReceivedMail {
  const headers = readHeaders(raw);
  const header = (name: string) => {
    const value = headers.get(name);
    return value === undefined ? null : decodeEncodedWords(value);
  };
  const from = session.envelope.mailFrom;
  return {
    id,
    receivedAt: new Date().toISOString(),
    envelope: {
      from: from === false ? null : from.address,
      to: session.envelope.rcptTo.map((recipient) => recipient.address),
    },
    authUser: typeof session.user === 'string' ? session.user : null,
    subject: header('subject'),
    messageId: header('message-id'),
    postdateId: header('x-postdate-id'),
    size: raw.length,
    raw,
  };
}

/** `.eml` (the raw source, as received) plus a `.json` with the envelope, per message. */
function mailStore(dir: string) {
  mkdirSync(dir, { recursive: true });
  return {
    load(): ReceivedMail[] {
      const mails: ReceivedMail[] = [];
      for (const file of readdirSync(dir)
        .filter((name) => name.endsWith('.json'))
        .sort()) {
        try {
          const summary = JSON.parse(readFileSync(join(dir, file), 'utf8')) as ReceivedMailSummary;
          const raw = readFileSync(join(dir, `${summary.id}.eml`));
          mails.push({ ...summary, raw });
        } catch {
          // A half-written pair (crash mid-write) is skipped, not fatal.
        }
      }
      return mails;
    },
    save(mail: ReceivedMail) {
      const { raw, ...summary } = mail;
      writeFileSync(join(dir, `${mail.id}.eml`), raw);
      writeFileSync(join(dir, `${mail.id}.json`), `${JSON.stringify(summary, null, 2)}\n`);
    },
    clear() {
      for (const file of readdirSync(dir)) {
        if (file.endsWith('.eml') || file.endsWith('.json')) {
          rmSync(join(dir, file), { force: true });
        }
      }
    },
  };
}
