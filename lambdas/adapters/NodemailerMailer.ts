import { PassThrough, Readable } from 'node:stream';
import addressparser from 'nodemailer/lib/addressparser';
import MailComposer, { type MailComposerOptions } from 'nodemailer/lib/mail-composer';
import SMTPConnection, { type SMTPConnectionSendInfo } from 'nodemailer/lib/smtp-connection';
import { asciiDomain } from '../core/addresses.js';
import { sentContentType } from '../core/attachments.js';
import { classifySmtpError, FAILURE_ORIGIN } from '../core/classifySmtpError.js';
import { CONFIG_SETTINGS } from '../core/configSpec.js';
import { isReservedHeader } from '../core/headerSafety.js';
import { isRelayControlHeader } from '../core/relayControlHeaders.js';
import { MAX_REPLY_WAIT_MS, preDotBudgetMs, replyDeadline, type SendTiming } from '../core/sendTiming.js';
import { suppressionKey } from '../core/suppressions.js';
import type {
  Mailer,
  OutgoingAttachment,
  OutgoingEmail,
  RecipientRefusal,
  SendLimits,
  SendOutcome,
} from '../ports/Mailer.js';
import type { SmtpCredentials, SmtpCredentialsSource } from '../ports/SmtpCredentialsSource.js';
import { type SmtpSession, SmtpSessionPool, untilAborted } from './smtpSessionPool.js';

/**
 * The SMTP relay through pooled sessions per warm container (DESIGN §5): nodemailer composes the
 * message (MailComposer) and speaks SMTP (SMTPConnection); the sessions are ours
 * (smtpSessionPool.ts), so that a transient refusal retires them, they age out and count their
 * messages, and they end with QUIT — nodemailer's own pool does none of the three.
 *
 * nodemailer reports a connection that broke after the final dot exactly like one that broke before
 * MAIL FROM (ECONNECTION / ETIMEDOUT, command CONN, no reply). Only the sender can see the difference,
 * so this adapter watches the message stream it hands to the connection: the stream is read only
 * after the relay answered DATA with 354, and it ends when the whole body has been handed over,
 * right before the final dot. A failure without a reply after that point is `ambiguous` (the relay
 * may have accepted the message); before it, `transient`.
 */

/**
 * Every SMTP timeout, set explicitly (nodemailer's socket default of 10 minutes outlives any Lambda).
 * The phase before the final dot and the wait for its reply have separate limits: a relay that
 * scans content may take minutes to answer the dot, and giving up there duplicates mail (the
 * attempt becomes ambiguous); RFC 5321 §4.5.3.2.6 gives that reply ten minutes.
 */
export interface SmtpTimeouts {
  readonly connectionMs: number;
  readonly greetingMs: number;
  readonly dnsMs: number;
  /**
   * The whole phase before the final dot, queueing for a pooled connection included: past it the
   * send is aborted (its connection closed), even against a relay that trickles its replies.
   */
  readonly preDotMs: number;
  /**
   * The reply to the final dot is waited for this long after the phase before it when the caller
   * gives no `endsBy`; with one, until `endsBy` (the sender starts a transaction only when that
   * leaves at least this long after the phase before the dot; docs/decisions/0128).
   */
  readonly replyMs: number;
}

/** The defaults of DESIGN §8: POSTDATE_SMTP_TIMEOUT_SECONDS = 20, POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS = 120. */
export const DEFAULT_SMTP_TIMEOUTS: SmtpTimeouts = smtpTimeoutsOf({
  smtpTimeoutSeconds: 20,
  smtpReplyTimeoutSeconds: 120,
});

