import type { Readable } from 'node:stream';
import nodemailer, { type SendMailOptions, type SMTPPoolSentMessageInfo, type Transporter } from 'nodemailer';
import { classifySmtpError } from '../core/classifySmtpError.js';
import type { Mailer, OutgoingEmail, RejectedRecipient, SendOutcome } from '../ports/Mailer.js';
import type { SmtpCredentialsSource } from './smtpCredentials.js';

/**
 * The SMTP relay through one nodemailer pooled transport per warm container (DESIGN §5), created
 * lazily on the first send with the credentials of the moment.
 *
 * nodemailer reports a connection that broke after the final dot exactly like one that broke before
 * MAIL FROM (ECONNECTION / ETIMEDOUT, command CONN, no reply). Only the sender can see the difference,
 * so this adapter watches the message stream nodemailer hands to the connection: the stream is read
 * only after the relay answered DATA with 354, and it ends when the whole body has been handed over,
 * right before nodemailer writes the final dot. A failure without a reply after that point is
 * `ambiguous` (the relay may have accepted the message); before it, `transient`.
 */

/** Every SMTP timeout, set explicitly: nodemailer's socket default (10 min) outlives any Lambda. */
export interface SmtpTimeouts {
  readonly connectionMs: number;
  readonly greetingMs: number;
  /** Inactivity on an open connection, including the wait for the reply after the final dot. */
  readonly socketMs: number;
  readonly dnsMs: number;
  /**
   * The whole attempt, queueing for a pooled connection included: past it the send is aborted (its
   * connection closed), so the outcome is always written before the function times out, even
   * against a relay that trickles its replies, which no inactivity timeout notices.
   */
  readonly attemptMs: number;
}

/**
 * Defaults that fit the sender's 60 s timeout (lib/queueLayout.ts SENDER_TIMEOUT_SECONDS): one
 * attempt that hits every limit in turn still ends before the function does, and the lease
 * (POSTDATE_LEASE_SECONDS, default 120 s) outlives both.
 */
export const DEFAULT_SMTP_TIMEOUTS: SmtpTimeouts = {
  connectionMs: 10_000,
  greetingMs: 10_000,
  socketMs: 20_000,
  dnsMs: 5_000,
  attemptMs: 40_000,
};

export interface NodemailerMailerOptions {
  readonly host: string;
  readonly port: number;
  /** TLS from the first byte (port 465). */
  readonly secure: boolean;
  /** Insist on STARTTLS when not `secure` (SMTP_REQUIRE_TLS). */
  readonly requireTls: boolean;
  /** The right side of `Message-ID: <{id}@{domain}>` (POSTDATE_MESSAGE_ID_DOMAIN). */
  readonly messageIdDomain: string;
  readonly credentials: SmtpCredentialsSource;
  /** Pooled connections; keep it at least the sender's per-batch concurrency. Default 4. */
  readonly maxConnections?: number;
  readonly timeouts?: Partial<SmtpTimeouts>;
  /** Monotonic milliseconds, for durations. */
  readonly now?: () => number;
}

/** Headers the sender sets itself; a caller's header of the same name is dropped, never merged. */
const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'message-id',
  'x-postdate-id',
  'from',
  'sender',
  'to',
  'cc',
  'bcc',
  'reply-to',
  'subject',
  'date',
  'return-path',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
]);

/** Where the adapter finds its per-attempt tracker inside nodemailer's copy of the mail data. */
const ATTEMPT_FIELD = 'postdateAttempt';

interface AttemptTracker {
  bodySent: boolean;
}

type PoolTransporter = Transporter<SMTPPoolSentMessageInfo>;

export class NodemailerMailer implements Mailer {
  private transporter: Promise<PoolTransporter> | undefined;
  private readonly trackers = new Map<string, AttemptTracker>();
  private attemptCounter = 0;
  private readonly timeouts: SmtpTimeouts;
  private readonly now: () => number;

  constructor(private readonly options: NodemailerMailerOptions) {
    this.timeouts = { ...DEFAULT_SMTP_TIMEOUTS, ...options.timeouts };
    this.now = options.now ?? (() => performance.now());
  }

  async send(email: OutgoingEmail): Promise<SendOutcome> {
    const started = this.now();
    const attempt = `a${++this.attemptCounter}`;
    const tracker: AttemptTracker = { bodySent: false };
    this.trackers.set(attempt, tracker);
    try {
      const transporter = await this.transport();
      const info = await transporter.sendMail(this.mailOptions(email, attempt));
      return {
        delivered: true,
        reply: typeof info.response === 'string' ? info.response : null,
        accepted: (info.accepted ?? []).map(String),
        rejected: rejectedRecipients(info),
        durationMs: Math.round(this.now() - started),
      };
    } catch (error) {
      const failure = classifySmtpError(error, { bodySent: tracker.bodySent });
      if (failure.class === 'config') this.reset();
      return {
        delivered: false,
        failure,
        reply: replyText(error),
        durationMs: Math.round(this.now() - started),
      };
    } finally {
      this.trackers.delete(attempt);
    }
  }

  async close(): Promise<void> {
    const pending = this.transporter;
    this.transporter = undefined;
    if (pending === undefined) return;
    try {
      (await pending).close();
    } catch {
      // A transport that never came up has nothing to close.
    }
  }

  /** Drops the transport and the cached login after a config-class failure (e.g. a rotated secret). */
  private reset(): void {
    this.options.credentials.invalidate();
    void this.close();
  }

  private transport(): Promise<PoolTransporter> {
    if (this.transporter === undefined) {
      const created = this.createTransport();
      this.transporter = created;
      created.catch(() => {
        if (this.transporter === created) this.transporter = undefined;
      });
    }
    return this.transporter;
  }

  private async createTransport(): Promise<PoolTransporter> {
    const credentials = await this.options.credentials.get();
    const transporter = nodemailer.createTransport({
      pool: true,
      maxConnections: this.options.maxConnections ?? 4,
      maxMessages: 100,
      host: this.options.host,
      port: this.options.port,
      secure: this.options.secure,
      requireTLS: !this.options.secure && this.options.requireTls,
      auth: credentials ? { user: credentials.username, pass: credentials.password } : undefined,
      connectionTimeout: this.timeouts.connectionMs,
      greetingTimeout: this.timeouts.greetingMs,
      socketTimeout: this.timeouts.socketMs,
      dnsTimeout: this.timeouts.dnsMs,
      // Nothing a caller wrote may make nodemailer read a file or fetch a URL.
      disableFileAccess: true,
      disableUrlAccess: true,
      logger: false,
      debug: false,
    });
    transporter.use('stream', (mail, done) => {
      const key = (mail.data as Record<string, unknown>)[ATTEMPT_FIELD];
      const tracker = typeof key === 'string' ? this.trackers.get(key) : undefined;
      if (tracker !== undefined) {
        mail.message.processFunc((input: Readable) => {
          // 'end' fires once the connection has read the whole body, i.e. after 354 and right
          // before the final dot: from here on a missing reply is ambiguous.
          input.once('end', () => {
            tracker.bodySent = true;
          });
          return input;
        });
      }
      done();
    });
    return transporter;
  }

  private mailOptions(email: OutgoingEmail, attempt: string): SendMailOptions {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(email.headers)) {
      if (RESERVED_HEADERS.has(name.trim().toLowerCase())) continue;
      headers[name] = String(value).replace(/[\r\n]+/g, ' ');
    }
    headers['X-Postdate-Id'] = email.id;
    const options: SendMailOptions = {
      messageId: `<${email.id}@${this.options.messageIdDomain}>`,
      from: email.from,
      to: [...email.to],
      cc: email.cc.length > 0 ? [...email.cc] : undefined,
      bcc: email.bcc.length > 0 ? [...email.bcc] : undefined,
      replyTo: email.replyTo ?? undefined,
      subject: email.subject,
      // Strings only: never a path, href or stream a caller could point somewhere.
      text: email.text ?? undefined,
      html: email.html ?? undefined,
      headers,
      signal: AbortSignal.timeout(this.timeouts.attemptMs),
      disableFileAccess: true,
      disableUrlAccess: true,
    };
    return Object.assign(options, { [ATTEMPT_FIELD]: attempt });
  }
}

function rejectedRecipients(info: SMTPPoolSentMessageInfo): RejectedRecipient[] {
  const rejected = (info.rejected ?? []).map(String);
  if (rejected.length === 0) return [];
  const errors = info.rejectedErrors ?? [];
  return rejected.map((address) => {
    const error = errors.find((candidate) => (candidate as { recipient?: unknown }).recipient === address);
    const classified = error === undefined ? undefined : classifySmtpError(error);
    return {
      address,
      code: classified?.code ?? null,
      enhancedCode: classified?.enhancedCode ?? null,
    };
  });
}

function replyText(error: unknown): string | null {
  if (typeof error !== 'object' || error === null) return null;
  const response = (error as { response?: unknown }).response;
  return typeof response === 'string' && response !== '' ? response : null;
}