/** The adapter's timeouts from the configured timing (lambdas/core/sendTiming.ts). */
export function smtpTimeoutsOf(
  timing: Pick<SendTiming, 'smtpTimeoutSeconds' | 'smtpReplyTimeoutSeconds'>,
): SmtpTimeouts {
  const stepMs = timing.smtpTimeoutSeconds * 1000;
  return {
    connectionMs: stepMs,
    greetingMs: stepMs,
    dnsMs: Math.min(5000, stepMs),
    preDotMs: preDotBudgetMs(timing),
    replyMs: timing.smtpReplyTimeoutSeconds * 1000,
  };
}

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
  /** Pooled sessions; keep it at least the sender's per-batch concurrency. Default 4. */
  readonly maxConnections?: number;
  /** Messages one session carries before QUIT (POSTDATE_SMTP_SESSION_MAX_MESSAGES). Default 100. */
  readonly maxMessagesPerSession?: number;
  /** How long a session is reused after it opened (POSTDATE_SMTP_SESSION_MAX_AGE_SECONDS). Default 120 s. */
  readonly maxSessionAgeMs?: number;
  readonly timeouts?: Partial<SmtpTimeouts>;
  /** Monotonic milliseconds, for durations and session ages. */
  readonly now?: () => number;
}

/** The defaults of POSTDATE_SMTP_SESSION_MAX_MESSAGES and POSTDATE_SMTP_SESSION_MAX_AGE_SECONDS. */
export const DEFAULT_SESSION_LIMITS = {
  maxMessages: CONFIG_SETTINGS.smtpSessionMaxMessages.aws,
  maxAgeMs: CONFIG_SETTINGS.smtpSessionMaxAgeSeconds.aws * 1000,
} as const;

interface AttemptTracker {
  bodySent: boolean;
  /** One of the attempt's own limits ended it (not the relay, not the network). */
  timedOut: boolean;
}

/** The failure of a send on a session, with what the session is good for afterwards. */
interface SessionFailure {
  readonly error: unknown;
  /** Not a byte of the message was read: nothing of it reached the relay on this session. */
  readonly unread: boolean;
}

export class NodemailerMailer implements Mailer {
  private sessions: SmtpSessionPool;
  private readonly timeouts: SmtpTimeouts;
  private readonly now: () => number;

  constructor(private readonly options: NodemailerMailerOptions) {
    this.timeouts = { ...DEFAULT_SMTP_TIMEOUTS, ...options.timeouts };
    this.now = options.now ?? (() => performance.now());
    this.sessions = this.newPool();
  }

  async send(email: OutgoingEmail, limits?: SendLimits): Promise<SendOutcome> {
    const started = this.now();
    const abort = new AbortController();
    const endsBy = limits?.endsBy ?? Date.now() + this.timeouts.preDotMs + this.timeouts.replyMs;
    const tracker: AttemptTracker = { bodySent: false, timedOut: false };
    let finished = false;
    // Before the dot: the whole phase has its own limit. After it: wait as long as the invocation
    // allows. A limit that fires is only declared once what already sits in the socket has been
    // read: after a stalled event loop Node runs overdue timers before it reads the sockets, and a
    // 250 that arrived during the stall must win over the timer (DESIGN §5).
    const timeOut = () =>
      afterPendingReads(() => {
        if (finished) return;
        tracker.timedOut = true;
        abort.abort();
      });
    let timer = setTimeout(timeOut, this.timeouts.preDotMs);
    const onBodySent = () => {
      tracker.bodySent = true;
      clearTimeout(timer);
      const dotSentAt = Date.now();
      timer = setTimeout(timeOut, replyDeadline(dotSentAt, endsBy) - dotSentAt);
    };
    const beforeRelay = { bodySent: false, beforeTransaction: true } as const;
    try {
      let credentials: SmtpCredentials | undefined;
      try {
        // Reading the login counts inside the phase before the dot: a hanging read ends the attempt.
        credentials = await untilAborted(this.options.credentials.get(), abort.signal);
      } catch (error) {
        if (!tracker.timedOut) return this.failed(error, beforeRelay, [], started);
        // The hanging read is not kept: the next attempt reads again.
        this.options.credentials.invalidate();
        return this.failed(attemptTimeout(error), beforeRelay, [], started);
      }
      const envelope = envelopeOf(email.envelope);
      const smtpEnvelope = {
        from: envelopeAddress(email.from),
        // Only the pending recipients in RCPT TO; the headers show everyone, as on the first attempt.
        // A mailbox named more than once (to, cc, bcc) gets one RCPT TO, as nodemailer's own envelope
        // would give it, and so one copy; its reply counts for each place (refusalsOf). Its first
        // spelling goes; one mailbox is what the suppression list calls one (decision 0237).
        to: envelope
          .filter((recipient, index) => envelope.findIndex((other) => other.key === recipient.key) === index)
          .map((recipient) => recipient.address),
      };
      // A reused session the relay closed while it sat idle fails before a byte of the message is
      // read (without a reply, or with the relay's 421 as it closed it): that message goes out on a
      // fresh session, once, within the same attempt (docs/decisions/0123).
      for (let round = 0; ; round++) {
        let session: SmtpSession;
        try {
          session = await this.sessions.acquire(abort.signal, () => this.openSession(credentials));
        } catch (thrown) {
          const error = tracker.timedOut ? attemptTimeout(thrown) : thrown;
          // Connect, greeting, TLS and login: all before MAIL FROM.
          return this.failed(error, beforeRelay, [], started);
        }
        const reused = session.messages > 0;
        const message = this.compose(email, onBodySent);
        session.messages += 1;
        // nodemailer records each RCPT TO refusal on this object as the relay answers (its own
        // envelope for the transaction), but puts them on a failure only when every recipient was
        // refused: after a reply to the dot, a dropped connection or a timeout, they are read here
        // (decision 0314). A fresh object for each transaction, so no other's replies are ever read.
        const transaction: TransactionEnvelope = { from: smtpEnvelope.from, to: [...smtpEnvelope.to] };
        try {
          const info = await untilAborted(sendOn(session, transaction, message), abort.signal);
          const refused = refusalsOf(info.rejectedErrors, envelope);
          // A recipient deferred with a 4xx: its retry must meet a session opened after this one.
          this.afterTransaction(session, refused.some((refusal) => !refusal.permanent) ? 'transient' : 'ok');
          return {
            delivered: true,
            reply: typeof info.response === 'string' ? info.response : null,
            refused,
            durationMs: Math.round(this.now() - started),
          };
        } catch (thrown) {
          const failure: SessionFailure = { error: thrown, unread: !message.readableDidRead };
          // The message went to a ready session: MAIL FROM is on its way, and a reply or the
          // message's own stream failing is this message's outcome, whatever nodemailer calls it.
          const context = { bodySent: tracker.bodySent, transactionStarted: true };
          // A refused MAIL FROM opened no transaction: what a pipelined RCPT TO got after it (a 503
          // "need MAIL command") is no reply about its recipient (decision 0315).
          const refused = refusedAtMailFrom(thrown)
            ? []
            : refusalsOf(rejectedErrorsOf(thrown) ?? transaction.rejectedErrors, envelope);
          if (tracker.timedOut || abort.signal.aborted) {
            session.pool.discard(session);
            const error = attemptTimeout(thrown);
            return this.failed(error, context, refused, started);
          }
          if (reused && round === 0 && failure.unread && closedWhileIdle(thrown)) {
            session.pool.discard(session);
            continue;
          }
          await this.afterFailedTransaction(session, thrown);
          return this.failed(thrown, context, refused, started);
        }
      }
    } finally {
      finished = true;
      clearTimeout(timer);
    }
  }

  private failed(
    error: unknown,
    context: {
      readonly bodySent: boolean;
      readonly beforeTransaction?: boolean;
      readonly transactionStarted?: boolean;
    },
    refused: readonly RecipientRefusal[],
    started: number,
  ): SendOutcome {
    const failure = classifySmtpError(error, {
      bodySent: context.bodySent,
      beforeTransaction: context.beforeTransaction === true,
      transactionStarted: context.transactionStarted === true,
    });
    // Only a refused login or a broken TLS setup says the pooled sessions themselves are wrong; a
    // refusal of one sender (5.7.x at MAIL FROM) must not close the pool for every tenant.
    if (failure.class === 'config' && failure.origin === 'outage') this.reset();
    return {
      delivered: false,
      failure,
      reply: replyText(error),
      refused,
      durationMs: Math.round(this.now() - started),
    };
  }

  /** After a message the relay accepted: the session carries the next one, unless a 4xx came with it. */
  private afterTransaction(session: SmtpSession, outcome: 'ok' | 'transient'): void {
    if (outcome === 'transient') {
      this.sessions.renew();
      session.pool.release(session, false);
      return;
    }
    session.pool.release(session, true);
  }

  /**
   * After a refused or failed transaction. A 4xx (at MAIL FROM, RCPT TO or after DATA): QUIT, and
   * every session opened before it retired. A 5xx for this message: RSET and carry on (the session is
   * fine). Anything else (a broken connection, a reply that never came): close it without QUIT.
   */
  private async afterFailedTransaction(session: SmtpSession, error: unknown): Promise<void> {
    const code = replyCodeOf(error);
    if (code !== undefined && code >= 400 && code < 500) {
      this.sessions.renew();
      session.pool.release(session, false);
      return;
    }
    if (code !== undefined && code >= 500 && !session.broken) {
      // Reset before the outcome is reported, so the next message finds the session ready.
      const reset = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), Math.min(this.timeouts.connectionMs, 5000));
        session.connection.reset((resetError) => {
          clearTimeout(timer);
          resolve(!resetError);
        });
      });
      if (reset) session.pool.release(session, true);
      else session.pool.discard(session);
      return;
    }
    session.pool.discard(session);
  }

  async close(): Promise<void> {
    this.sessions.close();
  }

  /** After a config-class failure (e.g. a rotated secret): the cached login and every session go. */
  private reset(): void {
    this.options.credentials.invalidate();
    this.sessions.close();
    this.sessions = this.newPool();
  }

  private newPool(): SmtpSessionPool {
    return new SmtpSessionPool(
      {
        maxSessions: this.options.maxConnections ?? 4,
        maxMessages: this.options.maxMessagesPerSession ?? DEFAULT_SESSION_LIMITS.maxMessages,
        maxAgeMs: this.options.maxSessionAgeMs ?? DEFAULT_SESSION_LIMITS.maxAgeMs,
      },
      this.now,
    );
  }

  /** Connect, greeting, EHLO, STARTTLS when required, login: a session ready for MAIL FROM. */
  private openSession(credentials: SmtpCredentials | undefined): Promise<SMTPConnection> {
    const connection = new SMTPConnection({
      host: this.options.host,
      port: this.options.port,
      secure: this.options.secure,
      requireTLS: !this.options.secure && this.options.requireTls,
      connectionTimeout: this.timeouts.connectionMs,
      greetingTimeout: this.timeouts.greetingMs,
      // Inactivity never ends an attempt first: the attempt's own limits do (before the dot, and
      // the reply to it), and the reply to the final dot may take minutes.
      socketTimeout: MAX_REPLY_WAIT_MS,
      dnsTimeout: this.timeouts.dnsMs,
      logger: false,
      debug: false,
    });
    return new Promise<SMTPConnection>((resolve, reject) => {
      let settled = false;
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        connection.close();
        reject(error);
      };
      connection.once('error', fail);
      connection.once('end', () =>
        fail(
          Object.assign(new Error('the connection closed before the session was ready'), {
            code: 'ECONNECTION',
            command: 'CONN',
          }),
        ),
      );
      const ready = () => {
        if (settled) return;
        settled = true;
        connection.removeListener('error', fail);
        resolve(connection);
      };
      connection.connect((error) => {
        if (error) return fail(error);
        if (credentials === undefined || !connection.allowsAuth) return ready();
        connection.login(
          { credentials: { user: credentials.username, pass: credentials.password } },
          (loginError) => (loginError ? fail(loginError) : ready()),
        );
      });
    });
  }

  /** The message as nodemailer composes it; `onBodySent` fires once the whole body is handed over. */
  private compose(email: OutgoingEmail, onBodySent: () => void): Readable {
    const stream = composeMessage(email, this.options.messageIdDomain);
    // 'end' fires once the connection has read the whole body, i.e. after 354 and right before the
    // final dot: from here on a missing reply is ambiguous.
    stream.once('end', onBodySent);
    return stream;
  }
}

/**
 * The message as the relay receives it — `Message-ID`, `X-Postdate-Id`, the caller's headers, the
 * attachments streamed as they are read. The mailer sends it; the local stack composes a test
 * message the same way to show it in its viewer (local/smtp/simulatedMailViewer.ts).
 */
export function composeMessage(email: OutgoingEmail, messageIdDomain: string): Readable {
  return new MailComposer(mailOptionsOf(email, messageIdDomain)).compile().createReadStream();
}

function mailOptionsOf(email: OutgoingEmail, messageIdDomain: string): MailComposerOptions {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(email.headers)) {
    // Set by the sender itself: a caller's header of the same name is dropped, never merged.
    if (isReservedHeader(name.trim())) continue;
    // Refused at enqueue; dropped here too, for what the outbox helper or an older enqueue stored.
    if (isRelayControlHeader(name.trim())) continue;
    headers[name] = String(value).replace(/[\r\n]+/g, ' ');
  }
  headers['X-Postdate-Id'] = email.id;
  return {
    messageId: `<${email.id}@${messageIdDomain}>`,
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
    ...(email.attachments && email.attachments.length > 0
      ? { attachments: email.attachments.map(attachmentPart) }
      : {}),
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/** An attachment as a MIME part: base64, its bytes streamed from the store as the relay takes them. */
function attachmentPart(attachment: OutgoingAttachment) {
  return {
    filename: attachment.filename,
    contentType: sentContentType(attachment.contentType),
    contentDisposition: 'attachment' as const,
    contentTransferEncoding: 'base64' as const,
    content: openedWhenRead(attachment.open),
  };
}

/**
 * A stream that opens its source on the first read: a composed message whose body is never read (a
 * stale pooled session, a refused MAIL FROM) opens nothing. An error opening or reading the source
 * fails the stream, and so the attempt, before the final dot.
 */
function openedWhenRead(open: () => Promise<AsyncIterable<Uint8Array>>): Readable {
  let opened = false;
  const through = new PassThrough();
  const read = through._read.bind(through);
  through._read = (size: number) => {
    if (!opened) {
      opened = true;
      open().then(
        (chunks) => {
          const source = Readable.from(chunks, { objectMode: false });
          source.once('error', (error) => through.destroy(error));
          through.once('close', () => source.destroy());
          source.pipe(through);
        },
        (error: unknown) => through.destroy(error instanceof Error ? error : new Error(String(error))),
      );
    }
    read(size);
  };
  return through;
}

/**
 * Runs `declare` once the event loop has read what is waiting on its sockets: two turns of the
 * check phase, each after a poll phase that reads every socket with data already received.
 */
function afterPendingReads(declare: () => void): void {
  setImmediate(() => setImmediate(declare));
}

/** The envelope handed to nodemailer for one transaction; it adds the refusals at RCPT TO as they come. */
interface TransactionEnvelope {
  readonly from: string;
  readonly to: string[];
  readonly rejectedErrors?: unknown[];
}

/** One message on one session: MAIL FROM, RCPT TO, DATA, the body and the final reply. */
function sendOn(
  session: SmtpSession,
  envelope: TransactionEnvelope,
  message: Readable,
): Promise<SMTPConnectionSendInfo> {
  return new Promise((resolve, reject) => {
    session.connection.send(envelope, message, (error, info) => {
      if (error) reject(error);
      else if (info === undefined) reject(new Error('the SMTP connection reported no result'));
      else resolve(info);
    });
  });
}

/**
 * Whether a send that failed on a reused session before a byte of the message was read shows the
 * relay had closed that session while it sat idle: no reply (the socket was gone), or a 421 read as
 * the reply to MAIL FROM — a relay that ends an idle session says 421 as it closes, and when that
 * crosses our MAIL FROM on the wire it answers it (decision 0123). SES's throttling words are not
 * an idle close: they are the fleet's pressure, and a fresh session would only add to it.
 */
function closedWhileIdle(error: unknown): boolean {
  const code = replyCodeOf(error);
  if (code === undefined) return true;
  if (code !== 421) return false;
  const command = (error as { command?: unknown }).command;
  return command === 'MAIL FROM' && classifySmtpError(error).origin !== FAILURE_ORIGIN.throttle;
}

/** The relay's reply code on an error, when the relay replied. */
function replyCodeOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { responseCode?: unknown }).responseCode;
  return typeof code === 'number' ? code : undefined;
}

/** One envelope recipient: the bare address nodemailer puts in RCPT TO, and the key it reports back. */
interface EnvelopeRecipient {
  readonly address: string;
  readonly key: string;
}

function envelopeOf(recipients: readonly string[]): EnvelopeRecipient[] {
  return recipients.map((recipient) => {
    const address = envelopeAddress(recipient);
    return { address, key: addressKey(address) };
  });
}

/**
 * The bare address of a mailbox as MAIL FROM and RCPT TO carry it: its domain as A-labels
 * (`ada@bücher.example` → `ada@xn--bcher-kva.example`), as the composed headers give it. The API
 * refuses non-ASCII local parts, so the envelope is ASCII and needs no SMTPUTF8 (RFC 6531), which
 * nodemailer would otherwise ask for, or send UTF-8 without it to a relay that does not offer it
 * (RFC 5321 §2.3.5 wants a domain in ASCII; decision 0234). `asciiDomain` is the one reading of it,
 * which the simulator and the suppression list share (decision 0321).
 */
function envelopeAddress(mailbox: string): string {
  const address = addressparser(mailbox, { flatten: true })[0]?.address ?? mailbox;
  const at = address.lastIndexOf('@');
  if (at < 0) return address;
  const domain = address.slice(at + 1);
  return `${address.slice(0, at)}@${asciiDomain(domain)}`;
}

/**
 * Which mailbox an address is, as nodemailer reports it back: the suppression list's key (local part
 * in any case, the domain in Unicode or A-labels alike; DESIGN §12), the one rule for "the same
 * mailbox" (decision 0237). What does not parse is compared lower-cased.
 */
function addressKey(address: string): string {
  return suppressionKey(address) ?? address.toLowerCase();
}

/** The error an attempt ended by its own limit is classified as: a timeout on the connection. */
function attemptTimeout(cause: unknown): Error {
  return Object.assign(new Error('the SMTP attempt timed out', { cause }), {
    code: 'ETIMEDOUT',
    command: 'CONN',
  });
}

/** The relay refused MAIL FROM (nodemailer files that reply, and a close in answer to it, under `MAIL FROM`). */
function refusedAtMailFrom(error: unknown): boolean {
  return (
    typeof error === 'object' && error !== null && (error as { command?: unknown }).command === 'MAIL FROM'
  );
}

function rejectedErrorsOf(error: unknown): unknown[] | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const list = (error as { rejectedErrors?: unknown }).rejectedErrors;
  return Array.isArray(list) ? list : undefined;
}

/** nodemailer's per-recipient RCPT TO errors as refusals by envelope position, each place of a mailbox. */
function refusalsOf(
  errors: readonly unknown[] | undefined,
  envelope: readonly EnvelopeRecipient[],
): RecipientRefusal[] {
  const refusals: RecipientRefusal[] = [];
  for (const error of errors ?? []) {
    const recipient = (error as { recipient?: unknown }).recipient;
    if (typeof recipient !== 'string') continue;
    const key = addressKey(recipient);
    const classified = classifySmtpError(error);
    envelope.forEach((candidate, index) => {
      // Every place of a mailbox named more than once: it had one RCPT TO.
      if (candidate.key !== key || refusals.some((refusal) => refusal.index === index)) return;
      refusals.push({
        index,
        code: classified.code,
        enhancedCode: classified.enhancedCode,
        permanent: classified.class === 'permanent',
        hardBounce: classified.hardBounce,
        ...(classified.throttle === undefined ? {} : { throttle: classified.throttle }),
        reply: replyText(error),
        failure: { class: classified.class, reason: classified.reason },
      });
    });
  }
  return refusals;
}

function replyText(error: unknown): string | null {
  if (typeof error !== 'object' || error === null) return null;
  const response = (error as { response?: unknown }).response;
  return typeof response === 'string' && response !== '' ? response : null;
}
